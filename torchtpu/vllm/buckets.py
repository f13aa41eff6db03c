"""Token-count buckets: each step's scheduled token count is padded up to a bucket, so a serving run traces and
compiles one set of programs per bucket (and per request-count bucket) instead of one per batch size.

Buckets are powers of two from `min_tokens` (16) to `max_num_batched_tokens` (the production TPU plugin's rule),
or the sizes given by `--additional-config '{"token_buckets": [16, 64, 256]}'` (the largest is raised to
`max_num_batched_tokens` if smaller). The request count and the KV pages a step reads are padded to powers of two
by the attention backend (torchtpu/vllm/attention.py) for the same reason.
"""

from __future__ import annotations

import bisect
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vllm.config import VllmConfig

log = logging.getLogger("vllm.torchtpu")  # under vLLM's logger: its handler and level

MIN_TOKENS = 16
_buckets: list[int] = []


def pow2_at_least(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def make(max_tokens: int, sizes: list[int] | None = None, min_tokens: int = MIN_TOKENS) -> list[int]:
    """The sorted bucket list: `sizes` (checked) or powers of two from `min_tokens`, ending at `max_tokens`."""
    if max_tokens < 1:
        raise ValueError(f"max_num_batched_tokens must be >= 1, got {max_tokens}")
    if sizes is not None:
        if not sizes or any(not isinstance(s, int) or isinstance(s, bool) or s < 1 for s in sizes):
            raise ValueError(f"token_buckets must be a non-empty list of positive integers, got {sizes!r}")
        out = sorted(set(sizes))
    else:
        out, b = [], min(pow2_at_least(min_tokens), pow2_at_least(max_tokens))
        while b < max_tokens:
            out.append(b)
            b *= 2
    out = [b for b in out if b < max_tokens] + [max_tokens]
    return out


def configure(vllm_config: VllmConfig) -> list[int]:
    """Reads the buckets from the config (additional_config "token_buckets"), stores and logs them."""
    global _buckets
    extra: dict[str, Any] = vllm_config.additional_config or {}
    max_tokens = vllm_config.scheduler_config.max_num_batched_tokens
    _buckets = make(max_tokens, extra.get("token_buckets"), int(extra.get("min_bucket", MIN_TOKENS)))
    log.info("torchtpu.vllm: %d token-count buckets %s (max_num_batched_tokens=%d)", len(_buckets), _buckets,
             max_tokens)
    return _buckets


def buckets() -> list[int]:
    return list(_buckets)


def pad(num_tokens: int, bucket_list: list[int] | None = None) -> int:
    """The smallest bucket >= num_tokens (num_tokens itself beyond the largest bucket)."""
    bl = _buckets if bucket_list is None else bucket_list
    i = bisect.bisect_left(bl, num_tokens)
    return bl[i] if i < len(bl) else num_tokens
