"""Unquantized mixture-of-experts on "tpu": `TpuUnquantizedFusedMoEMethod`, registered over vLLM's
`UnquantizedFusedMoEMethod` through `CustomOp.register_oot` (vLLM's documented hook for an out-of-tree platform's
MoE), with the router and the experts written in torch ops.

vLLM 0.32 selects the "OOT" MoE backend for an out-of-tree platform and builds no kernel for it ("OOT handles
internally"); its router's top-k (`_moe_C.topk_softmax`) is a compiled CUDA/CPU kernel. So this method is
*monolithic*: vLLM's MoE runner hands it the router logits and it routes (softmax or sigmoid scores, top-k,
renormalize) and runs the experts itself. The experts run densely: every token through every expert as one
batched matmul per projection, weighted by a [tokens, experts] combine matrix that is zero off the chosen top-k.
Shapes depend only on the token bucket, never on the routing (no data-dependent gathers), at E/top_k times the
routed work (docs/serving.md, "Mixture of experts"). Routing features it does not implement are refused by name.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from vllm.model_executor.layers.fused_moe.activation import MoEActivation
from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import UnquantizedFusedMoEMethod

GATED = {MoEActivation.SILU: F.silu, MoEActivation.GELU: F.gelu,
         MoEActivation.GELU_TANH: lambda x: F.gelu(x, approximate="tanh")}
SCORING = ("softmax", "sigmoid")


def _refuse(what: str) -> NotImplementedError:
    return NotImplementedError(f"torchtpu.vllm MoE: {what} is not supported; supported: unquantized experts with "
                               f"softmax or sigmoid top-k routing (optionally renormalized), activations "
                               f"{', '.join(a.value for a in GATED)}, no expert parallelism")


def route(router_logits: torch.Tensor, top_k: int, renormalize: bool, scoring_func: str
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k routing in float32, as vLLM's `fused_topk` and Hugging Face Mixtral/Qwen-MoE do: scores, the top_k
    (weights, expert ids) per token, weights divided by their sum when `renormalize`."""
    if scoring_func not in SCORING:
        raise _refuse(f"scoring_func={scoring_func!r}")
    logits = router_logits.float()
    scores = logits.softmax(dim=-1) if scoring_func == "softmax" else logits.sigmoid()
    weights, ids = torch.topk(scores, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids


def experts(x: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, weights: torch.Tensor, ids: torch.Tensor,
            activation: MoEActivation, *, w13_bias: torch.Tensor | None = None, w2_bias: torch.Tensor | None = None,
            weight_on_input: bool = False) -> torch.Tensor:
    """sum_k weights[t, k] * expert_{ids[t, k]}(x[t]) for x [T, H], w13 [E, 2I, H] (gate rows then up rows, vLLM's
    layout), w2 [E, H, I]; with `weight_on_input` the weight scales the expert's input instead (top_k 1)."""
    if activation not in GATED:
        raise _refuse(f"activation {activation.value!r}")
    num_experts = w13.shape[0]
    onehot = (ids.unsqueeze(-1) == torch.arange(num_experts, device=ids.device)).to(weights.dtype)  # [T, K, E]
    combine = (onehot * weights.unsqueeze(-1)).sum(dim=1)  # [T, E], zero off the chosen experts
    if weight_on_input:
        xs = x.unsqueeze(0) * combine.t().unsqueeze(-1).to(x.dtype)  # [E, T, H]
        combine = onehot.sum(dim=1)
    else:
        xs = x.unsqueeze(0).expand(num_experts, -1, -1)
    h = torch.matmul(xs, w13.transpose(1, 2))  # [E, T, 2I]
    if w13_bias is not None:
        h = h + w13_bias.unsqueeze(1)
    gate, up = h.chunk(2, dim=-1)
    y = torch.matmul(GATED[activation](gate) * up, w2.transpose(1, 2))  # [E, T, H]
    if w2_bias is not None:
        y = y + w2_bias.unsqueeze(1)
    return (y * combine.t().unsqueeze(-1).to(y.dtype)).sum(dim=0)


class TpuUnquantizedFusedMoEMethod(UnquantizedFusedMoEMethod):
    """vLLM's unquantized MoE method with routing and experts in torch ops (module docstring)."""

    @property
    def is_monolithic(self) -> bool:
        return True

    def apply_monolithic(self, layer: Any, x: torch.Tensor, router_logits: torch.Tensor,
                         input_ids: torch.Tensor | None = None) -> torch.Tensor:
        if layer.expert_map is not None:
            raise _refuse("expert parallelism (expert_map)")
        if layer.use_grouped_topk:
            raise _refuse("grouped top-k routing")
        if layer.custom_routing_function is not None:
            raise _refuse(f"custom routing function {layer.custom_routing_function!r}")
        if layer.e_score_correction_bias is not None:
            raise _refuse("e_score_correction_bias routing")
        if layer.routing_sink is not None:
            raise _refuse("routing sinks")
        if layer.routed_scaling_factor not in (None, 1.0):
            raise _refuse(f"routed_scaling_factor={layer.routed_scaling_factor}")
        weights, ids = route(router_logits, layer.top_k, layer.renormalize, layer.scoring_func)
        return experts(x, layer.w13_weight, layer.w2_weight, weights, ids, layer.activation,
                       w13_bias=getattr(layer, "w13_bias", None) if self.moe.has_bias else None,
                       w2_bias=getattr(layer, "w2_bias", None) if self.moe.has_bias else None,
                       weight_on_input=layer.apply_router_weight_on_input)


def register() -> None:
    """Makes vLLM instantiate `TpuUnquantizedFusedMoEMethod` wherever it builds an `UnquantizedFusedMoEMethod`
    (idempotent: vLLM's registry refuses a second registration)."""
    from vllm.model_executor.custom_op import op_registry_oot

    if op_registry_oot.get("UnquantizedFusedMoEMethod") is not TpuUnquantizedFusedMoEMethod:
        UnquantizedFusedMoEMethod.register_oot(TpuUnquantizedFusedMoEMethod)
