"""Silent results of fuzzer seeds 25 and 26, now CPU's in every eager mode (and compiled where the op reaches
the backend):

- isinf of a complex tensor: ATen's isinf(real) | isinf(imag) (tpu gave False for every complex element); and
  isinf.out into a non-bool out= under torch.compile is refused as in eager ("Expected out tensor to have dtype
  bool, but got float instead"): the meta kernel of the reference casts into any castable out dtype.
- polygamma(n >= 2) of float32: ATen's calc_polygamma<float>, (+-1) * expf(lgammaf(n + 1)) in float times a zeta
  summed in double whose first term is powf's float (6.493946 for CPU's 6.493939 at polygamma(3, 1)).
- add / add_ of bool tensors with an alpha other than 1: ATen converts alpha to bool first (-1 is true) and
  computes self | (alpha & other); tpu multiplied other by -1 in bool.
- huber_loss_backward with delta <= 0: CPU's scalar path's order of tests (x <= -delta first): the sign flipped
  at x == -delta (upstream's decomposition tests x < -delta).
- nansum.out without dtype=: an integral self is sum.out's (a bool out= computes), a floating self is summed in the
  out tensor's dtype (a float32 self into a float64 out= in float64; float16 into float32 without overflow).
- abs.out / angle.out of a complex self (ATen's unary_op_impl_with_complex_to_float_out): a complex out= of
  self's dtype (abs; any complex dtype for angle) takes the real result (it was refused), a real out= any dtype
  the real result casts to.
- threshold_backward: the threshold read as the common dtype by c10's checked conversion (a complex threshold
  with no imaginary part is its real part, one with an imaginary part or out of range is CPU's overflow error; tpu
  raised a TypeError), a float16/bfloat16 x compared in float with a float threshold (it was rounded to the
  tensor's type), bool and complex tensors refused as CPU's kernel (a bool gave a result).
- _logcumsumexp of a complex tensor: ATen's sequential scan in complex128 (tpu dropped the imaginary part).
- avg_pool2d/3d_backward: grad_output's rank, planes and pooled sizes checked as ATen's check_dim_size (a grad of
  another shape broadcast or gave a result of its own shape).
"""

from __future__ import annotations

import functools

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

aten = torch.ops.aten
NAN, INF = float("nan"), float("inf")


def _complexes(d: str) -> torch.Tensor:
    parts = [complex(INF, 0), complex(0, -INF), complex(NAN, INF), complex(1, NAN), complex(-INF, INF), 2 - 1j]
    return torch.tensor(parts, device=d)


def _polygamma(d: str) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(25)
    x = torch.cat([torch.arange(-3, 40).float(), torch.randn(200, generator=g) * 10, torch.rand(100, generator=g) * 3,
                   torch.tensor([NAN, INF, -INF, 0.5, -0.5, 1e-3, 1e-20, 1e30])]).to(d)
    ints = torch.arange(-2, 14, device=d).reshape(4, 4)
    return [torch.polygamma(n, x) for n in (2, 3, 4, 6, 11)] + [
        aten.polygamma.out(3, ints, out=torch.empty(0, dtype=torch.float64, device=d))]


def _logcumsumexp(d: str) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(26)
    specials = torch.tensor([complex(-INF, 3), 1 + 2j, complex(INF, 1), complex(INF, -2), 3 + 0j, complex(NAN, 1),
                             2 + 2j, complex(1, NAN), complex(-INF, -1), complex(INF, INF), 1 + 0j], device=d)
    x = (torch.randn(1, 3, 5, 5, dtype=torch.complex64, generator=g) * 3).to(d)
    y = (torch.randn(4, 7, dtype=torch.complex128, generator=g) * 10).to(d)
    return [aten._logcumsumexp(x, -4), aten._logcumsumexp(x, 2), aten._logcumsumexp(y, 1), aten._logcumsumexp(y, 0),
            aten._logcumsumexp(specials, 0), aten._logcumsumexp(specials[2:5], 0),
            aten._logcumsumexp(torch.tensor(complex(-INF, 2), device=d), 0),
            torch.logcumsumexp(x.transpose(1, 3), 1)]


def _view_real(calls):
    return lambda d: [torch.view_as_real(t) for t in calls(d)]


def _add_bool(d: str) -> list[torch.Tensor]:
    a = torch.tensor([[True, False, True, False, True]], device=d)
    b = torch.tensor([[True, True, False, False, True]], device=d)
    out = [torch.add(a, b, alpha=alpha) for alpha in (-1, 2, 256, -2**63, 0, True, False)]
    return out + [a.clone().add_(b, alpha=-1), a.clone().add_(b[0, 1], alpha=-3), torch.add(a, True, alpha=-1)]


