"""torchtpu.kernels.jax_op: a JAX function as a torch op on "tpu" (eager, autograd, compile), its simulated cost,
and the bad inputs (missing packages, a fake that disagrees, a kernel raising inside a deferred region, VMEM
over-subscription, an out-of-bounds read caught by JAX's TPU interpreter). Runs on either driver; the pjrt CI
step runs it on the CPU client (scripts/test.sh)."""

from __future__ import annotations

import sys

import pytest
import torch

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402

import torchtpu  # noqa: E402
from torchtpu import kernels  # noqa: E402
from torchtpu.execution import deferred  # noqa: E402

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _scale_shift(x, y, alpha):  # noqa: ANN001, ANN202
    return x * alpha + jnp.tanh(y), (x * y).sum(axis=-1)


scale_shift = kernels.jax_op("test_kernels::scale_shift", _scale_shift, static_argnums=(2,))


@kernels.jax_op("test_kernels::gelu_mm")
def gelu_mm(x, w):  # noqa: ANN001, ANN201
    return jax.nn.gelu(x @ w, approximate=True)


def _copy_kernel(x_ref, o_ref):  # noqa: ANN001, ANN202
    o_ref[...] = x_ref[...] * 2.0


def _oob(x):  # noqa: ANN001, ANN202
    # block i + 1 of three: the last step reads rows 24..31 of a 24-row input
    return pl.pallas_call(_copy_kernel, grid=(3,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i + 1, 0))],
                          out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=kernels.interpret_params(),
                          name="reads_past_the_end")(x)


oob = kernels.jax_op("test_kernels::oob", _oob)


def _reference(x, y, alpha):  # noqa: ANN001, ANN202
    return x * alpha + torch.tanh(y), (x * y).sum(-1)


@pytest.mark.parametrize("mode", MODES)
def test_eager_modes_match_cpu_and_each_other(mode):
    torch.manual_seed(0)
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    ref = _reference(x, y, 0.5)
    with torch.tpu.eager_mode(mode):
        a, b = scale_shift(x.to("tpu"), y.to("tpu"), 0.5)
        assert isinstance(a, torch.Tensor) and a.device.type == "tpu"
        got = (a.cpu(), b.cpu())
    torch.testing.assert_close(got[0], ref[0])
    torch.testing.assert_close(got[1], ref[1])
    again = scale_shift(x.to("tpu"), y.to("tpu"), 0.5)
    assert torch.equal(again[0].cpu(), got[0]) and torch.equal(again[1].cpu(), got[1])


def test_fusion_boundary_flushes_the_region_and_outputs_are_ordinary():
    x = torch.randn(4, 8)
    with torch.tpu.eager_mode("DEFER_AND_FUSE"):
        pending = x.to("tpu") * 3 + 1
        assert deferred.pending()
        out = gelu_mm(pending, torch.eye(8, device="tpu"))
        assert not deferred.pending()  # the region ran before the kernel read its input
        after = out * 2 - pending
        assert deferred.pending()
        got = after.cpu()
    expect = torch.nn.functional.gelu(x * 3 + 1, approximate="tanh") * 2 - (x * 3 + 1)
    torch.testing.assert_close(got, expect, atol=1e-5, rtol=1e-5)


def test_autograd_through_jax_vjp_matches_torch():
    torch.manual_seed(0)
    x, w = torch.randn(3, 5), torch.randn(5, 4)
    xt, wt = x.to("tpu").requires_grad_(), w.to("tpu").requires_grad_()
    gelu_mm(xt, wt).pow(2).sum().backward()
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    torch.nn.functional.gelu(xc @ wc, approximate="tanh").pow(2).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(wt.grad.cpu(), wc.grad, atol=1e-5, rtol=1e-5)


