"""Mixture-of-experts layers of Hugging Face models (Mixtral, Qwen3-MoE, ...) on the grouped-matmul kernel.

`register()` adds the experts implementation "torchtpu_grouped_matmul" to transformers' `ExpertsInterface`
(its public registry); a model made with `experts_implementation="torchtpu_grouped_matmul"` (or
`config._experts_implementation`) then runs each experts block as transformers' grouped_mm path does (tokens
sorted by expert, gate-up projection, activation, down projection, weighted sum back in token order), with both
projections through `grouped_matmul` (examples/grouped_matmul.py). The zoo's models keep their default unless asked.
"""

from __future__ import annotations

import torch

from torchtpu.kernels.examples.grouped_matmul import grouped_matmul

NAME = "torchtpu_grouped_matmul"
BLOCK = 128  # row and column tile of the kernel, or the whole dimension when smaller


def _block(n: int) -> int:
    if n <= BLOCK:
        return n
    if n % BLOCK:
        raise ValueError(f"experts implementation {NAME}: a projection of width {n} is not a multiple of {BLOCK}; "
                         f"valid: widths up to {BLOCK} or multiples of it")
    return BLOCK


def _project(x: torch.Tensor, weight: torch.Tensor, sizes: torch.Tensor, transposed: bool) -> torch.Tensor:
    """x (S, K) sorted by expert, times each expert's (K, N) matrix; weight (E, N, K) unless `transposed`."""
    w = weight if transposed else weight.transpose(1, 2)
    rows = x.shape[0]
    bm = min(BLOCK, max(8, 1 << (rows - 1).bit_length()))
    padded = -(-rows // bm) * bm
    if padded != rows:
        x = torch.cat([x, x.new_zeros(padded - rows, x.shape[1])])
    return grouped_matmul(x, w.contiguous(), sizes, bm, _block(w.shape[-1]))[:rows]


def experts_forward(self: torch.nn.Module, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                    top_k_weights: torch.Tensor) -> torch.Tensor:
    """An experts block's forward on the grouped-matmul kernel (module docstring)."""
    if getattr(self, "has_bias", False) or getattr(self, "_is_expert_parallel", False) or \
            getattr(self, "has_post_expert_norm", False):
        raise NotImplementedError(f"experts implementation {NAME} runs experts without biases, expert "
                                  "parallelism or a post-expert norm; valid for this model: 'grouped_mm' or 'eager'")
    num_tokens, hidden = hidden_states.shape
    top_k = top_k_index.shape[-1]
    expert_ids = top_k_index.reshape(-1)
    expert_ids_sorted, perm = torch.sort(expert_ids, stable=True)
    x = hidden_states[perm // top_k]
    experts = torch.arange(self.num_experts, device=hidden_states.device)
    sizes = (expert_ids_sorted[None, :] == experts[:, None]).sum(1).to(torch.int32)
    transposed = getattr(self, "is_transposed", False)
    if getattr(self, "has_gate", True):
        out = self._apply_gate(_project(x, self.gate_up_proj, sizes, transposed))
    else:
        out = self.act_fn(_project(x, self.up_proj, sizes, transposed))
    out = _project(out, self.down_proj, sizes, transposed) * top_k_weights.reshape(-1)[perm].unsqueeze(-1)
    unsorted = torch.empty_like(out)
    unsorted[perm] = out
    return unsorted.view(num_tokens, top_k, hidden).sum(dim=1).to(hidden_states.dtype)


def register() -> str:
    """Registers the implementation with transformers (idempotent); its name."""
    from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS

    ALL_EXPERTS_FUNCTIONS.register(NAME, experts_forward)
    return NAME
