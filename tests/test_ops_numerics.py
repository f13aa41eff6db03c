"""Values CPU PyTorch computes that the tpu once got wrong: complex mean/var, relu of NaN, a NaN or inf that
must stay in its own interpolation/pooling window, exact float64 matmuls, wrapped integer scalars, integer
division by zero. Each in DEFER_NEVER, DEFER_AND_FUSE and (where it compiles) under torch.compile."""

from __future__ import annotations

import contextlib

import pytest
import torch
import torch.nn.functional as F

import torchtpu  # noqa: F401

NAN, INF = float("nan"), float("inf")

CASES = {
    "complex_mean": (lambda x: x.mean(), lambda: torch.tensor([1 + 2j, 3 + 4j, -1 + 0.5j])),
    "complex_mean_dim": (lambda x: x.mean(0), lambda: torch.tensor([[1 + 2j, 3 - 4j], [2 + 1j, 0 + 1j]])),
    "complex_var": (lambda x: x.var(), lambda: torch.tensor([1 + 2j, 3 + 4j, -1 + 0.5j])),
    "complex_std": (lambda x: x.std(), lambda: torch.tensor([1 + 2j, 3 + 4j, -1 + 0.5j])),
    "relu_nan": (torch.relu, lambda: torch.tensor([NAN, -1.0, 0.0, 2.0])),
    "nearest_nan": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
                    lambda: torch.tensor([[[[1.0, NAN], [3.0, 4.0]]]])),
    "nearest_inf_1d": (lambda x: F.interpolate(x, size=5, mode="nearest"), lambda: torch.tensor([[[1.0, INF, 2.0]]])),
    "bilinear_nan": (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
                     lambda: torch.tensor([[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, NAN]]]])),
    "avg_pool_inf": (lambda x: F.avg_pool1d(x, 2), lambda: torch.tensor([[1.0, INF, 1.0, 1.0, 2.0, 2.0]])),
    "avg_pool2d_nan": (lambda x: F.avg_pool2d(x, 2), lambda: torch.tensor([[[[NAN, 1.0, 1.0, 1.0]] * 4]])),
    "float64_matmul": (lambda a: a @ a.T, lambda: torch.tensor([[1 + 1e-12, 1.0], [1.0, -1.0]], dtype=torch.float64)),
    "float64_mean": (lambda x: x.mean(), lambda: torch.tensor([1e16, 1.0, -1e16, 3.0], dtype=torch.float64)),
    "uint8_times_minus_one": (lambda x: x * -1, lambda: torch.tensor([1, 2, 200], dtype=torch.uint8)),
    "int8_add_wraps": (lambda x: x + 200, lambda: torch.tensor([100, -3], dtype=torch.int8)),
}
COMPILE = ["complex_mean", "relu_nan", "nearest_nan", "avg_pool_inf", "float64_matmul", "uint8_times_minus_one"]


def _mode(name: str):
    if name == "fuse":
        return torch.tpu.eager_mode(torch.tpu.EagerMode.DEFER_AND_FUSE)
    return contextlib.nullcontext()


def _check(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype and got.device.type == "cpu"
    if want.dtype == torch.float64:
        assert torch.equal(got, want) or torch.allclose(got, want, rtol=1e-15, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.parametrize("mode", ["never", "fuse"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_cpu(tpu, name, mode):
    fn, make = CASES[name]
    x = make()
    want = fn(x)
    with _mode(mode):
        got = fn(x.to("tpu")).cpu()
    _check(got, want)


@pytest.mark.parametrize("name", COMPILE)
def test_matches_cpu_under_compile(tpu, name):
    fn, make = CASES[name]
    x = make()
    torch._dynamo.reset()
    _check(torch.compile(fn, backend="tpu")(x.to("tpu")).cpu(), fn(x))


def test_float64_matmul_is_exact_beyond_float32():
    a = torch.tensor([[1.0 + 2**-40, 1.0]], dtype=torch.float64)
    b = torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
    assert (a.to("tpu") @ b.to("tpu")).item() == 2**-40


@pytest.mark.parametrize("rounding_mode", ["floor", "trunc"])
def test_integer_division_by_zero_raises_like_cpu(tpu, rounding_mode):
    a, b = torch.tensor([5, -5]), torch.tensor([0, 1])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.div(a, b, rounding_mode=rounding_mode)
    with pytest.raises(RuntimeError, match="ZeroDivisionError|division by zero"):  # CPU: "ZeroDivisionError"
        torch.div(a.to("tpu"), b.to("tpu"), rounding_mode=rounding_mode).cpu()


@pytest.mark.parametrize("write", [lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.clamp_(0, 1),
                                   lambda t: torch.add(torch.ones(3, device=t.device), 1, out=t)])
def test_in_place_write_through_an_expanded_view_raises_like_cpu(tpu, write):
    with pytest.raises(RuntimeError, match="single memory location"):
        write(torch.zeros(1).expand(3))
    base = torch.zeros(1, device="tpu")
    for _ in range(2):  # the second call would find the launch cached (a contiguous call stored it)
        write(torch.zeros(3, device="tpu"))
        with pytest.raises(RuntimeError, match="single memory location"):
            write(base.expand(3))
    assert base.cpu().tolist() == [0.0]


def test_fill_of_an_expanded_view_runs_as_on_cpu(tpu):
    base = torch.zeros(1, device="tpu")
    base.expand(3).fill_(2.0)
    assert base.cpu().tolist() == [2.0]