def test_compile_keeps_the_kernel_as_one_node_without_graph_breaks():
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("tpu")

    def f(x, y):  # noqa: ANN001, ANN202
        a, b = scale_shift(x + 1, y, 0.25)
        return a.sum(-1) + b

    x, y = torch.randn(4, 8, device="tpu"), torch.randn(4, 8, device="tpu")
    got = torch.compile(f, backend=counter, fullgraph=True)(x, y)
    assert counter.frame_count == 1
    nodes = [n for n in counter.graphs[0].graph.nodes if "scale_shift" in str(n.target)]
    assert len(nodes) == 1
    torch.testing.assert_close(got.cpu(), f(x, y).cpu())
    assert torch.equal(got.cpu(), f(x, y).cpu())


def test_compile_backward_runs_the_vjp_kernel():
    torch.manual_seed(1)
    x, w = torch.randn(3, 5), torch.randn(5, 4)
    xt, wt = x.to("tpu").requires_grad_(), w.to("tpu").requires_grad_()
    torch.compile(lambda a, b: gelu_mm(a * 2, b).sum(), backend="tpu", fullgraph=True)(xt, wt).backward()
    xe, we = x.to("tpu").requires_grad_(), w.to("tpu").requires_grad_()
    gelu_mm(xe * 2, we).sum().backward()
    assert torch.equal(xt.grad.cpu(), xe.grad.cpu()) and torch.equal(wt.grad.cpu(), we.grad.cpu())


@pytest.mark.sim_only("the simulated timeline and cost model")
def test_kernel_is_charged_on_the_timeline_and_in_stats():
    torch.tpu.synchronize()
    torchtpu.reset_stats()
    x = torch.randn(64, 128, device="tpu")
    gelu_mm(x, torch.randn(128, 128, device="tpu"))
    entry = torchtpu.stats()["by_op"]["kernel:test_kernels::gelu_mm"]
    assert entry["count"] == 1 and entry["seconds"] > 0 and entry["flops"] >= 2 * 64 * 128 * 128
    with torchtpu.profiler.record() as window:
        gelu_mm(x, torch.eye(128, device="tpu"))
        torch.tpu.synchronize()
    assert "kernel:test_kernels::gelu_mm" in [e["name"] for e in window.chrome_events() if e.get("ph") == "X"]


def _tiled_matmul(x, w, bm, bn, vmem_limit=None):  # noqa: ANN001, ANN202
    from jax.experimental.pallas import tpu as pltpu

    def kern(x_ref, w_ref, o_ref):  # noqa: ANN001, ANN202
        o_ref[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)

    m, k = x.shape
    n = w.shape[1]
    return pl.pallas_call(kern, grid=(m // bm, n // bn),
                          in_specs=[pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
                                    pl.BlockSpec((k, bn), lambda i, j: (0, j))],
                          out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
                          out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), interpret=kernels.interpret_params(),
                          compiler_params=pltpu.CompilerParams(vmem_limit_bytes=vmem_limit))(x, w)


tiled_matmul = kernels.jax_op("test_kernels::tiled_matmul", _tiled_matmul, static_argnums=(2, 3, 4))


@pytest.mark.sim_only("the cost model")
def test_cost_follows_blocks_dmas_and_mxu_tiles():
    x, w = torch.randn(256, 128, dtype=torch.bfloat16), torch.randn(128, 256, dtype=torch.bfloat16)
    good = kernels.simulated_cost(tiled_matmul, x, w, 128, 128, chip="v5e")
    bad = kernels.simulated_cost(tiled_matmul, x, w, 8, 8, chip="v5e")
    assert bad.seconds > 10 * good.seconds  # 8x8 blocks pad every dot to the MXU's 128x128 tile
    assert bad.padded_flops > bad.flops and good.detail["kernels"][0]["steps"] == 4
    # grid (2, 2), j fastest: x's block changes twice, w's four times, out four times
    assert good.hbm_bytes == 2 * (128 * 128 * 2) + 4 * (128 * 128 * 2) + 4 * (128 * 128 * 2)
    v6e = kernels.simulated_cost(tiled_matmul, x, w, 128, 128, chip="v6e")
    assert v6e.seconds != good.seconds


