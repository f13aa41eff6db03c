"""Silent results the fuzzer found (seeds 36-39), refused or equal to CPU's now, in every eager mode and compiled:
floor / trunc division of a float16/bfloat16 tensor by a scalar (CPU's kernel reads the scalar's original value),
the deprecated cholesky of a matrix that is not positive-definite (CPU raises potrf's LinAlgError; tpu gave NaN),
complex uniform_ (CPU draws both parts and checks the bounds in the part's type; tpu drew the real part only and
checked nothing), all/any into a uint8 out= (CPU reduces the input cast to uint8), fill_.Tensor of an expanded
self (copy_'s overlap check), _adaptive_avg_pool2d/3d_backward's dtype checks, std_mean whose variance overflows
float32 (CPU's root of the double variance), xlogy / xlog1py in float16/bfloat16 (CPU rounds log(y) to the type
before the product); under torch.compile, searchsorted / bucketize's out= dtype and the batch norm forward checks
(a 3-d running_var computed a result of another shape); seed 40: training rrelu_with_noise with lower > upper
(CPU's uniform distribution refuses it where an element is <= 0)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

aten = torch.ops.aten
bf16, f16 = torch.bfloat16, torch.float16


def _t(values: list, dtype: torch.dtype = torch.float32, d: str = "cpu") -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=d)


def _pool_grad(gd: torch.dtype, sd: torch.dtype, d: str, nd: int = 3, od: torch.dtype | None = None) -> object:
    op = aten._adaptive_avg_pool3d_backward if nd == 3 else aten._adaptive_avg_pool2d_backward
    g, s = torch.ones(5, 4, 5, 4, dtype=gd, device=d), torch.ones(5, 4, 5, 4, dtype=sd, device=d)
    if od is None:
        return op.default(g, s)
    return op.out(g, s, out=torch.empty(0, dtype=od, device=d))


def _expanded(d: str) -> torch.Tensor:
    return torch.zeros(1, 1, device=d).expand(1, 3)


REFUSED = {
    # seed 36: cholesky always raises potrf's info (linalg_cholesky_ex leaves it to check_errors)
    "cholesky_not_pd": lambda d: torch.cholesky(_t([[-0.37, 1.0], [1.0, 2.0]], d=d)),
    "cholesky_not_pd_upper": lambda d: torch.cholesky(_t([[4.0, 2.0], [2.0, -3.0]], d=d), upper=True),
    "cholesky_not_pd_batch": lambda d: torch.cholesky(_t([[[4.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]], d=d)),
    "cholesky_nan_out": lambda d: torch.cholesky(_t([[float("nan"), 0.0], [0.0, 1.0]], d=d),
                                                 out=torch.empty(2, 2, device=d)),
    # seed 36: complex uniform_ checks its bounds in the part's type
    "uniform_complex_nan_to": lambda d: aten.uniform.out(torch.ones(4, 1, 2, dtype=torch.complex64, device=d),
                                                         to=float("nan"), out=torch.empty(0, dtype=torch.complex64,
                                                                                          device=d)),
    "uniform_complex_inf_from": lambda d: torch.empty(3, dtype=torch.complex128, device=d).uniform_(-float("inf"), 0),
    "uniform_complex64_huge_to": lambda d: torch.empty(3, dtype=torch.complex64, device=d).uniform_(0, 1e300),
    # seed 38: fill_ with a 0-d tensor on self's device is copy_, which refuses an expanded self
    "fill_tensor_expanded": lambda d: _expanded(d).fill_(torch.tensor(2.0, device=d)),
    # seed 38: the 3d kernel dispatches on the input and reads grad_output (and out=) as its type
    "adaptive_avg_pool3d_backward_grad_long": lambda d: _pool_grad(torch.int64, f16, d),
    "adaptive_avg_pool3d_backward_grad_long_out": lambda d: _pool_grad(torch.int64, f16, d, od=torch.int64),
    "adaptive_avg_pool3d_backward_grad_float": lambda d: _pool_grad(torch.float32, torch.float64, d),
    "adaptive_avg_pool3d_backward_long": lambda d: _pool_grad(torch.int64, torch.int64, d),
    "adaptive_avg_pool3d_backward_bool": lambda d: _pool_grad(torch.bool, torch.bool, d),
    "adaptive_avg_pool2d_backward_long": lambda d: _pool_grad(torch.int64, torch.int64, d, nd=2),
    # seed 40: training rrelu draws uniform(lower, upper) for each element <= 0, which checks from <= to
    "rrelu_with_noise_lower_above_upper": lambda d: aten.rrelu_with_noise(
        _t([[-1.0, 2.0]], torch.float64, d), torch.zeros(1, 2, dtype=torch.float64, device=d), 4, 0, True),
}

COMPUTED = {
    # seed 36: ATen's div_floor / div_trunc read a scalar divisor of a reduced float tensor as float
    "floor_divide_bf16_scalar": lambda d: [torch.floor_divide(
        _t([-157.0, 158.0, 160.0, -160.0, 161.0, 156.0], bf16, d), -3.724)],
    "floor_divide_f16_scalar": lambda d: [torch.floor_divide(torch.arange(-300, 300, dtype=f16, device=d), -3.724)],
    "div_floor_bf16_scalar": lambda d: [torch.div(torch.arange(-300, 300, dtype=bf16, device=d), -3.724,
                                                  rounding_mode="floor")],
    "div_trunc_bf16_scalar": lambda d: [torch.div(torch.arange(-300, 300, dtype=bf16, device=d), -3.724,
                                                  rounding_mode="trunc")],
    "floor_divide_bf16_int_one_element": lambda d: [torch.floor_divide(
        _t([4096.0, 3.0, -5.0], bf16, d), torch.tensor([2049], dtype=torch.int32, device=d))],
    # seed 38: all/any into a uint8 out= reduce the input cast to uint8 (0.5 and -0.56 are 0)
    "all_uint8_out": lambda d: [torch.all(_t([[[-0.56], [1.47], [0.18]]], torch.float64, d), -2,
                                          out=torch.empty(0, dtype=torch.uint8, device=d))],
    "any_uint8_out": lambda d: [torch.any(_t([[0.5, 0.2], [256.0, 0.0]], d=d), 1,
                                          out=torch.empty(0, dtype=torch.uint8, device=d))],
    "all_uint8_out_all": lambda d: [torch.all(_t([2.0, 0.7], d=d), out=torch.empty(0, dtype=torch.uint8, device=d))],
    # seed 39: std_mean's std is the root of the double variance (1.25e59 overflows float32, its root does not)
    "std_mean_overflowing_variance": lambda d: list(torch.std_mean(
        _t([1.0, 2.0, -1e30, 80.0, -0.0, 5.0, -19.0, 3.0], d=d).reshape(4, 1, 2), dim=None, keepdim=True)),
    "std_mean_out": lambda d: list(aten.std_mean.correction_out(
        _t([1.0, 2.0, -1e30, 80.0, -0.0, 5.0, -19.0, 3.0], d=d).reshape(4, 1, 2), keepdim=True,
        out0=torch.empty(4, 1, 2, device=d), out1=torch.empty(0, device=d))),
    # seed 39: CPU's xlogy kernel in scalar_t: log(y) rounded to bfloat16 / float16 before the product
    "xlogy_bf16_scalar_out": lambda d: [torch.xlogy(_t([[-0.1098632812, 0.8671875, -1.921875]], bf16, d), 1.259,
                                                    out=torch.empty(0, device=d))],
    "xlogy_bf16": lambda d: [torch.xlogy(torch.linspace(-3, 3, 200, dtype=bf16, device=d),
                                         torch.linspace(0.01, 5, 200, dtype=bf16, device=d))],
    "xlogy_f16_scalar_self": lambda d: [torch.xlogy(2.5, torch.linspace(0.01, 5, 200, dtype=f16, device=d))],
    "xlog1py_bf16": lambda d: [torch.special.xlog1py(torch.linspace(-3, 3, 200, dtype=bf16, device=d),
                                                     torch.linspace(-0.5, 5, 200, dtype=bf16, device=d))],
}

# tpu refused where CPU computes (tpu_raises)
NOW_COMPUTED = {
    # seed 37: the mean's 1 / numel of no element
    "smooth_l1_loss_backward_empty_mean": lambda d: [aten.smooth_l1_loss_backward(
        torch.ones(0, 1, 0, 4, device=d), torch.ones(0, 1, 0, 4, device=d),
        torch.ones(0, 1, 0, 4, dtype=torch.int64, device=d), 1, -1.0)],
}

# equal to CPU's before the fixes too: the cases next to them that must stay as they were
STILL_COMPUTED = {
    "rrelu_with_noise_lower_above_upper_positive": lambda d: [aten.rrelu_with_noise(
        _t([[1.0, 2.0]], torch.float64, d), torch.zeros(1, 2, dtype=torch.float64, device=d), 4, 0, True)],
    "huber_loss_backward_empty_mean": lambda d: [aten.huber_loss_backward(
        torch.ones(0, 3, device=d), torch.ones(0, 3, device=d), torch.ones(0, 3, device=d), 1, -1.0)],
    "all_uint8_out_one_element": lambda d: [torch.all(_t([[0.5]], d=d), 0,
                                                      out=torch.empty(0, dtype=torch.uint8, device=d))],
    "all_bool_out": lambda d: [torch.all(_t([[0.5, 2.0]], d=d), 1, out=torch.empty(0, dtype=torch.bool, device=d))],
    "cholesky_positive_definite": lambda d: [torch.cholesky(_t([[4.0, 2.0], [2.0, 3.0]], d=d)),
                                             torch.cholesky(_t([[4.0, 2.0], [2.0, 3.0]], d=d), upper=True)],
}

COMPILE_REFUSED = {
    # seed 37: the meta kernel takes any out= dtype
    "searchsorted_uint8_out": lambda d: aten.searchsorted.Tensor_out(
        torch.arange(4, dtype=torch.uint8, device=d), torch.ones(3, device=d), out_int32=True, right=True,
        out=torch.empty(3, dtype=torch.uint8, device=d)),
    "bucketize_uint8_out": lambda d: torch.bucketize(torch.ones(3, device=d), torch.arange(4.0, device=d),
                                                     out=torch.empty(3, dtype=torch.uint8, device=d)),
    # seed 37: upstream's decomposition checks nothing (a [3, 4, 4] result)
    "batch_norm_with_update_3d_running_var": lambda d: aten._batch_norm_with_update(
        torch.ones(3, 1, 4, dtype=bf16, device=d), torch.ones(4, dtype=bf16, device=d),
        torch.ones(1, dtype=bf16, device=d), torch.zeros(1, dtype=bf16, device=d),
        torch.ones(4, 4, 2, dtype=bf16, device=d).transpose(-1, -2), 0.262, 1e-5),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[case], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(COMPUTED))
def test_computed_as_cpu(case: str, mode: str) -> None:
    assert_exactly_cpu(COMPUTED[case], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(NOW_COMPUTED))
def test_now_computed_as_cpu(case: str, mode: str) -> None:
    assert_exactly_cpu(NOW_COMPUTED[case], mode)


@pytest.mark.parametrize("mode", MODES)
def test_uniform_of_expanded_self_draws_into_clone_layout(mode: str) -> None:
    """seed 38: CPU draws into self.clone(); upstream's decomposition kept the stride-0 dims (refused)."""
    with torch.tpu.eager_mode(mode):
        x = torch.zeros(2, 1, device="tpu").expand(2, 3)
        r, out = aten.uniform(x, 2.0, 5.0), torch.empty(0, device="tpu")
        aten.uniform.out(x, out=out)
        assert r.stride() == (3, 1) and out.shape == (2, 3)
        r = r.cpu()
        assert r.min() >= 2.0 and r.max() < 5.0 and len(set(r.flatten().tolist())) == 6


