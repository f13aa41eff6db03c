"""`torch.ops.torchtpu.ragged_paged_attention`: the operator serving code calls for paged attention on "tpu"
(torchtpu/vllm/attention.py), lowered to IR op `ragged_paged_attention` (drivers/ir_ragged_attention.py), the real
chip's ragged kernel, so the simulator charges that kernel's work: per request its query length x its context
and the KV pages it reads, not a padded batch.

    ragged_paged_attention(q [T, H, D], kv [slots, KVH, 2D], pages [R, P] int, q_lens int[], ctx_lens int[],
                           page_tokens, scale, sliding_window=0, soft_cap=0.0) -> [T, H, D]

Request r's queries are q's rows sum(q_lens[:r]) ... + q_lens[r] at positions ctx_lens[r] - q_lens[r] ...
ctx_lens[r] - 1; its keys and values are the cache rows of its pages (slot = page * page_tokens + i). Rows past
sum(q_lens) give zeros. The lengths and the other scalars are static: a program is traced per distinct set of
them (a step's lengths are host values of vLLM's scheduler).
"""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops import late_ops
from torchtpu.ops import prims as P
from torchtpu.ops.tracing import Sym

SCHEMA = ("ragged_paged_attention(Tensor q, Tensor kv, Tensor pages, int[] q_lens, int[] ctx_lens, int page_tokens, "
          "float scale, int sliding_window=0, float soft_cap=0.0) -> Tensor")
STATIC = ("q_lens", "ctx_lens", "page_tokens", "scale", "sliding_window", "soft_cap")

_lib = torch.library.Library("torchtpu", "FRAGMENT")
_lib.define(SCHEMA)


@torch.library.register_fake("torchtpu::ragged_paged_attention", lib=_lib)
def _fake(q: torch.Tensor, kv: torch.Tensor, pages: torch.Tensor, q_lens: list[int], ctx_lens: list[int],
          page_tokens: int, scale: float, sliding_window: int = 0, soft_cap: float = 0.0) -> torch.Tensor:
    return torch.empty_like(q)


@late_ops.late_op("torchtpu", "ragged_paged_attention", static=STATIC)
def ragged_paged_attention(q: Sym, kv: Sym, pages: Sym, q_lens: Any, ctx_lens: Any, page_tokens: int,
                           scale: float, sliding_window: int = 0, soft_cap: float = 0.0) -> Sym:
    from torchtpu.precision import current_precision

    return P.emit1("ragged_paged_attention", [q, kv, pages], q_lens=tuple(int(n) for n in q_lens),
                   ctx_lens=tuple(int(n) for n in ctx_lens), page_tokens=int(page_tokens), scale=float(scale),
                   sliding_window=int(sliding_window), soft_cap=float(soft_cap), precision=current_precision().name)


def register(kernel: Any) -> None:
    """Registers the PrivateUse1 kernel of the op above (registry.register_all calls this)."""
    late_ops.register("torchtpu")
