"""The paged attention backend vLLM uses on "tpu": KV pages in device memory, prefill and decode in one mixed batch,
GQA/MQA, sliding windows and logit soft-capping, written in torch ops that lower to the device's IR.

KV cache: one tensor per layer, logical [pages, kv_heads, page_tokens, 2 * head_dim] (K then V in the last axis),
stored pages-major ([pages, page_tokens, kv_heads, 2 * head_dim], vLLM's LBNHC layout) so a page is contiguous.
A step writes its new K/V at `slot_mapping` (padded tokens have slot -1 and are not written), then one
`torch.ops.torchtpu.ragged_paged_attention` (torchtpu/ops/paged_attention.py; IR op ragged_paged_attention, the
real chip's ragged kernel) attends each request's queries to its own pages. The per-request query and context
lengths are host values here (vLLM's scheduler) and travel as the op's static attributes, so the simulator
charges each request's q_len x context of work and the pages it reads, not a padded batch.
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
    q_lens: list[int]  # request r's query tokens this step (consecutive rows of the step's tokens)
    ctx_lens: list[int]  # request r's context after this step (its cached tokens plus the new ones)
    pages: torch.Tensor  # [R, P] int64: the requests' KV pages (R, P padded to powers of two; padding unread)
    slot_mapping: torch.Tensor  # [num_actual_tokens] int64: where each new token's K/V goes (page * page_tokens + i)


class TpuAttentionMetadataBuilder(AttentionMetadataBuilder[TpuAttentionMetadata]):
    def __init__(self, kv_cache_spec: Any, layer_names: list[str], vllm_config: Any, device: torch.device) -> None:
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)
        self.block_size = kv_cache_spec.block_size
        self.device = device

    def build(self, common_prefix_len: int, common_attn_metadata: CommonAttentionMetadata,
              fast_build: bool = False) -> TpuAttentionMetadata:
        m = common_attn_metadata
        num_reqs = m.num_reqs
        qsl = m.query_start_loc_cpu.numpy().astype(np.int64)[:num_reqs + 1]
        n = int(qsl[-1])
        seq_lens = m.seq_lens[:num_reqs].cpu().numpy().astype(np.int64)
        p_real = max(-(-int(seq_lens.max()) // self.block_size), 1) if num_reqs else 1
        table = m.block_table_tensor[:num_reqs].cpu().numpy().astype(np.int64)
        pages = np.zeros((pow2_at_least(max(num_reqs, 1)), pow2_at_least(p_real)), np.int64)
        width = min(p_real, table.shape[1])
        pages[:num_reqs, :width] = table[:, :width]
        return TpuAttentionMetadata(
            num_actual_tokens=n, num_reqs=num_reqs, q_lens=[int(x) for x in qsl[1:] - qsl[:-1]],
            ctx_lens=[int(x) for x in seq_lens], pages=torch.from_numpy(pages).to(self.device),
            slot_mapping=m.slot_mapping[:n].to(torch.int64))


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
        h, d = self.num_heads, self.head_size
        q = query.reshape(-1, h, d)
        out = torch.ops.torchtpu.ragged_paged_attention(
            q, self._pages(kv_cache), m.pages, m.q_lens, m.ctx_lens, kv_cache.shape[2], self.scale,
            self.sliding_window or 0, float(self.logits_soft_cap or 0.0))
        output = output.reshape(output.shape[0], -1)
        output.copy_(out.reshape(out.shape[0], -1))
        return output
