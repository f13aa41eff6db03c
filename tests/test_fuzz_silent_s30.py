"""Silent wrong results the fuzzer found (seeds 30-32), refused or equal to CPU's now, every eager mode and compiled:
multi_margin_loss(_backward) with a target outside [0, C) (tpu wrapped -4 to class 1: CPU's "target out of range"),
leaky_relu's negative_slope read as the kernel's opmath type (a complex slope gave a complex result, 1e39 for a
float32 tensor -inf: CPU's overflow refusal), histc's edges converted to the input's dtype (uint8 with min=-5.435,
float16 with max=1e6, a uint8 input of one value 0 or 255: CPU's overflow refusal; a float32 input of one large value
widened to the type's next values, not v -+ 1: CPU's middle bin), var/std/var_mean with a NaN
correction (ATen's divisor N - correction if N > correction, else 0: inf, tpu gave NaN), _linalg_svd of a matrix with
a NaN (LAPACK's info -4: CPU's LinAlgError naming the batch element); and, where tpu refused what CPU computes,
scatter / scatter_add with a 0-d index or src into a tensor with dims (seed 30), _softmax_backward_data of an
integer tensor of no elements (seed 31), cummax/cummin of a 0-d or empty complex tensor and median/nanmedian of
no complex elements (seed 32). (Seed 32's CPU crash,
_logcumsumexp.out into a narrower out=: tests/test_fuzz_crash_rules.py.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

aten = torch.ops.aten
NAN = float("nan")


def _x(d: str, values: list, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64).to(dtype).to(d)


def _margin(target: list[int], backward: bool = False, reduction: int = 1) -> Callable[[str], object]:
    def case(d: str) -> object:
        x = torch.arange(10, dtype=torch.float32, device=d).reshape(2, 5) / 7
        t = torch.tensor(target, device=d)
        if backward:
            return aten.multi_margin_loss_backward(torch.tensor(1.0, device=d), x, t, 1, 1.0, None, reduction)
        return aten.multi_margin_loss(x, t, reduction=reduction)
    return case


def _histc(values: list, dtype: torch.dtype, out: bool = False, **kw: float) -> Callable[[str], object]:
    def case(d: str) -> object:
        x = _x(d, values, dtype)
        if out:
            return aten.histc.out(x, bins=5, out=torch.empty(0, dtype=dtype, device=d), **kw)
        return aten.histc(x, bins=5, **kw)
    return case


def _nan_svd(shape: tuple[int, ...], at: tuple[int, ...], dtype: torch.dtype = torch.float64,
             compute_uv: bool = True) -> Callable[[str], object]:
    def case(d: str) -> object:
        a = torch.arange(torch.Size(shape).numel(), dtype=torch.float64).reshape(shape).sin().to(dtype)
        a[at] = NAN
        return aten._linalg_svd(a.to(d), compute_uv=compute_uv)
    return case


# CPU refuses these; tpu computed a result
REFUSED = {
    "seed30_margin_negative_target": _margin([-4, -4], reduction=6),
    "margin_target_past_classes": _margin([1, 5], reduction=0),
    "margin_backward_negative_target": _margin([-4, 1], backward=True),
    "seed30_leaky_relu_complex_slope": lambda d: aten.leaky_relu(_x(d, [-1.0, 2.0]), complex(-2.1, 1)),
    "leaky_relu_slope_overflows_float": lambda d: aten.leaky_relu(_x(d, [-1.0, 2.0], torch.bfloat16), 1e39),
    "leaky_relu_inplace_complex_slope": lambda d: aten.leaky_relu_(_x(d, [-1.0, 2.0], torch.float64), 1j),
    "seed30_histc_uint8_negative_min": _histc([1, 255, 9, 9], torch.uint8, out=True, min=-5.435),
    "histc_int8_min_below_range": _histc([1, 25], torch.int8, min=-200.0),
    "histc_float16_max_overflows": _histc([1, 25], torch.float16, max=1e6),
    "histc_float32_max_overflows": _histc([1, 2], torch.float32, max=1e39),
    "histc_uint8_no_data": _histc([], torch.uint8),
    "histc_uint8_all_zero": _histc([0, 0], torch.uint8),
    "histc_int8_all_max": _histc([127, 127], torch.int8, out=True),
    "histc_float16_all_max": _histc([65504.0], torch.float16),
    "histc_empty_infinite_range": _histc([], torch.float32, min=float("inf"), max=float("inf")),
    "seed31_svd_nan_batch": _nan_svd((2, 5, 5), (1, 2, 2)),
    "svd_nan_matrix_no_uv": _nan_svd((4, 3), (1, 1), torch.float32, compute_uv=False),
    "svd_nan_complex": _nan_svd((3, 3), (0, 2), torch.complex64),
}

# CPU computes these; tpu's values differed (or its dtype)
COMPUTED = {
    "leaky_relu_complex_slope_no_imaginary": lambda d: [aten.leaky_relu(_x(d, [-1.0, 2.0, -3.5], dt), complex(2, 0))
                                                        for dt in (torch.float32, torch.float16, torch.bfloat16)],
    "seed32_var_mean_nan_correction": lambda d: [*aten.var_mean.correction(_x(d, [[1.0], [3.0]]), correction=NAN),
                                                 aten.var.correction(_x(d, [[1.0], [3.0]]), correction=NAN),
                                                 aten.std.correction(_x(d, [[1.0], [3.0]]), [0], correction=NAN),
                                                 aten.var.correction(_x(d, [[1.0], [3.0]]), [1], correction=NAN)],
    # one value v: ATen widens to the farther of v -+ 1 and float/double's next value (v -+ 1 rounds back to v here)
    "histc_one_large_value": lambda d: [_histc([1e8], torch.float32)(d), _histc([1e8, 1e8], torch.float32)(d),
                                        _histc([3.4e38], torch.float32)(d), _histc([1e17], torch.float64)(d)],
}

# tpu refused these (its IR's index rank) where CPU computes: a 0-d index or src is one element of self's rank
SCATTER = {
    "seed30_scatter_value_0d_index": lambda d: [aten.scatter.value(_x(d, [54.7, 27.9]), -1, torch.tensor(0, device=d),
                                                                   -3.759)],
    "seed30_scatter_add_0d_self_1d_src": lambda d: [aten.scatter_add(_x(d, [1], torch.uint8).reshape(()), 0,
                                                                     torch.tensor(0, device=d),
                                                                     _x(d, [5, 6], torch.uint8))],
    "scatter_src_0d_index_and_src": lambda d: [aten.scatter.src(torch.zeros(3, device=d), 0, torch.tensor(2, device=d),
                                                                torch.tensor(7.0, device=d)),
                                               aten.scatter.src(torch.zeros(3, device=d), 0, torch.tensor(2, device=d),
                                                                _x(d, [7.0, 8.0]))],
    "scatter_value_reduce_0d_index": lambda d: [aten.scatter.value_reduce(torch.ones(3, device=d), 0,
                                                                          torch.tensor(2, device=d), 3.0,
                                                                          reduce="multiply")],
    # CPU's softmax backward dispatches no kernel for no elements (seed 31: int64 [3, 0, 2, 3] into an int64 out=)
    "seed31_softmax_backward_empty_long": lambda d: [
        aten._softmax_backward_data.out(torch.ones(3, 0, 2, 3, dtype=torch.int64, device=d),
                                        torch.ones(3, 0, 2, 3, dtype=torch.int64, device=d), 1, torch.float32,
                                        grad_input=torch.empty(0, dtype=torch.int64, device=d))],
    # CPU's cummax/cummin of a 0-d or empty self and median/nanmedian of no elements dispatch no kernel (seed 32)
    "seed32_cummax_0d_complex": lambda d: list(aten.cummax(torch.tensor(1 + 2j, device=d), -1)),
    "cummin_empty_complex": lambda d: list(aten.cummin(torch.empty(0, 2, dtype=torch.complex64, device=d), 0)),
    "seed32_nanmedian_out_empty_complex": lambda d: [
        aten.nanmedian.out(torch.ones(4, 4, 1, 0, dtype=torch.complex64, device=d),
                           out=torch.empty(0, dtype=torch.complex64, device=d)),
        aten.median(torch.empty(0, dtype=torch.complex128, device=d))],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", SCATTER)
def test_scatter_0d_index_computed_as_cpu(case: str, mode: str) -> None:
    assert_exactly_cpu(SCATTER[case], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", REFUSED)
def test_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[case], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", COMPUTED)
def test_computed_as_cpu(case: str, mode: str) -> None:
    assert_exactly_cpu(COMPUTED[case], mode)


def test_histc_in_range_still_computes() -> None:
    assert_exactly_cpu(lambda d: [_histc([6.0, 6.0], torch.float16)(d), _histc([1, 25], torch.float16, max=65504.0)(d),
                                  _histc([], torch.float32, min=2.0, max=2.0)(d)], "DEFER_NEVER")


def test_margin_in_range_still_computes() -> None:
    for backward in (False, True):
        case = _margin([0, 4], backward=backward)
        torch.testing.assert_close(case("tpu").cpu(), case("cpu"))


@pytest.mark.parametrize("case", ["leaky_relu_slope_overflows_float", "seed30_histc_uint8_negative_min",
                                  "histc_uint8_all_zero", "seed31_svd_nan_batch"])
def test_compiled(case: str) -> None:
    assert_refused_as_cpu_compiled(REFUSED[case])



def test_compiled_nan_correction() -> None:
    torch._dynamo.reset()
    fn = torch.compile(lambda x: aten.var_mean.correction(x, correction=NAN), backend="tpu")
    for got, want in zip(fn(_x("tpu", [[1.0], [3.0]])), COMPUTED["seed32_var_mean_nan_correction"]("cpu"),
                         strict=False):
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True)
