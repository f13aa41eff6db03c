"""Calls that crash CPU PyTorch (fuzz seeds 14 and 16) are skipped by the fuzzer's CPU_CRASHES rules, and tpu
refuses them with a clear error: embedding_dense_backward with a row index out of range, _weight_norm_interface
with a g that has not one element per slice of v."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES

from torchtpu.fuzz.args import make_call
from torchtpu.fuzz.overloads import cpu_crashes, registered, select
from torchtpu.fuzz.runner import call_rng


@pytest.mark.parametrize(("seed", "name", "index"), [(16, "aten.embedding_dense_backward.default", 1),
                                                     (14, "aten._weight_norm_interface.default", 2),
                                                     (32, "aten._logcumsumexp.out", 1)])
def test_the_crashing_calls_are_skipped(seed: int, name: str, index: int) -> None:
    op = next(o for o in select(registered(), None) if str(o) == name)
    assert cpu_crashes(make_call(op, call_rng(seed, name, index), seed))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("row", [-1, 2, 7])
def test_embedding_dense_backward_refuses_a_row_out_of_range(row: int, mode: str) -> None:
    grad = torch.ones(3, 4, device="tpu")
    with torch.tpu.eager_mode(mode), pytest.raises(IndexError, match=f"index {row} is out of range for 2 weight rows"):
        torch.ops.aten.embedding_dense_backward(grad, torch.tensor([0, row, 1], device="tpu"), 2, -1, True)
        torch.tpu.synchronize()


@pytest.mark.parametrize("mode", MODES)
def test_embedding_dense_backward_in_range_matches_cpu(mode: str) -> None:
    grad, idx = torch.randn(5, 3), torch.tensor([0, 1, 1, 3, 0])
    want = torch.ops.aten.embedding_dense_backward(grad, idx, 4, 1, True)
    with torch.tpu.eager_mode(mode):
        got = torch.ops.aten.embedding_dense_backward(grad.to("tpu"), idx.to("tpu"), 4, 1, True).cpu()
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("v", "g", "dim"), [((1,), (0,), 0), ((2, 3), (5,), 0), ((2, 3), (2,), 1), ((2, 3), (2,), -1)])
def test_weight_norm_refuses_g_of_another_count(v: tuple, g: tuple, dim: int, mode: str) -> None:
    # dim -1 is not v's last dim to CPU's kernel: its internal assert refuses first (tests/test_fuzz_silent_s14.py)
    words = "fused kernels can only be applied" if dim == -1 else "g must have one element per slice of v"
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match=words):
        torch.ops.aten._weight_norm_interface(torch.ones(v, device="tpu"), torch.ones(g, device="tpu"), dim)
        torch.tpu.synchronize()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("g", "dim"), [((2, 1), 0), ((2,), 0), ((1, 3), 1), ((3,), 1)])
def test_weight_norm_with_one_g_per_slice_matches_cpu(g: tuple, dim: int, mode: str) -> None:
    v, gv = torch.randn(2, 3), torch.rand(g) + 0.5
    want = torch.ops.aten._weight_norm_interface(v, gv, dim)
    with torch.tpu.eager_mode(mode):
        got = torch.ops.aten._weight_norm_interface(v.to("tpu"), gv.to("tpu"), dim)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a.cpu(), b)


@pytest.mark.parametrize(("grad_batch", "skipped"), [(1, True), (3, True), (2, False)])
def test_avg_pool2d_backward_with_another_batch_is_skipped(grad_batch: int, skipped: bool) -> None:
    from types import SimpleNamespace

    class Arg:  # a fuzz argument: materialize() gives its tensor
        def __init__(self, t: torch.Tensor) -> None:
            self.base = t

        def materialize(self, device: str) -> torch.Tensor:
            return self.base.to(device)

    grad, x = torch.ones(grad_batch, 3, 2, 2), torch.ones(2, 3, 4, 4)
    call = SimpleNamespace(op=torch.ops.aten.avg_pool2d_backward.default,
                           args=[Arg(grad), Arg(x), [2, 2], [2, 2], [0, 0], False, True, None])
    assert bool(cpu_crashes(call)) is skipped


@pytest.mark.parametrize(("x_dtype", "out_dtype", "skipped"), [(torch.complex64, torch.float32, True),
                                                               (torch.float32, torch.float16, True),
                                                               (torch.float32, torch.float32, False),
                                                               (torch.float32, torch.float64, False)])
def test_logcumsumexp_out_narrower_is_skipped(x_dtype: torch.dtype, out_dtype: torch.dtype, skipped: bool) -> None:
    from types import SimpleNamespace

    from torchtpu.fuzz.args import TensorArg

    call = SimpleNamespace(op=torch.ops.aten._logcumsumexp.out, args=[TensorArg(torch.ones(3, 3, dtype=x_dtype)), 0],
                           kwargs={"out": TensorArg(torch.empty(0, dtype=out_dtype))})
    assert bool(cpu_crashes(call)) is skipped


@pytest.mark.parametrize("mode", MODES)
def test_logcumsumexp_out_complex_into_float_refused(mode: str) -> None:
    # CPU writes the complex elements into the float buffer, past its end (seed 32); tpu refuses the cast
    x = torch.ones(3, 3, dtype=torch.complex64, device="tpu")
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.ops.aten._logcumsumexp.out(x, 0, out=torch.empty(0, device="tpu"))
        torch.tpu.synchronize()
