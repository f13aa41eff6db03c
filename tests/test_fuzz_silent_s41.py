"""Fuzz seeds 41-45 (issue 17): silent results fixed; calls CPU refuses that tpu computed are refused in CPU's
class and words.

- _cdist_forward with a NaN p (ATen's TORCH_CHECK(p >= 0) refuses NaN; tpu checked p < 0: seed 41).
- adaptive_max_pool{2,3}d_backward with int32 indices (the kernel's indices.data_ptr<int64_t>(), an empty batch
  too: seed 45).
- pow.Tensor_Scalar (and pow_, _foreach_pow(_)) with an exponent its float16/bfloat16/integer result type cannot
  hold (the kernel's exp_scalar.to<scalar_t>(): float16 ** 70000.0, int8 ** 300: seed 45, _foreach_pow_.Scalar).
- _cholesky_solve_helper (and .out) with self and A of two dtypes (the kernel reads A as self's type: found fuzzing
  known.json's stale entries).
- cholesky_inverse of a factor with a zero on its diagonal: potri's LinAlgError in CPU's words (a prepare step reads
  the diagonal, so such a call synchronizes; seeds 42, 43).
- native_batch_norm_backward / batch_norm_backward with a 2-d weight or statistic (CPU's 1-d TensorAccessor check,
  which a 2-d float32/float64 input skips: seed 43).
- mean.dtype_out without dtype= reads the input in the out tensor's dtype, as mean.out (bfloat16 into float32:
  seed 41).
"""

from __future__ import annotations

import math

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu

import torchtpu  # noqa: F401

aten = torch.ops.aten


def _t(shape: tuple[int, ...], dtype: torch.dtype, d: str, value: float = 1.0) -> torch.Tensor:
    return torch.full(shape, value, dtype=dtype, device=d)


@pytest.mark.parametrize("mode", MODES)
def test_cdist_nan_p_refused(mode: str) -> None:
    x = torch.randn(2, 5)
    assert_refused_as_cpu(lambda d: aten._cdist_forward.default(x.to(d), x.to(d), float("nan"), None), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(1, 5, 2), (0, 5, 2), (1, 5, 2, 2)])
def test_adaptive_max_backward_int32_indices_refused(mode: str, shape: tuple[int, ...]) -> None:
    op = aten.adaptive_max_pool2d_backward.default if len(shape) == 3 else aten.adaptive_max_pool3d_backward.default

    def case(d: str) -> torch.Tensor:
        return op(_t(shape, torch.float32, d), _t(shape, torch.float32, d), _t(shape, torch.int32, d, 0))

    assert_refused_as_cpu(case, mode)


OVERFLOWING = [(torch.float16, 70000.0), (torch.float16, 2.0 ** 40), (torch.bfloat16, 1e300), (torch.int8, 300),
               (torch.uint8, 2 ** 40), (torch.int32, 2 ** 40)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("dtype", "exponent"), OVERFLOWING)
def test_pow_exponent_overflowing_the_type_refused(mode: str, dtype: torch.dtype, exponent: float) -> None:
    assert_refused_as_cpu(lambda d: aten.pow.Tensor_Scalar(_t((3,), dtype, d), exponent), mode)
    assert_refused_as_cpu(lambda d: aten.pow_.Scalar(_t((3,), dtype, d), exponent), mode)
    assert_refused_as_cpu(lambda d: aten._foreach_pow.Scalar([_t((3,), dtype, d)], exponent), mode)
    assert_refused_as_cpu(lambda d: aten._foreach_pow_.Scalar([_t((1, 3, 1), dtype, d)], exponent), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("dtype", "exponent"), [(torch.float16, 65504.0), (torch.float16, float("inf")),
                                                 (torch.bfloat16, 1e38), (torch.float32, 1e300),
                                                 (torch.int8, 127), (torch.float16, float("nan"))])
def test_pow_exponent_the_type_holds_still_computed(mode: str, dtype: torch.dtype, exponent: float) -> None:
    assert_exactly_cpu(lambda d: [aten.pow.Tensor_Scalar(_t((3,), dtype, d), exponent)], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float64, torch.complex64])