def _nansum_out(d: str) -> list[torch.Tensor]:
    bools = torch.tensor([[True, False], [True, True]], device=d)
    floats = torch.tensor([[0.1, NAN], [0.2, 0.3]], device=d)
    halves = torch.tensor([[60000.0, NAN], [60000.0, 0.3]], dtype=torch.float16, device=d)

    def out(dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(0, dtype=dtype, device=d)

    return [aten.nansum.out(bools, out=out(torch.bool)), aten.nansum.out(bools, [1], out=out(torch.bool)),
            aten.nansum.out(torch.tensor([[2, 0], [1, -1]], device=d), out=out(torch.bool)),
            aten.nansum.out(torch.tensor([200, 100], device=d), out=out(torch.int8)),
            aten.nansum.out(floats, out=out(torch.float64)), aten.nansum.out(floats, [0], True, out=out(torch.float64)),
            aten.nansum.out(halves, out=out(torch.float32)), aten.nansum.out(floats, out=out(torch.bfloat16)),
            aten.nansum.out(floats, dtype=torch.float64, out=out(torch.float64))]


_Z = [3 + 4j, -1j, complex(INF, 1), complex(NAN, 0), -2.5 + 0j]


def _complex_to_float_out(d: str) -> list[torch.Tensor]:
    out = []
    for op, self_dtype, out_dtype in ((aten.abs.out, torch.complex64, torch.complex64),
                                      (aten.abs.out, torch.complex128, torch.complex128),
                                      (aten.abs.out, torch.complex64, torch.float64),
                                      (aten.abs.out, torch.complex128, torch.float16),
                                      (aten.angle.out, torch.complex64, torch.complex128),
                                      (aten.angle.out, torch.complex128, torch.complex64)):
        z = torch.tensor(_Z, dtype=self_dtype, device=d)
        out.append(op(z.reshape(1, 5, 1), out=torch.empty(0, dtype=out_dtype, device=d)))
    return out


def _threshold_backward(d: str) -> list[torch.Tensor]:
    out = []
    for dtype in (torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32):
        g = torch.arange(1, 6, device=d).to(dtype)
        x = torch.tensor([0, 1, 2, 3, 1], device=d).to(dtype)
        out.append(aten.threshold_backward(g, x, 2 + 0j))
        if dtype not in (torch.uint8, torch.int32):
            out.append(aten.threshold_backward(g, x, 1e10 + 0j))
    half = torch.tensor([1.0, 0.99951171875, 2.0], dtype=torch.float16, device=d)
    bf16 = half.bfloat16()
    out += [aten.threshold_backward(half, half, 0.99995), aten.threshold_backward(bf16, bf16, 0.9999),
            aten.threshold_backward.grad_input(half, half, 0.99995,
                                               grad_input=torch.empty(0, dtype=torch.float16, device=d))]
    return out


CASES = {
    "add_bool_alpha": _add_bool,
    "threshold_backward_threshold_read": _threshold_backward,
    "abs_angle_out_complex_self": _complex_to_float_out,
    "nansum_out_dtype": _nansum_out,
    "isinf_complex": lambda d: [torch.isinf(_complexes(d)), torch.isinf(_complexes(d).to(torch.complex128)),
                                torch.isinf(_complexes(d).reshape(2, 3).t())],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_as_cpu(case: str, mode: str) -> None:
    assert_exactly_cpu(CASES[case], mode)


@pytest.mark.parametrize("mode", MODES)
def test_logcumsumexp_complex(mode: str) -> None:
    """CPU's scan in complex128: the imaginary part kept (tpu gave the real part only), NaN in both parts where
    either part of an element is NaN; the last bits of exp/log1p may differ, so within 1e-6."""
    with torch.tpu.eager_mode(mode):
        got = _view_real(_logcumsumexp)("tpu")
        torch.tpu.synchronize()
    for g, c in zip(got, _view_real(_logcumsumexp)("cpu"), strict=True):
        torch.testing.assert_close(g.cpu(), c, rtol=1e-6, atol=1e-6, equal_nan=True)


def test_logcumsumexp_complex_compiled() -> None:
    torch._dynamo.reset()
    x = torch.randn(6, 3, dtype=torch.complex64, generator=torch.Generator().manual_seed(1)) * 4
    got = torch.compile(lambda a: torch.logcumsumexp(a, 0), backend="tpu")(x.to("tpu"))
    torch.testing.assert_close(torch.view_as_real(got.cpu()), torch.view_as_real(torch.logcumsumexp(x, 0)),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_polygamma_float_within_an_ulp(mode: str) -> None:
    """Exactly CPU's value but for a last-bit tie of the double sum's order (2 of 9,000 values: 1 ulp)."""
    with torch.tpu.eager_mode(mode):
        got = _polygamma("tpu")
        torch.tpu.synchronize()
    for g, c in zip(got, _polygamma("cpu"), strict=True):
        torch.testing.assert_close(g.cpu(), c, rtol=2.5e-7, atol=0, equal_nan=True)


def test_add_bool_alpha_compiled() -> None:
    torch._dynamo.reset()
    a, b = torch.tensor([True, False, True, False]), torch.tensor([True, True, False, False])
    got = torch.compile(lambda x, y: x.add(y, alpha=-1), backend="tpu")(a.to("tpu"), b.to("tpu"))
    torch.testing.assert_close(got.cpu(), a.add(b, alpha=-1), rtol=0, atol=0)


def _huber_backward_scalar_path(d: str, delta: float, reduction: int, dtype: torch.dtype) -> torch.Tensor:
    """CPU's scalar path, element by element (its vectorized path gives sign(x) * delta for |x| < -delta: a CPU
    inconsistency that depends on an element's position and the SIMD width)."""
    g = torch.tensor([3.0, -2.0, 5.0, -7.0, 1.5, 4.0, -1.0, 2.0, 6.0], dtype=dtype)
    x = torch.tensor([1.0, -1.0, 0.5, -0.5, 0.0, NAN, 2.0, -3.0, 0.25], dtype=dtype)
    t = torch.zeros(9, dtype=dtype)
    if d == "cpu":
        parts = [aten.huber_loss_backward(g[i:i + 1], x[i:i + 1], t[i:i + 1], 0, delta) for i in range(9)]
        whole = torch.cat(parts)
        return whole / 9 if reduction == 1 else whole
    return aten.huber_loss_backward(g.to(d), x.to(d), t.to(d), reduction, delta)


@pytest.mark.parametrize("mode", [*MODES, "compile"])
def test_huber_loss_backward_nonpositive_delta(mode: str) -> None:
    for dtype in (torch.float32, torch.float64):
        for delta in (-1.0, -0.5, -3.0, 1.0):
            for reduction in (0, 1, 2):
                want = _huber_backward_scalar_path("cpu", delta, reduction, dtype)
                if mode == "compile":
                    torch._dynamo.reset()
                    call = functools.partial(_huber_backward_scalar_path, "tpu", delta, reduction, dtype)
                    got = torch.compile(call, backend="tpu")()
                else:
                    with torch.tpu.eager_mode(mode):
                        got = _huber_backward_scalar_path("tpu", delta, reduction, dtype)
                        torch.tpu.synchronize()
                torch.testing.assert_close(got.cpu(), want, rtol=1e-6, atol=0, equal_nan=True)


def test_polygamma_half_keeps_its_dtype() -> None:
    x = torch.tensor([1.5, 2.5, 3.0], dtype=torch.float16)
    for n in (2, 5):
        got = torch.polygamma(n, x.to("tpu")).cpu()
        assert got.dtype == torch.float16
        torch.testing.assert_close(got, torch.polygamma(n, x))


def test_isinf_complex_compiled() -> None:
    torch._dynamo.reset()
    got = torch.compile(lambda x: torch.isinf(x), backend="tpu")(_complexes("tpu"))
    torch.testing.assert_close(got.cpu(), torch.isinf(_complexes("cpu")), rtol=0, atol=0)


def _avg2(grad: tuple[int, ...], x: tuple[int, ...], kernel: list[int], stride: list[int], ceil: bool = False):
    return lambda d: aten.avg_pool2d_backward(torch.ones(grad, device=d), torch.ones(x, device=d), kernel, stride,
                                              [0, 0], ceil, True, None)


def _avg3(grad: tuple[int, ...], x: tuple[int, ...]):
    return lambda d: aten.avg_pool3d_backward(torch.ones(grad, device=d), torch.ones(x, device=d), [2, 2, 2],
                                              [2, 2, 2], [0, 0, 0], False, True, None)


REFUSED = {
    "threshold_backward_complex_uint8": lambda d: aten.threshold_backward(
        torch.ones(1, dtype=torch.uint8, device=d), torch.ones(4, 3, dtype=torch.uint8, device=d), -2.18 + 1j),
    "threshold_backward_complex_int32_grad_input": lambda d: aten.threshold_backward.grad_input(
        torch.ones(1, dtype=torch.int32, device=d), torch.ones(5, 1, dtype=torch.int32, device=d), -0.66 + 1j,
        grad_input=torch.empty(0, dtype=torch.int32, device=d)),
    "threshold_backward_complex_half": lambda d: aten.threshold_backward(
        torch.ones(3, dtype=torch.float16, device=d), torch.ones(3, dtype=torch.float16, device=d), 1 + 1j),
    "threshold_backward_uint8_overflow": lambda d: aten.threshold_backward(
        torch.ones(3, dtype=torch.uint8, device=d), torch.ones(3, dtype=torch.uint8, device=d), 1e10 + 0j),
    "threshold_backward_bool": lambda d: aten.threshold_backward(
        torch.ones(3, dtype=torch.bool, device=d), torch.ones(3, dtype=torch.bool, device=d), 0.5),
    "threshold_backward_complex_grad": lambda d: aten.threshold_backward(
        torch.ones(3, dtype=torch.complex64, device=d), torch.ones(3, device=d), 0.5),
    "abs_out_complex64_into_complex128": lambda d: aten.abs.out(
        torch.tensor(_Z, device=d), out=torch.empty(0, dtype=torch.complex128, device=d)),
    "nansum_out_float_into_bool": lambda d: aten.nansum.out(torch.ones(2, device=d),
                                                            out=torch.empty(0, dtype=torch.bool, device=d)),
    "nansum_out_float_into_long": lambda d: aten.nansum.out(torch.ones(2, device=d),
                                                            out=torch.empty(0, dtype=torch.int64, device=d)),
    "nansum_out_bool_dtype_long_into_bool": lambda d: aten.nansum.out(
        torch.ones(2, dtype=torch.bool, device=d), dtype=torch.int64, out=torch.empty(0, dtype=torch.bool, device=d)),
    "avg_pool2d_backward_planes": _avg2((1, 1, 1), (3, 1, 1), [1, 2], [2, 4], True),
    "avg_pool2d_backward_height": _avg2((2, 3, 4), (2, 4, 4), [2, 2], [2, 2]),
    "avg_pool2d_backward_width": _avg2((2, 2, 3), (2, 4, 4), [2, 2], [2, 2]),
    "avg_pool2d_backward_rank": _avg2((2, 2), (2, 4, 4), [2, 2], [2, 2]),
    "avg_pool2d_backward_rank4": _avg2((1, 2, 2, 2), (2, 4, 4), [2, 2], [2, 2]),
    "avg_pool2d_backward_0d": _avg2((), (2, 4, 4), [2, 2], [2, 2]),
    "avg_pool2d_backward_grad_input": lambda d: aten.avg_pool2d_backward.grad_input(
        torch.ones(1, 1, 1, device=d), torch.ones(3, 1, 1, device=d), [1, 2], [2, 4], [0, 0], True, True, None,
        grad_input=torch.ones(3, 1, 1, device=d)),
    "avg_pool3d_backward_planes": _avg3((1, 2, 2, 2), (3, 4, 4, 4)),
    "avg_pool3d_backward_width": _avg3((3, 2, 2, 1), (3, 4, 4, 4)),
    "avg_pool3d_backward_rank": _avg3((3, 2, 2), (3, 4, 4, 4)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", REFUSED)
def test_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[case], mode)


def test_avg_pool_backward_batch_refused() -> None:
    """CPU reads past a grad_output with a smaller batch (heap corruption): refused, never computed."""
    with pytest.raises(RuntimeError, match="batch size"):
        aten.avg_pool2d_backward(torch.ones(3, 2, 2, 2, device="tpu"), torch.ones(1, 2, 4, 4, device="tpu"), [2, 2],
                                 [2, 2], [0, 0], False, True, None)
        torch.tpu.synchronize()


COMPILED_REFUSED = {
    "isinf_out_float": lambda d: aten.isinf.out(torch.ones((), device=d), out=torch.ones((), device=d)),
    "isinf_out_int": lambda d: aten.isinf.out(torch.ones(3, device=d), out=torch.ones(3, dtype=torch.int32, device=d)),
}


@pytest.mark.parametrize("case", COMPILED_REFUSED)
def test_refused_as_cpu_compiled(case: str) -> None:
    assert_refused_as_cpu_compiled(COMPILED_REFUSED[case])


def test_isinf_out_bool_compiled_computes() -> None:
    torch._dynamo.reset()
    x = torch.tensor([1.0, INF, -INF, NAN])
    out = torch.empty(4, dtype=torch.bool, device="tpu")
    got = torch.compile(lambda a, o: aten.isinf.out(a, out=o), backend="tpu")(x.to("tpu"), out)
    torch.testing.assert_close(got.cpu(), torch.isinf(x), rtol=0, atol=0)
