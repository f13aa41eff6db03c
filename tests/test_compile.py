"""torch.compile(backend="tpu"), tested the way PyTorch tests its backends (openreg's test_compile)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch._dynamo.testing import CompileCounterWithBackend

import torchtpu
from torchtpu.models.tiny_gpt import Block, GPTConfig, TinyGPT, synthetic_batch


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))


def test_backend_is_registered():
    assert "tpu" in torch._dynamo.list_backends()


def test_fullgraph_mlp_matches_eager_forward_and_backward(tpu):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _mlp().to(tpu)
    x = torch.randn(8, 16).to(tpu)
    counter = CompileCounterWithBackend("tpu")
    compiled = torch.compile(model, backend=counter, fullgraph=True)
    with torchtpu.precision("HIGHEST"):
        eager_out = model(x)
        eager_out.square().sum().backward()
        eager_grads = [p.grad.cpu() for p in model.parameters()]
        model.zero_grad()
        out = compiled(x)
        out.square().sum().backward()
    assert counter.frame_count == 1
    assert out.device.type == "tpu"
    torch.testing.assert_close(out.cpu(), eager_out.cpu(), rtol=1e-6, atol=1e-6)
    for p, g in zip(model.parameters(), eager_grads):
        torch.testing.assert_close(p.grad.cpu(), g, rtol=1e-5, atol=1e-6)
    assert torchtpu.fallback_counts() == {}


def test_transformer_block_fullgraph(tpu):
    torch._dynamo.reset()
    torch.manual_seed(0)
    block = Block(GPTConfig(d_model=32, heads=4, ffn=64)).to(tpu)
    x = torch.randn(2, 8, 32).to(tpu)
    compiled = torch.compile(block, backend="tpu", fullgraph=True)
    with torchtpu.precision("HIGHEST"):
        torch.testing.assert_close(compiled(x).cpu(), block(x).cpu(), rtol=1e-5, atol=1e-5)


def test_fake_tensors_in_the_backend_are_on_tpu(tpu):
    torch._dynamo.reset()
    seen = []

    def backend(gm, example_inputs):
        seen.extend(str(t.device) for t in example_inputs if isinstance(t, torch.Tensor))
        return gm

    torch.compile(lambda a: a.sin() + 1, backend=backend)(torch.randn(3).to(tpu))
    assert seen == ["tpu:0"]


def test_compiled_training_step_matches_eager_and_compiles_once(tpu):
    torch._dynamo.reset()
    torchtpu.reset_stats()
    cfg = GPTConfig(vocab=32, seq=8, d_model=16, heads=2, layers=1, ffn=32)
    losses = {}
    for compiled in (False, True):
        torch.manual_seed(0)
        model = TinyGPT(cfg).to(tpu)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

        def step(x, y, model=model):
            loss = model.loss(x, y)
            loss.backward()
            return loss

        fn = torch.compile(step, backend="tpu") if compiled else step
        gen = torch.Generator().manual_seed(0)
        out = []
        with torchtpu.precision("HIGHEST"):
            for _ in range(6):
                x, y = synthetic_batch(cfg, 4, gen)
                opt.zero_grad()
                out.append(fn(x.to(tpu), y.to(tpu)).item())
                opt.step()
        losses[compiled] = out
    # bit-equal on the simulator; XLA (pjrt) may fuse differently, within an ulp
    torch.testing.assert_close(losses[True], losses[False], rtol=1e-6, atol=0)
    stats = torchtpu.stats()["compile"]
    assert stats["graphs"] == 2 and stats["programs"] == 2  # one forward and one backward graph
    assert torchtpu.fallback_counts() == {}


def test_graph_break_falls_back_to_eager_on_tpu(tpu):
    torch._dynamo.reset()

    def f(x):
        y = x * 2
        print("graph break")  # noqa: T201
        return y.exp()

    x = torch.randn(4).to(tpu)
    out = torch.compile(f, backend="tpu")(x)
    assert out.device.type == "tpu"
    torch.testing.assert_close(out.cpu(), (x.cpu() * 2).exp())


def test_ops_run_eagerly_between_graphs_are_not_traced_by_dynamo(tpu):
    """A data-dependent op breaks the graph and runs eagerly inside the compiled frame: the sim's launches it
    makes (generated plan functions) must not become Dynamo frames and graphs of their own."""
    torch._dynamo.reset()

    def f(x):
        kept = torch.masked_select(x, x > 0)  # output shape depends on data: a graph break
        return kept.sum() * 2

    x = torch.randn(64).to(tpu)
    explained = torch._dynamo.explain(f)(x)
    assert explained.graph_count <= 2, [str(b.reason)[:80] for b in explained.break_reasons]
    out = torch.compile(f, backend="tpu")(x)
    torch.testing.assert_close(out.cpu(), torch.masked_select(x.cpu(), x.cpu() > 0).sum() * 2)


def test_recompiles_are_counted_with_a_reason(tpu):
    torch._dynamo.reset()
    torchtpu.reset_stats()
    f = torch.compile(lambda a: a.relu() * 3, backend="tpu", dynamic=False)
    f(torch.randn(4).to(tpu))
    f(torch.randn(5).to(tpu))
    stats = torchtpu.stats()["compile"]
    assert stats["recompiles"] >= 1
    assert any("size" in r or "shape" in r for r in stats["recompile_reasons"])


def test_changing_sequence_length_compiles_one_program_per_bucket(tpu):
    torch._dynamo.reset()
    torchtpu.reset_stats()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 8)).to(tpu)
    f = torch.compile(model, backend="tpu", dynamic=True)
    lengths = range(3, 40, 3)
    with torch.no_grad(), torchtpu.precision("HIGHEST"):
        for n in lengths:
            x = torch.randn(2, n, 16).to(tpu)
            out = f(x)
            assert out.shape == (2, n, 8)
            torch.testing.assert_close(out.cpu(), model(x).cpu(), rtol=1e-5, atol=1e-5)
    stats = torchtpu.stats()["compile"]
    assert stats["graphs"] == 1
    assert stats["programs"] == 4  # 13 lengths, buckets 8/16/32/64 (batch 2 pads to 8 as well)


def test_dynamic_dim_that_padding_would_change_runs_at_its_exact_shape(tpu):
    torch._dynamo.reset()
    torchtpu.reset_stats()
    f = torch.compile(lambda a: (a * 2).sort(-1).values, backend="tpu", dynamic=True)  # sorts padding in
    for n in (5, 7, 9, 11):
        x = torch.randn(3, n)
        torch.testing.assert_close(f(x.to(tpu)).cpu(), (x * 2).sort(-1).values)
    stats = torchtpu.stats()["compile"]
    assert stats["graphs"] == 1 and stats["exact_shape_fallbacks"] >= 1


def test_inductor_on_cpu_still_works_with_torchtpu_imported():
    torch._dynamo.reset()
    f = torch.compile(lambda a: a.cos() + a, backend="inductor")
    x = torch.randn(8)
    torch.testing.assert_close(f(x), x.cos() + x)


def test_bucket_policy(monkeypatch):
    from torchtpu.compile.buckets import bucket, bucket_policy

    assert [bucket(n, "pow2") for n in (1, 8, 9, 100)] == [8, 8, 16, 128]
    assert bucket(100, [64, 128, 256]) == 128 and bucket(300, [64, 128]) == 300
    assert bucket(37, "none") == 37
    monkeypatch.setenv("TORCHTPU_SHAPE_BUCKETS", "128,64")
    assert bucket_policy() == [64, 128]
    monkeypatch.setenv("TORCHTPU_SHAPE_BUCKETS", "big")
    with pytest.raises(ValueError, match="pow2, none"):
        bucket_policy()


def test_functional_view_writes_and_padding_under_compile(tpu):
    torch._dynamo.reset()
    torchtpu.reset_stats()

    def f(x, y):
        x = x.clone()
        x[:, 1:7:2] = y
        x[2] = 5.0
        return torch.nn.functional.pad(x, (1, 2, 0, 1), value=-1.0)

    x, y = torch.randn(4, 8), torch.randn(4, 3)
    out = torch.compile(f, backend="tpu", fullgraph=True)(x.to(tpu), y.to(tpu))
    torch.testing.assert_close(out.cpu(), f(x, y))
    assert torchtpu.stats()["compile"]["eager_graphs"] == 0


def test_tensor_constants_made_in_the_graph(tpu):
    # AOTAutograd lifts tensors created inside the traced code into get_attr nodes (_tensor_constant0): GPT-2,
    # Llama and T5 build their attention-mask fill values this way
    def f(x):
        return x * torch.tensor([1.5, -2.0, 0.25], device=x.device) + torch.tensor(3.0, device=x.device)

    x = torch.randn(4, 3)
    got = torch.compile(f, backend="tpu")(x.to(tpu)).cpu()
    torch.testing.assert_close(got, f(x))


def test_convolution_compiles_into_the_graph(tpu):
    # AOTAutograd graphs spell convolution and its backward as the generic ops; eager reaches the overrideable ones
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    x = torch.randn(2, 3, 6, 6)
    model = nn.Conv2d(3, 4, 3, padding=1)
    model.load_state_dict(conv.state_dict())
    model = model.to(tpu)
    torchtpu.reset_stats()
    compiled = torch.compile(model, backend="tpu")
    with torch.tpu.precision("highest"):
        xt = x.to(tpu).requires_grad_()
        compiled(xt).sum().backward()
    xc = x.clone().requires_grad_()
    conv(xc).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(model.weight.grad.cpu(), conv.weight.grad, rtol=1e-5, atol=1e-5)
    assert torchtpu.stats()["compile"]["eager_graphs"] == 0


def test_compiled_optimizer_step_writes_its_state_in_one_program(tpu):
    # AOTAutograd keeps an inference graph's input mutations in the graph (keep_inference_input_mutations): the
    # parameters and moments are written by the one Program, not copied back by an eager launch each
    torch._dynamo.reset()
    torch.manual_seed(0)
    cpu_model = _mlp()
    model = _mlp().to(tpu)
    model.load_state_dict(cpu_model.state_dict())
    opts = {d: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1) for d, m in (("cpu", cpu_model),
                                                                                          ("tpu", model))}
    step = torch.compile(opts["tpu"].step, backend="tpu")
    gen = torch.Generator().manual_seed(1)
    launches = []
    with torchtpu.precision("HIGHEST"):
        for _ in range(3):
            grads = [torch.randn(p.shape, generator=gen) for p in cpu_model.parameters()]
            for m in (cpu_model, model):
                for p, g in zip(m.parameters(), grads):
                    p.grad = g.to(p.device)
            opts["cpu"].step()
            before = torchtpu.stats()["launches"]
            step()
            launches.append(torchtpu.stats()["launches"] - before)
    for p, q in zip(model.parameters(), cpu_model.parameters()):  # float32 bias corrections vs CPU's doubles
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-5, atol=1e-6)
        state, cpu_state = opts["tpu"].state[p], opts["cpu"].state[q]
        torch.testing.assert_close(state["exp_avg_sq"].cpu(), cpu_state["exp_avg_sq"], rtol=1e-5, atol=1e-8)
        assert float(state["step"]) == 3.0  # a host scalar input: computed on the device, copied back
    n_params = len(list(model.parameters()))
    assert launches[-1] < n_params  # was 5 copy_ launches per parameter after the program
    assert torchtpu.stats()["compile"]["eager_graphs"] == 0


def test_no_grad_buffer_updates_under_compile(tpu):
    # BatchNorm in train mode under no_grad: an inference graph mutating its running statistics
    torch._dynamo.reset()
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(6)
    tbn = nn.BatchNorm1d(6).to(tpu)
    compiled = torch.compile(tbn, backend="tpu")
    x = torch.randn(5, 6)
    with torch.no_grad(), torchtpu.precision("HIGHEST"):
        for scale in (1.0, 2.0):
            out = compiled(x.to(tpu) * scale)
            expected = bn(x * scale)
            torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(tbn.running_mean.cpu(), bn.running_mean, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(tbn.running_var.cpu(), bn.running_var, rtol=1e-6, atol=1e-7)
    assert int(tbn.num_batches_tracked) == 2
