"""Rematerialisation (activation checkpointing) policies: what the backward pass recomputes and what is saved.

Names follow MaxText's `remat_policy`:
* `none`    - save everything, recompute nothing;
* `minimal` - save the outputs of the weight matmuls (`checkpoint_dots_with_no_batch_dims`), recompute the
  elementwise ops and the attention kernel (a custom call, not a weight dot);
* `save_qkv` - save the layer input and the q/k/v projections (the v6e Llama3.1-70B "custom" recipe,
  tpu-facts 4c), recompute attention, the output projection, the MLP input projections and elementwise ops;
* `save_attention` - `save_qkv` plus the attention output (MaxText custom policy with `context=device`, the
  v7x Llama3.1-70B recipes, tpu-recipes training/ironwood/llama3.1-70b): the attention kernel is not run again;
* `full`    - save only the layer input; recompute the forward, except the MLP down-projection whose output
  only feeds the next layer's (saved) input, so XLA dead-code-eliminates it.
With `offload=True` the saved tensors live in host memory (PCIe traffic instead of HBM capacity).
"""

from __future__ import annotations

__all__ = ["ALIASES", "POLICIES", "canonical", "recomputed_ops", "saved_widths"]

# Forward op names of one layer (see perfmodel.blocks); the MoE sublayer uses router/dispatch/experts_*.
_ELEMENTWISE = {"norm1", "rope", "residual1", "norm2", "act", "residual2", "router_softmax", "dispatch",
                "experts_act", "combine", "shared_act"}
_ATTENTION = {"attention"}

POLICIES: dict[str, set[str]] = {
    "none": set(),
    "minimal": _ELEMENTWISE | _ATTENTION,
    "save_qkv": _ELEMENTWISE | _ATTENTION | {"out", "mlp_in", "router", "experts_in", "shared_in", "a2a_dispatch"},
    "save_attention": _ELEMENTWISE | {"out", "mlp_in", "router", "experts_in", "shared_in", "a2a_dispatch"},
    "full": _ELEMENTWISE | _ATTENTION | {"qkv", "out", "mlp_in", "router", "experts_in", "shared_in",
                                         "a2a_dispatch"},
}
ALIASES = {"selective": "minimal", "custom": "save_qkv", "nothing_saveable": "full", "save_dots": "minimal",
           "minimal_offloaded": "minimal", "qkv_proj_offloaded": "save_qkv"}


def canonical(policy: str) -> str:
    """Canonical policy name (accepts MaxText aliases)."""
    p = ALIASES.get(policy, policy)
    if p not in POLICIES:
        raise ValueError(f"unknown remat policy {policy!r}; valid: {', '.join(POLICIES)} (aliases: "
                         f"{', '.join(ALIASES)})")
    return p


def recomputed_ops(policy: str) -> set[str]:
    """Names of the forward ops the backward pass runs again under `policy`."""
    return POLICIES[canonical(policy)]


def saved_widths(policy: str, *, d: int, q: int, kv: int, f_in: int, f: int, moe_in: int = 0, moe_f: int = 0,
                 moe: bool = False) -> tuple[float, float]:
    """(replicated-over-tp width, tp-sharded width) of the activations saved per token of one layer.

    d: d_model; q, kv: projection widths; f_in, f: MLP input-projection and hidden widths (dense); moe_in,
    moe_f: the same summed over the token's top_k experts (MoE layers). Widths with a model dimension d are
    returned first (sharded over tp only with sequence-parallel activations), head/hidden widths second.
    """
    p = canonical(policy)
    mlp_in, mlp_h = (moe_in, moe_f) if moe else (f_in, f)
    if p == "full":
        return float(d), 0.0
    if p == "save_qkv":
        return float(d), float(q + 2 * kv)
    if p == "save_attention":  # + the attention output (n_heads x v head dim, ~ q wide)
        return float(d), float(2 * q + 2 * kv)
    if p == "minimal":  # layer input and the dot outputs the backward reads: attention out-proj, q/k/v, MLP in
        return float(2 * d), float(q + 2 * kv + mlp_in)
    # none: every intermediate the backward reads
    return float(6 * d), float(q + 2 * kv + q + mlp_in + mlp_h)
