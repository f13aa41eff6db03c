"""The paged attention backend vLLM uses on "tpu": KV pages in device memory, prefill and decode in one mixed batch,
GQA/MQA, sliding windows and logit soft-capping, written in torch ops that lower to the device's IR.

KV cache: one tensor per layer, logical [pages, kv_heads, page_tokens, 2 * head_dim] (K then V in the last axis),
stored pages-major ([pages, page_tokens, kv_heads, 2 * head_dim], vLLM's LBNHC layout) so a page is contiguous.
A step writes its new K/V at `slot_mapping` (padded tokens have slot -1 and are not written), then each request's
queries attend to its pages: the request count, query length and page count are padded to powers of two
(`metadata`), so a serving run traces a bounded set of shapes; padded queries and keys are masked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionImpl,
    AttentionMetadataBuilder,
    AttentionType,
    CommonAttentionMetadata,
    MultipleOf,
)
from vllm.v1.kv_cache_layout import KVCacheLayout

from torchtpu.vllm.buckets import pow2_at_least

# head dims the backend serves: multiples of 8 (sublane) up to 256, the largest production TPU kernels take
HEAD_SIZES = list(range(8, 257, 8))
DTYPES = (torch.bfloat16, torch.float32)


def check_supported(cfg: Any) -> None:
    """Raises naming what the model asks for and what is valid (called when vLLM selects the backend)."""
    if getattr(cfg, "use_mla", False) or getattr(cfg, "use_sparse", False):
        raise NotImplementedError("torchtpu.vllm has no MLA/sparse attention backend (DeepSeek-style models)")
    if getattr(cfg, "has_sink", False):
        raise NotImplementedError("torchtpu.vllm attention has no attention sinks")
    if cfg.head_size not in HEAD_SIZES:
        raise ValueError(f"torchtpu.vllm attention: head dim {cfg.head_size} is not supported; valid: multiples of "
                         "8 from 8 to 256")
    if cfg.dtype not in DTYPES:
        raise ValueError(f"torchtpu.vllm attention: dtype {cfg.dtype} is not supported; valid: "
                         f"{', '.join(map(str, DTYPES))}")
    if cfg.kv_cache_dtype not in (None, "auto"):
        raise ValueError(f"torchtpu.vllm attention: kv_cache_dtype {cfg.kv_cache_dtype!r} is not supported; "
                         "valid: 'auto' (the model's dtype)")
    if cfg.attn_type != AttentionType.DECODER:
        raise NotImplementedError(f"torchtpu.vllm attention serves decoder attention only, not {cfg.attn_type}")


class TpuAttentionBackend(AttentionBackend):
    forward_includes_kv_cache_update: bool = False
    supported_dtypes: ClassVar[list[torch.dtype]] = list(DTYPES)
    supported_kv_cache_dtypes: ClassVar[list[str]] = ["auto"]

    @staticmethod
    def get_name() -> str:
        return "CUSTOM"  # vLLM's slot for out-of-tree backends (registered by TpuPlatform.get_attn_backend_cls)

    @staticmethod
    def get_impl_cls() -> type[TpuAttentionImpl]:
        return TpuAttentionImpl

    @staticmethod
    def get_builder_cls() -> type[TpuAttentionMetadataBuilder]:
        return TpuAttentionMetadataBuilder

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec: Any = None) -> list[int | MultipleOf]:
        return [MultipleOf(8)]

    @classmethod
    def get_supported_head_sizes(cls) -> list[int]:
        return HEAD_SIZES

    @classmethod
    def supported_kv_cache_layouts(cls) -> tuple[KVCacheLayout, ...]:
        return (KVCacheLayout.LBNHC,)

    @classmethod
    def supports_sliding_window(cls) -> bool:
        return True

    @classmethod
    def supports_attn_type(cls, attn_type: str) -> bool:
        return attn_type == AttentionType.DECODER


@dataclass
class TpuAttentionMetadata:
    num_actual_tokens: int  # real (unpadded) tokens of the step
    num_reqs: int
    q_index: torch.Tensor  # [R, Q] int64: the flat token of request r's i-th query (0 where padded)
    q_pos: torch.Tensor  # [R, Q] int64: that query's position in its sequence (0 where padded)
    pages: torch.Tensor  # [R, P] int64: the request's KV pages (page 0 where padded; masked by position)
    out_index: torch.Tensor  # [num_actual_tokens] int64: each real token's row in the [R * Q] padded output
    slot_mapping: torch.Tensor  # [num_actual_tokens] int64: where each new token's K/V goes (page * page_tokens + i)


class TpuAttentionMetadataBuilder(AttentionMetadataBuilder[TpuAttentionMetadata]):
    def __init__(self, kv_cache_spec: Any, layer_names: list[str], vllm_config: Any, device: torch.device) -> None:
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)
        self.block_size = kv_cache_spec.block_size
        self.device = device

    def build(self, common_prefix_len: int, common_attn_metadata: CommonAttentionMetadata,
              fast_build: bool = False) -> TpuAttentionMetadata:
        m = common_attn_metadata
        qsl = m.query_start_loc_cpu.numpy().astype(np.int64)
        num_reqs = m.num_reqs
        qsl = qsl[:num_reqs + 1]
        n = int(qsl[-1])
        seq_lens = m.seq_lens[:num_reqs].cpu().numpy().astype(np.int64)
        q_lens = qsl[1:] - qsl[:-1]
        r_pad = pow2_at_least(num_reqs)
        q_pad = pow2_at_least(int(q_lens.max()) if num_reqs else 1)
        p_real = -(-int(seq_lens.max()) // self.block_size) if num_reqs else 1
        p_pad = pow2_at_least(max(p_real, 1))
        q_index = np.zeros((r_pad, q_pad), np.int64)
        q_pos = np.zeros((r_pad, q_pad), np.int64)
        out_index = np.empty(n, np.int64)
        for r in range(num_reqs):
            ql, start = int(q_lens[r]), int(qsl[r])
            q_index[r, :ql] = np.arange(start, start + ql)
            q_pos[r, :ql] = np.arange(seq_lens[r] - ql, seq_lens[r])
            out_index[start:start + ql] = r * q_pad + np.arange(ql)
        table = m.block_table_tensor[:num_reqs].cpu().numpy().astype(np.int64)
        pages = np.zeros((r_pad, p_pad), np.int64)
        width = min(p_real, table.shape[1])
        pages[:num_reqs, :width] = table[:, :width]

        def dev(a: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(a).to(self.device)

        return TpuAttentionMetadata(
            num_actual_tokens=n, num_reqs=num_reqs, q_index=dev(q_index), q_pos=dev(q_pos), pages=dev(pages),
            out_index=dev(out_index), slot_mapping=m.slot_mapping[:n].to(torch.int64))


class TpuAttentionImpl(AttentionImpl[TpuAttentionMetadata]):
    def __init__(self, num_heads: int, head_size: int, scale: float, num_kv_heads: int | None = None,
                 alibi_slopes: list[float] | None = None, sliding_window: int | None = None,
                 kv_cache_dtype: str = "auto", logits_soft_cap: float | None = None,
                 attn_type: str = AttentionType.DECODER, kv_sharing_target_layer_name: str | None = None,
                 **_: Any) -> None:
        if alibi_slopes is not None:
            raise NotImplementedError("torchtpu.vllm attention has no ALiBi")
        if attn_type != AttentionType.DECODER:
            raise NotImplementedError(f"torchtpu.vllm attention serves decoder attention only, not {attn_type}")
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"{num_heads} query heads do not split into {self.num_kv_heads} KV heads")
        self.group = self.num_heads // self.num_kv_heads
        self.sliding_window = sliding_window
        self.logits_soft_cap = logits_soft_cap
        self.kv_cache_dtype = kv_cache_dtype
        self.attn_type = attn_type
        self.kv_sharing_target_layer_name = kv_sharing_target_layer_name

    def _pages(self, kv_cache: torch.Tensor) -> torch.Tensor:
        """[pages * page_tokens, kv_heads, 2 * head_dim]: the cache as one row per token slot."""
        paged = kv_cache.transpose(1, 2)
        if not paged.is_contiguous():
            raise RuntimeError(f"KV cache layout is not pages-major (strides {tuple(kv_cache.stride())})")
        return paged.reshape(-1, self.num_kv_heads, 2 * self.head_size)

    def do_kv_cache_update(self, layer: Any, key: torch.Tensor, value: torch.Tensor, kv_cache: torch.Tensor,
                           slot_mapping: torch.Tensor) -> None:
        if self.kv_sharing_target_layer_name is not None:
            return
        slots = self._pages(kv_cache)
        keep = slot_mapping >= 0
        n = int(keep.sum().item())  # padded tokens (slot -1) trail the real ones
        kv = torch.cat([key[:n], value[:n]], dim=-1).to(slots.dtype)
        slots.index_copy_(0, slot_mapping[:n].to(torch.int64), kv)

    def forward(self, layer: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                kv_cache: torch.Tensor, attn_metadata: TpuAttentionMetadata | None, output: torch.Tensor,
                output_scale: torch.Tensor | None = None, output_block_scale: torch.Tensor | None = None
                ) -> torch.Tensor:
        if output_scale is not None or output_block_scale is not None:
            raise NotImplementedError("fused output quantization is not supported by torchtpu.vllm attention")
        if attn_metadata is None:  # profiling run: no KV cache yet
            return output.fill_(0)
        m = attn_metadata
        h, kvh, d, g = self.num_heads, self.num_kv_heads, self.head_size, self.group
        r, q_len = m.q_index.shape
        n = m.num_actual_tokens
        q = query.reshape(-1, h, d)[m.q_index.reshape(-1)]  # [R*Q, H, D]
        q = q.reshape(r, q_len, kvh, g, d).permute(0, 2, 3, 1, 4).reshape(r, kvh, g * q_len, d)
        slots = self._pages(kv_cache)
        block = slots.shape[0] // kv_cache.shape[0]
        p = m.pages.shape[1]
        kv = slots.reshape(-1, block, kvh, 2 * d)[m.pages.reshape(-1)]  # [R*P, page, KVH, 2D]
        kv = kv.reshape(r, p * block, kvh, 2 * d).permute(0, 2, 1, 3)  # [R, KVH, S, 2D]
        k, v = kv[..., :d], kv[..., d:]
        scores = torch.matmul(q, k.transpose(-1, -2)).float() * self.scale  # [R, KVH, G*Q, S]
        if self.logits_soft_cap:
            scores = torch.tanh(scores / self.logits_soft_cap) * self.logits_soft_cap
        key_pos = torch.arange(p * block, device=query.device)
        pos = m.q_pos[:, :, None]  # [R, Q, 1]
        allowed = key_pos[None, None, :] <= pos
        if self.sliding_window is not None:
            allowed = allowed & (key_pos[None, None, :] > pos - self.sliding_window)
        allowed = allowed[:, None, None, :, :].expand(r, kvh, g, q_len, p * block).reshape(r, kvh, g * q_len, -1)
        scores = scores.masked_fill(~allowed, float("-inf"))
        probs = torch.softmax(scores, dim=-1).to(v.dtype)
        out = torch.matmul(probs, v)  # [R, KVH, G*Q, D]
        out = out.reshape(r, kvh, g, q_len, d).permute(0, 3, 1, 2, 4).reshape(r * q_len, h * d)
        output = output.reshape(output.shape[0], -1)
        output[:n] = out[m.out_index].to(output.dtype)
        if output.shape[0] > n:
            output[n:] = 0
        return output