@pytest.mark.parametrize("mode", MODES)
def test_complex_uniform_draws_both_parts(mode: str) -> None:
    with torch.tpu.eager_mode(mode):
        z = torch.empty(4000, dtype=torch.complex64, device="tpu").uniform_(-1.0, 3.0).cpu()
    for part in (z.real, z.imag):
        assert part.min() >= -1.0 and part.max() < 3.0
        assert abs(part.mean().item() - 1.0) < 0.1
    assert not torch.equal(z.real, z.imag)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(STILL_COMPUTED))
def test_still_computed_as_cpu(case: str, mode: str) -> None:
    assert_exactly_cpu(STILL_COMPUTED[case], mode)


@pytest.mark.parametrize("mode", MODES)
def test_fill_of_expanded_self_from_number_or_cpu_value(mode: str) -> None:
    """fill_.Scalar and a value on another device (ATen's fill_out of value.item()) write an expanded self."""
    with torch.tpu.eager_mode(mode):
        a, b = _expanded("tpu").fill_(2.0), _expanded("tpu").fill_(torch.tensor(3.0))
        assert a.cpu().tolist() == [[2.0, 2.0, 2.0]] and b.cpu().tolist() == [[3.0, 3.0, 3.0]]


@pytest.mark.parametrize("case", sorted(COMPILE_REFUSED))
def test_compiled_refused_as_cpu(case: str) -> None:
    assert_refused_as_cpu_compiled(COMPILE_REFUSED[case])


def test_compiled_xlogy_reduced_type_as_cpu() -> None:
    def calls(d: str) -> list[torch.Tensor]:
        x = torch.linspace(-3, 3, 200, dtype=bf16, device=d)
        y = torch.linspace(0.01, 5, 200, dtype=bf16, device=d)
        return [torch.xlogy(x, 1.259), torch.xlogy(x, y), torch.special.xlog1py(x, y), torch.xlogy(2.5, y.half())]

    torch._dynamo.reset()
    got = torch.compile(lambda: calls("tpu"), backend="tpu")()
    for g, c in zip(got, calls("cpu"), strict=True):
        torch.testing.assert_close(g.cpu(), c, rtol=0, atol=0, equal_nan=True)
