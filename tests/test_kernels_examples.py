"""The example kernels (torchtpu/kernels/examples) against the eager ops they replace: in each eager mode (bit for
bit the same across modes), under torch.compile (one node, same bits), with gradients. Runs on either driver; the
pjrt CI step runs it on the CPU client (scripts/test.sh)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("jax")

from torchtpu.kernels.examples.flash_attention import attention_eager, flash_attention  # noqa: E402
from torchtpu.kernels.examples.grouped_matmul import grouped_matmul, grouped_matmul_eager  # noqa: E402
from torchtpu.kernels.examples.rmsnorm import rmsnorm, rmsnorm_eager  # noqa: E402

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _modes_and_compile(fn, args, reference, atol):  # noqa: ANN001, ANN202
    """`fn(*args)` on tpu in each mode and compiled: close to `reference` (CPU eager op), identical to each other."""
    results = []
    for mode in MODES:
        with torch.tpu.eager_mode(mode):
            results.append(fn(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args]).cpu())
    compiled = torch.compile(fn, backend="tpu", fullgraph=True)
    results.append(compiled(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args]).cpu())
    torch.testing.assert_close(results[0], reference, atol=atol, rtol=atol)
    for other in results[1:]:
        assert torch.equal(other, results[0])


def test_rmsnorm_matches_the_eager_op():
    torch.manual_seed(0)
    x, w = torch.randn(2, 8, 32), torch.randn(32)
    _modes_and_compile(lambda a, b: rmsnorm(a, b, 1e-6, 8), (x, w), rmsnorm_eager(x, w), 1e-5)
    on_tpu = rmsnorm_eager(x.to("tpu"), w.to("tpu")).cpu()  # the eager op on the device agrees too
    torch.testing.assert_close(rmsnorm(x.to("tpu"), w.to("tpu"), 1e-6, 8).cpu(), on_tpu, atol=1e-5, rtol=1e-5)
    xt, wt = x.to("tpu").requires_grad_(), w.to("tpu").requires_grad_()
    rmsnorm(xt, wt, 1e-6, 8).pow(2).sum().backward()
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    rmsnorm_eager(xc, wc).pow(2).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(wt.grad.cpu(), wc.grad, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("causal", [pytest.param(False, marks=pytest.mark.slow), True])
def test_flash_attention_forward_and_backward(causal):
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, 2, 32, 16) for _ in range(3))
    reference = attention_eager(q, k, v, causal)
    _modes_and_compile(lambda a, b, c: flash_attention(a, b, c, causal, 16, 8), (q, k, v), reference, 1e-5)
    tpu = [t.to("tpu").requires_grad_() for t in (q, k, v)]
    flash_attention(*tpu, causal, 16, 8).sum().backward()
    cpu = [t.clone().requires_grad_() for t in (q, k, v)]
    attention_eager(*cpu, causal).sum().backward()
    for a, b in zip(tpu, cpu):
        torch.testing.assert_close(a.grad.cpu(), b.grad, atol=1e-5, rtol=1e-5)
    # compiled training step: the forward and backward kernels are nodes of the two graphs
    comp = [t.to("tpu").requires_grad_() for t in (q, k, v)]
    torch.compile(lambda a, b, c: flash_attention(a, b, c, causal, 16, 8).sum(), backend="tpu",
                  fullgraph=True)(*comp).backward()
    for a, b in zip(comp, tpu):
        assert torch.equal(a.grad.cpu(), b.grad.cpu())


def test_grouped_matmul_ragged_groups():
    torch.manual_seed(2)
    x, w = torch.randn(32, 16), torch.randn(4, 16, 8)
    sizes = torch.tensor([5, 0, 20, 4], dtype=torch.int32)  # an empty expert; 3 rows past the last group
    reference = grouped_matmul_eager(x, w, sizes)
    _modes_and_compile(lambda a, b, c: grouped_matmul(a, b, c, 8, 8), (x, w, sizes), reference, 1e-5)
    assert torch.equal(grouped_matmul(x.to("tpu"), w.to("tpu"), sizes.to("tpu"), 8, 8).cpu()[29:], torch.zeros(3, 8))
    xt, wt = x.to("tpu").requires_grad_(), w.to("tpu").requires_grad_()
    grouped_matmul(xt, wt, sizes.to("tpu"), 8, 8).pow(2).sum().backward()
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    grouped_matmul_eager(xc, wc, sizes).pow(2).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(wt.grad.cpu(), wc.grad, atol=1e-4, rtol=1e-4)


@pytest.mark.slow  # a Mixtral forward and backward through interpreted Pallas kernels: ~1-2 min on 2 cores
def test_mixtral_experts_on_the_grouped_matmul_kernel():
    transformers = pytest.importorskip("transformers")
    import torchtpu
    from torchtpu.kernels.examples import moe

    name = moe.register()
    cfg = transformers.MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                     num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                                     num_experts_per_tok=2, max_position_embeddings=64)
    torch.manual_seed(0)
    reference = transformers.MixtralForCausalLM(cfg)
    model = transformers.MixtralForCausalLM._from_config(cfg, experts_implementation=name)
    model.load_state_dict(reference.state_dict())
    model = model.to("tpu")
    assert model.config._experts_implementation == name
    ids = torch.randint(0, 64, (2, 8))
    with torchtpu.precision("HIGHEST"):  # the rest of the model at f32 accuracy, as the CPU reference
        loss = model(ids.to("tpu"), labels=ids.to("tpu")).loss
        loss.backward()
    expect = reference(ids, labels=ids).loss
    expect.backward()
    torch.testing.assert_close(loss.detach().cpu(), expect.detach(), atol=1e-4, rtol=1e-4)
    got = model.model.layers[0].mlp.experts.gate_up_proj.grad.cpu()
    torch.testing.assert_close(got, reference.model.layers[0].mlp.experts.gate_up_proj.grad, atol=1e-4, rtol=1e-3)
