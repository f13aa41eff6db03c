"""Issue 17, fuzzer seeds 3-5 (cpu_raises): calls CPU refuses that tpu computed. Each raises CPU's exception class
and words on tpu in every eager mode (ops/cpu_raise_checks.py), under torch.compile where the op reaches a graph,
and the neighbouring calls CPU computes are computed."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu, assert_refused_as_cpu_compiled

import torchtpu  # noqa: F401

aten = torch.ops.aten
B, I32, F16, BF16, F32, F64, C64 = (torch.bool, torch.int32, torch.float16, torch.bfloat16, torch.float32,
                                    torch.float64, torch.complex64)


def _t(*shape: int, dtype: torch.dtype = F32, d: str = "cpu") -> torch.Tensor:
    return torch.ones(shape, dtype=dtype, device=d)


CASES: dict[str, Callable[[str], object]] = {
    "matrix_exp_not_square": lambda d: aten.linalg_matrix_exp.default(_t(3, 1, 5, d=d)),
    "matrix_exp_1d": lambda d: aten.linalg_matrix_exp.default(_t(3, d=d)),
    "histogram_min_over_max": lambda d: aten.histogram.bin_ct(_t(1, 2, d=d), 2, range=[2.0, 1.0]),
    "histogram_complex_min_over_max": lambda d: aten.histogram.bin_ct(_t(1, 2, dtype=C64, d=d), 2,
                                                                       range=[2.0, 1.0]),
    "histogramdd_bins_count": lambda d: aten._histogramdd_from_bin_cts.default(_t(2, 1, d=d), [1, 2],
                                                                              range=[0.5, 2.0]),
    "adaptive_avg_pool2d_backward_int": lambda d: aten._adaptive_avg_pool2d_backward.default(
        _t(1, 1, 4, d=d), _t(1, 1, 4, dtype=I32, d=d)),
    "adaptive_avg_pool2d_backward_double": lambda d: aten._adaptive_avg_pool2d_backward.default(
        _t(1, 2, 2, dtype=F64, d=d), _t(1, 2, 2, d=d)),
    "log_sigmoid_backward_buffer": lambda d: aten.log_sigmoid_backward.default(
        _t(dtype=F16, d=d), _t(2, dtype=F16, d=d), _t(2, dtype=BF16, d=d)),
    "masked_scatter_source": lambda d: aten.masked_scatter.default(_t(2, 5, dtype=C64, d=d), _t(dtype=B, d=d),
                                                                   _t(1, 1, 4, dtype=F64, d=d)),
    "linspace_half_overflow": lambda d: aten.linspace.default(0.955, 2.0 ** 40, 6, dtype=F16, device=d),
    "linspace_long_nan": lambda d: aten.linspace.default(float("nan"), 1.0, 3, dtype=torch.int64, device=d),
    "linspace_uint8_negative_float": lambda d: aten.linspace.out(-2.0, 0, 5, out=_t(4, dtype=torch.uint8, d=d)),
    "linspace_out_half": lambda d: aten.linspace.out(0.0, 1e6, 3, out=_t(3, dtype=F16, d=d)),
    "softshrink_backward_half": lambda d: aten.softshrink_backward.grad_input(
        _t(1, 2, dtype=F16, d=d), _t(1, 2, dtype=F16, d=d), 2.0 ** 40, grad_input=_t(0, dtype=F16, d=d)),
    "softshrink_backward_float": lambda d: aten.softshrink_backward.default(_t(2, d=d), _t(2, d=d), 1e39),
    "linalg_solve_bool": lambda d: aten._linalg_solve_ex.default(_t(5, 1, 1, dtype=B, d=d), _t(5, 1, 1, d=d),
                                                                 check_errors=False),
    "cumsum_0d_dim": lambda d: aten.cumsum.default(_t(dtype=torch.int16, d=d), 1),
    "hash_tensor_out_long": lambda d: aten.hash_tensor.out(_t(dtype=torch.int64, d=d), [-1],
                                                           out=_t(0, dtype=torch.int64, d=d)),
    "hash_tensor_out_dtype_before_dim": lambda d: aten.hash_tensor.out(_t(dtype=torch.int64, d=d), [3],
                                                                       out=_t(0, dtype=I32, d=d)),
}

# name -> fn(device): CPU computes these.
COMPUTED: dict[str, Callable[[str], object]] = {
    "matrix_exp_square": lambda d: aten.linalg_matrix_exp.default(torch.zeros(2, 3, 3, device=d)),
    "histogram_equal_range": lambda d: aten.histogram.bin_ct(_t(4, d=d), 2, range=[1.0, 1.0]),
    "adaptive_avg_pool2d_backward": lambda d: aten._adaptive_avg_pool2d_backward.default(_t(1, 2, 2, d=d),
                                                                                         _t(1, 4, 4, d=d)),
    "log_sigmoid_backward": lambda d: aten.log_sigmoid_backward.default(_t(2, d=d), _t(2, d=d), _t(2, d=d)),
    "linspace_half_one_step": lambda d: aten.linspace.default(1e10, 1.0, 1, dtype=F16, device=d),
    "linspace_half_inf": lambda d: aten.linspace.default(float("inf"), 1.0, 3, dtype=F16, device=d),
    "softshrink_backward_in_range": lambda d: aten.softshrink_backward.default(_t(2, d=d), _t(2, d=d), 1e30),
    "cumsum_0d": lambda d: aten.cumsum.default(_t(dtype=torch.int16, d=d), -1),
    "linspace_uint8_negative_int": lambda d: aten.linspace.out(-2, 0, 5, out=_t(4, dtype=torch.uint8, d=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)


@pytest.mark.parametrize("name", ["matrix_exp_not_square", "adaptive_avg_pool2d_backward_int",
                                  "log_sigmoid_backward_buffer"])
def test_refused_as_cpu_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(CASES[name], words=False)


@pytest.mark.parametrize("name", sorted(COMPUTED))
def test_computed_as_cpu(name: str) -> None:
    want, got = COMPUTED[name]("cpu"), COMPUTED[name]("tpu")
    for w, g in zip(*(r if isinstance(r, tuple) else (r,) for r in (want, got))):
        torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-5, equal_nan=True)
