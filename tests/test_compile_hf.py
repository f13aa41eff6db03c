"""torch.compile(backend="tpu") on a Hugging Face model: forward, generate() with a static cache, training step."""

from __future__ import annotations

import pytest
import torch

import torchtpu

transformers = pytest.importorskip("transformers")


def _llama_pair():
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    cpu = transformers.LlamaForCausalLM(cfg)
    tpu = transformers.LlamaForCausalLM(cfg)
    tpu.load_state_dict(cpu.state_dict())
    return cpu, tpu.to("tpu")


def test_forward_and_static_cache_generate_compile_to_programs(tpu):
    torch._dynamo.reset()
    torchtpu.reset_stats()
    cpu, dev = _llama_pair()
    cpu.eval()
    dev.eval()
    ids = torch.randint(0, 128, (1, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad(), torchtpu.precision("HIGHEST"):
        logits = torch.compile(dev, backend="tpu")(ids.to(tpu), use_cache=False).logits
        torch.testing.assert_close(logits.cpu(), cpu(ids).logits, rtol=1e-4, atol=1e-5)
        expected = cpu.generate(ids, max_new_tokens=5, do_sample=False)
        dev.forward = torch.compile(dev.forward, backend="tpu")
        torchtpu.reset_stats()
        tokens = dev.generate(ids.to(tpu), max_new_tokens=5, do_sample=False, cache_implementation="static")
    assert tokens.cpu().tolist() == expected.tolist()
    stats = torchtpu.stats()["compile"]
    # the prefill and one decode program, replayed for each new token (the static cache keeps its shape)
    assert stats["eager_graphs"] == 0 and stats["programs"] == 2 and stats["calls"] == 5, stats


def test_compiled_training_step_matches_eager(tpu):
    torch._dynamo.reset()
    cpu, dev = _llama_pair()
    ids = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(2))

    def step(model, x):
        loss = model(x, labels=x, use_cache=False).loss
        loss.backward()
        return loss

    with torchtpu.precision("HIGHEST"):
        ref = step(cpu, ids)
        loss = torch.compile(step, backend="tpu")(dev, ids.to(tpu))
    torch.testing.assert_close(loss.cpu(), ref, rtol=1e-4, atol=1e-5)
    for (name, p_cpu), p_dev in zip(cpu.named_parameters(), dev.parameters()):
        torch.testing.assert_close(p_dev.grad.cpu(), p_cpu.grad, rtol=1e-3, atol=1e-5, msg=name)
    assert torchtpu.stats()["compile"]["eager_graphs"] == 0


@pytest.mark.parametrize("name", ["mixtral", "qwen3-moe"])
def test_compiled_moe_training_step_matches_cpu(tpu, name):
    """MoE experts reach torch._grouped_mm under Dynamo on tpu (transformers' choice): in float32 it compiles
    into programs (no eager graphs) and its loss and gradients match CPU eager."""
    from torchtpu import validate_models as vm

    torch._dynamo.reset()
    spec = vm.MODELS[name]
    cpu = spec.build()
    dev = spec.build()
    dev.load_state_dict(cpu.state_dict())
    dev = dev.to(tpu)
    inputs = spec.make_inputs()

    def step(model, batch):
        loss = model(**batch).loss
        loss.backward()
        return loss

    with torchtpu.precision("HIGHEST"):
        ref = step(cpu, inputs)
        loss = torch.compile(step, backend="tpu")(dev, vm.to_device(inputs, tpu))
    torch.testing.assert_close(loss.cpu(), ref, rtol=1e-4, atol=1e-5)
    for (pname, p_cpu), p_dev in zip(cpu.named_parameters(), dev.parameters()):
        if p_cpu.grad is not None:
            torch.testing.assert_close(p_dev.grad.cpu(), p_cpu.grad, rtol=1e-3, atol=1e-5, msg=pname)
    assert torchtpu.stats()["compile"]["eager_graphs"] == 0
