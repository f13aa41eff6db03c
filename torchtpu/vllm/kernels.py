"""Torch versions of the Triton kernels vLLM's V1 runner launches outside the model (Triton has no "tpu"
target), registered through vLLM's kernel dispatcher by `TpuPlatform.register_triton_kernel_overrides`."""

from __future__ import annotations

import torch


def compute_slot_mapping(num_tokens: int, max_num_tokens: int, query_start_loc: torch.Tensor,
                         positions: torch.Tensor, block_table: torch.Tensor, block_table_stride: int,
                         slot_mapping: torch.Tensor, KV_CACHE_BLOCK_SIZE: int, TOTAL_CP_WORLD_SIZE: int = 1,  # noqa: N803
                         TOTAL_CP_RANK: int = 0, CP_KV_CACHE_INTERLEAVE_SIZE: int = 1, PAD_ID: int = -1,  # noqa: N803
                         BLOCK_SIZE: int = 1024) -> None:  # noqa: N803 - the Triton kernel's parameter names
    """`block_table.ComputeSlotMappingKernel.kernel`: each scheduled token's KV slot (page * page_tokens +
    offset), PAD_ID for the padding up to max_num_tokens."""
    if TOTAL_CP_WORLD_SIZE != 1:
        raise NotImplementedError("context parallelism is not supported by torchtpu.vllm")
    slot_mapping[num_tokens:max_num_tokens] = PAD_ID
    if num_tokens == 0:
        return
    bs = KV_CACHE_BLOCK_SIZE
    tokens = torch.arange(num_tokens, device=positions.device, dtype=torch.int64)
    ends = query_start_loc[1:].to(torch.int64)
    req = torch.searchsorted(ends, tokens, right=True)
    pos = positions[:num_tokens].to(torch.int64)
    flat = block_table.reshape(-1)
    pages = flat[req * block_table_stride + torch.div(pos, bs, rounding_mode="floor")].to(torch.int64)
    slot_mapping[:num_tokens] = pages * bs + torch.remainder(pos, bs)


OVERRIDES = {"vllm.v1.worker.block_table.ComputeSlotMappingKernel.kernel": compute_slot_mapping}


def register() -> None:
    from vllm.triton_utils.dispatcher import register_kernels

    from torchtpu.vllm.compat import without_llvmlite

    with without_llvmlite():
        register_kernels(OVERRIDES)