def test_mean_dtype_out_reads_the_input_in_the_out_dtype(mode: str, out_dtype: torch.dtype) -> None:
    # mean.dtype_out is mean.out over every dim: a bfloat16 input into a float32 out= is not rounded to bfloat16
    # (fuzz seed 41: [[0.00934, 0.105]] gave 0.0571289, CPU 0.0571594)
    x = torch.tensor([[0.00933837890625, 0.10498046875], [1.0, 2.0078125]], dtype=torch.bfloat16)

    def calls(d: str) -> list[torch.Tensor]:
        out = torch.empty(0, dtype=out_dtype, device=d)
        aten.mean.dtype_out(x.to(d), dtype=None, out=out)
        return [out]

    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("self_dtype", "a_dtype"), [(torch.float32, torch.complex64), (torch.complex64, torch.float32),
                                                     (torch.float32, torch.float16), (torch.float64, torch.float32)])
def test_cholesky_solve_helper_operands_of_two_dtypes_refused(mode: str, self_dtype: torch.dtype,
                                                              a_dtype: torch.dtype) -> None:
    # CPU's kernel dispatches on self and reads A as its type (found fuzzing known.json's stale entries: tpu solved)
    a = torch.eye(4) + 0.1

    def case(d: str) -> torch.Tensor:
        return aten._cholesky_solve_helper.default(_t((4, 1), self_dtype, d), a.to(a_dtype).to(d), True)

    def case_out(d: str) -> torch.Tensor:
        out = torch.empty(0, dtype=self_dtype, device=d)
        return aten._cholesky_solve_helper.out(_t((4, 1), self_dtype, d), a.to(a_dtype).to(d), True, out=out)

    assert_refused_as_cpu(case, mode)
    assert_refused_as_cpu(case_out, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_cholesky_inverse_of_a_factor_with_a_zero_diagonal_refused(mode: str, dtype: torch.dtype) -> None:
    # potri's trtri refuses it (fuzz seeds 42, 43: tpu gave inf/NaN); the first zero of each batch element counts
    factor = torch.tril(torch.arange(1.0, 97.0).reshape(6, 4, 4) % 7 + 1).to(dtype)
    factor[5, 3, 3] = 0
    factor[1, 2, 2] = 0
    factor[1, 1, 1] = 0
    assert_refused_as_cpu(lambda d: torch.cholesky_inverse(factor.to(d)), mode)
    assert_refused_as_cpu(lambda d: torch.cholesky_inverse(factor[5].to(d), upper=True), mode)
    assert_exactly_cpu(lambda d: [torch.cholesky_inverse(factor[0].to(d)).isfinite()], mode)


BN_VECTORS = ["weight", "running_mean", "running_var", "save_mean", "save_invstd"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("dtype", "shape"), [(torch.bfloat16, (1, 1)), (torch.bfloat16, (2, 3)),
                                              (torch.float32, (2, 3, 4)), (torch.float64, (2, 3, 2, 2))])
@pytest.mark.parametrize("two_d", BN_VECTORS)
@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_backward_two_dim_vector_refused(mode: str, dtype: torch.dtype, shape: tuple[int, ...],
                                                   two_d: str, train: bool) -> None:
    # batch_norm_backward_cpu_template's 1-d accessors (fuzz seed 43: bfloat16 [1, 1] with a [1, 1] save_mean)
    c = shape[1]
    x = torch.linspace(-1, 1, math.prod(shape)).reshape(shape).to(dtype)

    def case(d: str) -> object:
        v = {k: torch.full((c,), 0.0 if "mean" in k else 1.0, dtype=dtype) for k in BN_VECTORS}
        v[two_d] = v[two_d].reshape(1, c)
        v = {k: t.to(d) for k, t in v.items()}
        return aten.native_batch_norm_backward(torch.ones(shape, dtype=dtype, device=d), x.to(d), v["weight"],
                                               v["running_mean"], v["running_var"], v["save_mean"],
                                               v["save_invstd"], train, 1e-5, [True, True, True])

    assert_refused_as_cpu(case, mode)


@pytest.mark.parametrize("mode", MODES)
def test_batch_norm_backward_two_dim_vector_of_a_2d_float_input_computed(mode: str) -> None:
    x = torch.linspace(-1, 1, 6).reshape(2, 3)

    def calls(d: str) -> list[torch.Tensor]:
        out = aten.native_batch_norm_backward(torch.ones(2, 3, device=d), x.to(d), torch.ones(1, 3, device=d), None,
                                              None, torch.zeros(3, device=d), torch.ones(3, device=d), True, 1e-5,
                                              [True, False, False])
        return [out[0]]

    assert_exactly_cpu(calls, mode)
