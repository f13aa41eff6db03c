"""Mixture of experts on "tpu" (torchtpu/vllm/moe.py): the method vLLM instantiates for unquantized MoE layers
under our platform routes and runs the experts in torch ops. Its layer equals Hugging Face's Mixtral and Qwen3-MoE
sparse blocks on CPU; `LLM(model=dir).generate` of tiny Mixtral- and Qwen3-MoE-style models gives vLLM's CPU
platform's and HF's greedy tokens; unsupported routing is refused by name."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from vllm.model_executor.layers.fused_moe.activation import MoEActivation

import torchtpu
from torchtpu.vllm import harness, moe, tiny

PROMPTS = ["hello world the cat sat on a red house and the dog",
           "one two three four five six seven eight nine ten red blue green",
           "the king"]
MAX_TOKENS = 8


def _hf_block(family: str, experts: int, top_k: int, hidden: int = 64, inter: int = 96) -> torch.nn.Module:
    """Hugging Face's sparse MoE block: Mixtral (top-k renormalized) or Qwen3-MoE (norm_topk_prob False)."""
    if family == "mixtral":
        from transformers import MixtralConfig
        from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock as Block

        cfg = MixtralConfig(hidden_size=hidden, intermediate_size=inter, num_local_experts=experts,
                            num_experts_per_tok=top_k)
    else:
        from transformers import Qwen3MoeConfig
        from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock as Block

        cfg = Qwen3MoeConfig(hidden_size=hidden, moe_intermediate_size=inter, num_experts=experts,
                             num_experts_per_tok=top_k, norm_topk_prob=False)
    torch.manual_seed(0)
    block = Block(cfg).eval()
    with torch.no_grad():
        for p in block.parameters():
            p.normal_(0.0, 0.2)
    return block


@pytest.mark.parametrize("family,experts,top_k,tokens",
                         [("mixtral", 4, 2, 16), ("mixtral", 8, 2, 5), ("mixtral", 3, 1, 7), ("qwen3_moe", 8, 2, 9)])
def test_layer_matches_hf_moe_block(family: str, experts: int, top_k: int, tokens: int) -> None:
    block = _hf_block(family, experts, top_k)
    x = torch.randn(tokens, 64)
    with torch.no_grad():
        want = block(x.unsqueeze(0)).squeeze(0)
        logits = torch.nn.functional.linear(x, block.gate.weight)
    dev = torch.device("tpu")
    with torchtpu.precision("HIGHEST"), torch.no_grad():
        weights, ids = moe.route(logits.to(dev), top_k, renormalize=family == "mixtral", scoring_func="softmax")
        got = moe.experts(x.to(dev), block.experts.gate_up_proj.to(dev), block.experts.down_proj.to(dev), weights,
                          ids, MoEActivation.SILU)
    assert got.device.type == "tpu"
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
    # the routing itself is HF's: same experts, same weights
    with torch.no_grad():
        _, hf_w, hf_ids = block.gate(x)
    assert torch.equal(ids.cpu(), hf_ids)
    torch.testing.assert_close(weights.cpu(), hf_w)


def test_unsupported_routing_and_activation_named() -> None:
    logits = torch.randn(4, 4)
    with pytest.raises(NotImplementedError, match=r"scoring_func='sqrtsoftplus' is not supported; supported: "
                                                   r"unquantized experts with softmax or sigmoid top-k routing"):
        moe.route(logits, 2, renormalize=True, scoring_func="sqrtsoftplus")
    w, ids = moe.route(logits, 2, renormalize=False, scoring_func="sigmoid")
    torch.testing.assert_close(w, torch.topk(logits.sigmoid(), 2).values)
    with pytest.raises(NotImplementedError, match=r"activation 'relu2' is not supported;.* activations silu, gelu, "
                                                   r"gelu_tanh"):
        moe.experts(torch.randn(4, 8), torch.randn(4, 6, 8), torch.randn(4, 8, 3), w, ids, MoEActivation.RELU2)


@pytest.mark.parametrize("field,value,named", [
    ("expert_map", torch.arange(4), r"expert parallelism \(expert_map\)"),
    ("use_grouped_topk", True, "grouped top-k routing"),
    ("e_score_correction_bias", torch.zeros(4), "e_score_correction_bias routing"),
    ("routed_scaling_factor", 2.5, "routed_scaling_factor=2.5")])
def test_unsupported_layer_routing_named(field: str, value: object, named: str) -> None:
    # the attributes vLLM's RoutedExperts gives the method, one of them set to what it cannot run
    layer = SimpleNamespace(expert_map=None, use_grouped_topk=False, custom_routing_function=None,
                            e_score_correction_bias=None, routing_sink=None, routed_scaling_factor=1.0)
    setattr(layer, field, value)
    with pytest.raises(NotImplementedError, match=f"torchtpu.vllm MoE: {named} is not supported"):
        moe.TpuUnquantizedFusedMoEMethod.apply_monolithic(None, layer, torch.randn(2, 8), torch.randn(2, 4))


def test_registered_over_vllm_method() -> None:
    from vllm.model_executor.custom_op import op_registry_oot
    from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import UnquantizedFusedMoEMethod

    moe.register()
    moe.register()  # idempotent
    assert op_registry_oot["UnquantizedFusedMoEMethod"] is moe.TpuUnquantizedFusedMoEMethod
    assert issubclass(moe.TpuUnquantizedFusedMoEMethod, UnquantizedFusedMoEMethod)


# ~60 s each (two vLLM engines): slow; the layer tests above check the MoE math in the CI step.
# mixtral_moe: 4 experts, top-2, renormalized; qwen3_moe: 8 experts, top-2 not renormalized, a dense MLP layer
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mixtral_moe", "qwen3_moe"])
def test_moe_greedy_matches_vllm_cpu_and_hf(tmp_path, kind: str) -> None:
    model = str(tiny.build(kind, tmp_path / kind))
    spec = {"model": model, "prompts": PROMPTS, "max_tokens": MAX_TOKENS}
    tpu = harness.run({**spec, "platform": "tpu"})
    cpu = harness.run({**spec, "platform": "cpu"})
    assert tpu["platform"] == "TpuPlatform" and cpu["platform"] == "CpuPlatform"
    assert tpu["tokens"] == cpu["tokens"]
    assert tpu["tokens"] == [harness.hf_greedy(model, p, MAX_TOKENS) for p in PROMPTS]
    assert all(len(t) == MAX_TOKENS for t in tpu["tokens"])
    assert tpu["sim"]["flops"] > 0