def test_out_shape_disagreeing_with_the_function_is_an_error():
    liar = kernels.jax_op("test_kernels::liar", lambda x: x[:2] * 2,
                          out_shape=lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype))
    with pytest.raises(kernels.KernelError, match=r"output 0 is float32\[2, 4\] but its fake declares float32\[3, 4\]"):
        liar(torch.ones(3, 4, device="tpu"))


def test_missing_jax_or_helion_names_the_extra(monkeypatch):
    from torchtpu.kernels import deps

    monkeypatch.setitem(sys.modules, "helion", None)
    with pytest.raises(kernels.MissingDependency, match=r"pip install 'torchtpu\[helion\]'"):
        kernels.helion_op(object())
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(kernels.MissingDependency, match=r"pip install 'torchtpu\[kernels\]'"):
        deps.jax()
    with pytest.raises(kernels.MissingDependency, match=r"torchtpu\[kernels\]"):
        kernels.jax_op("test_kernels::never", lambda x: x)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="namespace::op"):
        kernels.jax_op("no_namespace", lambda x: x)
    with pytest.raises(ValueError, match="defined already"):
        kernels.jax_op("test_kernels::scale_shift", lambda x: x)
    with pytest.raises(TypeError, match="argument 'w' is a float"):
        gelu_mm(torch.ones(2, 2, device="tpu"), 0.5)
    with pytest.raises(TypeError, match="torch.int64 tensor cannot be a JAX kernel's operand"):
        gelu_mm(torch.ones(2, 2, device="tpu", dtype=torch.int64), torch.ones(2, 2, device="tpu", dtype=torch.int64))


def test_out_of_bounds_read_is_caught_by_the_interpreter_and_reported():
    x = torch.ones(24, 128, device="tpu")
    with pytest.raises(kernels.KernelError, match=r"Out-of-bounds block index \(3, 0\).*test_custom_kernels.py:\d+"):
        oob(x)
    # the interpreter's state was reset: a good kernel runs after it
    assert torch.equal(gelu_mm(torch.zeros(2, 2, device="tpu"), torch.zeros(2, 2, device="tpu")).cpu(),
                       torch.zeros(2, 2))


def test_kernel_raising_in_a_deferred_region_keeps_the_regions_ops():
    x = torch.ones(24, 128)
    with torch.tpu.eager_mode("DEFER_AND_FUSE"):
        before = x.to("tpu") * 5
        assert deferred.pending()
        with pytest.raises(kernels.KernelError) as info:
            oob(before)
        assert "kernel test_kernels::oob" in str(info.value) and "test_custom_kernels.py:" in str(info.value)
        later = before + 1
        got = later.cpu()
    assert torch.equal(got, x * 5 + 1)


@pytest.mark.sim_only("the VMEM check prices the kernel on the simulated chip")
def test_vmem_oversubscription_names_the_blocks():
    x = torch.zeros(1024, 1024, device="tpu")
    w = torch.zeros(1024, 1024, device="tpu")
    with pytest.raises(kernels.VmemOversubscribed, match=r"in0 block \(1024, 1024\) float32 = 4194304 B x2.*"
                       r"more than the 16777216 bytes"):
        tiled_matmul(x, w, 1024, 1024, 16 << 20)  # 24 MiB of blocks, double-buffered, under a 16 MiB limit
    assert torch.equal(tiled_matmul(x[:256, :256], w[:256, :256], 128, 128, 16 << 20).cpu(), torch.zeros(256, 256))


def test_cpu_tensors_run_on_jax_cpu():
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    a, b = scale_shift(x, y, 2.0)
    ref = _reference(x, y, 2.0)
    torch.testing.assert_close(a, ref[0])
    torch.testing.assert_close(b, ref[1])
