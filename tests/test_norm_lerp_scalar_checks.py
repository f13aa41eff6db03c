"""Silent results where CPU refuses (fuzz seed 13 and probing around it): a vector norm without an identity
(ord < 0 or inf) of no elements, linalg_vector_norm's dtype= checks, and _foreach_lerp's / complex lerp's Scalar
weight that overflows the tensors' opmath type. Each case must raise on tpu as on CPU, in every eager mode."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

INF = float("inf")
C64, F64, BF16, I64 = torch.complex64, torch.float64, torch.bfloat16, torch.int64


def empty(d: str, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype, device=d)


def ones(d: str, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.ones(*shape, dtype=dtype, device=d)


REFUSED = {
    "inf_all": lambda d: torch.linalg.vector_norm(empty(d, 0), INF),
    "neg_all": lambda d: torch.linalg.vector_norm(empty(d, 0), -1),
    "neg_inf_empty_dims": lambda d: torch.linalg.vector_norm(empty(d, 3, 0), -INF, dim=()),
    "inf_dim_named_as_given": lambda d: torch.linalg.vector_norm(empty(d, 3, 0), INF, dim=-1),
    "first_empty_dim_of_list": lambda d: torch.linalg.vector_norm(empty(d, 0, 3), -2.5, dim=(1, -2)),
    "dim_out_of_range_first": lambda d: torch.linalg.vector_norm(empty(d, 0, 3), INF, dim=5),
    "before_complex_dtype": lambda d: torch.linalg.vector_norm(empty(d, 0), INF, dtype=C64),
    "complex_input": lambda d: torch.linalg.vector_norm(empty(d, 2, 0, dtype=C64), -1, dim=1),
    "norm_op": lambda d: torch.ops.aten.norm.ScalarOpt_dim(empty(d, 2, 0), INF, [1]),
    "norm_op_dtype": lambda d: torch.ops.aten.norm.ScalarOpt_dim_dtype(empty(d, 0), INF, [0], dtype=C64),
    "linalg_norm": lambda d: torch.linalg.norm(empty(d, 0), -INF),
    "narrowing_dtype": lambda d: torch.linalg.vector_norm(ones(d, 2), dtype=torch.float16),
    "real_input_complex_dtype": lambda d: torch.linalg.vector_norm(ones(d, 2), dtype=C64),
    "foreach_inf": lambda d: torch._foreach_norm([ones(d, 2), empty(d, 0)], INF),
    "foreach_inf_before_int": lambda d: torch._foreach_norm([empty(d, 0), ones(d, 2, dtype=torch.int32)], INF),
    "foreach_int_first": lambda d: torch._foreach_norm([ones(d, 2, dtype=torch.int32), empty(d, 0)], INF),
    "foreach_neg_inf": lambda d: torch._foreach_norm([ones(d, 2), empty(d, 0)], -INF),
    "foreach_negative": lambda d: torch._foreach_norm([empty(d, 0)], -1),
    "lerp_complex_weight": lambda d: torch._foreach_lerp([ones(d, 2)], [ones(d, 2)], 1 + 2j),
    "lerp_float_overflow": lambda d: torch._foreach_lerp([ones(d, 2)], [ones(d, 2)], 1e300),
    "lerp_inplace": lambda d: torch._foreach_lerp_([ones(d, 2)], [ones(d, 2)], 1e300),
    "lerp_bf16_opmath": lambda d: torch._foreach_lerp([ones(d, 2, dtype=BF16)], [ones(d, 2, dtype=BF16)], 1e300),
    "lerp_complex_tensors": lambda d: torch._foreach_lerp([ones(d, 2, dtype=C64)], [ones(d, 2, dtype=C64)], 1e300),
    "lerp_scalar_list": lambda d: torch._foreach_lerp([ones(d, 2), ones(d, 2, dtype=F64)],
                                                      [ones(d, 2), ones(d, 2, dtype=F64)], [0.5, 1 + 1j]),
    "lerp_pairs_in_order": lambda d: torch._foreach_lerp([ones(d, 2), ones(d, 2)], [ones(d, 2), ones(d, 2, dtype=F64)],
                                                         [1e300, 0.5]),
    "lerp_dtype_pair_first": lambda d: torch._foreach_lerp([ones(d, 2), ones(d, 2)],
                                                           [ones(d, 2, dtype=F64), ones(d, 2)], [0.5, 1e300]),
    "lerp_lengths_first": lambda d: torch._foreach_lerp([ones(d, 2), ones(d, 2)], [ones(d, 2)], 1e300),
    "lerp_complex64": lambda d: torch.lerp(ones(d, 2, dtype=C64), ones(d, 2, dtype=C64), 1e300),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_as_on_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[name], mode)


@pytest.mark.parametrize("name", ["inf_all", "first_empty_dim_of_list", "narrowing_dtype"])
def test_refused_under_compile(name: str) -> None:
    assert_refused_as_cpu_compiled(REFUSED[name])


@pytest.mark.parametrize("mode", MODES)
def test_norms_with_an_identity_or_a_nonempty_dim_still_compute(mode: str) -> None:
    assert_exactly_cpu(lambda d: [
        torch.linalg.vector_norm(empty(d, 0), 0), torch.linalg.vector_norm(empty(d, 0), 2),
        torch.linalg.vector_norm(empty(d, 3, 0), INF, dim=0), torch.linalg.vector_norm(empty(d, 0), float("nan")),
        torch.linalg.vector_norm(ones(d, 3), -INF), *torch._foreach_norm([empty(d, 0), ones(d, 2)], 2),
        torch.linalg.vector_norm(ones(d, 2, dtype=torch.float16), dtype=torch.float32),
        *torch._foreach_lerp([ones(d, 2, dtype=F64)], [ones(d, 2, dtype=F64)], 1e300),
        *torch._foreach_lerp([ones(d, 2, dtype=C64)], [ones(d, 2, dtype=C64)], 0.5 + 0.5j),
    ], mode)


ORDER = {  # which of several wrong arguments CPU names
    "norm_dims_before_dtype": lambda d: torch.ops.aten.norm.ScalarOpt_dim_dtype(ones(d, 4, 2, 4, dtype=F64), None, [-4],
                                                                              True, dtype=torch.float32),
    "norm_dims_before_identity": lambda d: torch.ops.aten.norm.ScalarOpt_dim_dtype(empty(d, 0, 2), INF, [2], True,
                                                                                 dtype=C64),
    "vector_norm_dtype_before_dims": lambda d: torch.linalg.vector_norm(ones(d, 4, 2, dtype=F64), 2, [-4],
                                                                        dtype=torch.float32),
    "foreach_bool_ord": lambda d: torch._foreach_norm([ones(d, 2)], True),
    "foreach_complex_ord": lambda d: torch._foreach_norm([ones(d, 2, dtype=torch.int32)], 1j),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(ORDER))
def test_first_wrong_argument_named_as_on_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(ORDER[name], mode)


@pytest.mark.parametrize("mode", MODES)
def test_foreach_lerp_refuses_an_integer_pair_before_a_later_pairs_dtypes(mode: str) -> None:  # fuzz seed 13
    u8 = torch.uint8
    assert_refused_as_cpu(lambda d: torch._foreach_lerp_(
        [ones(d, 0, 4, dtype=u8), ones(d, 0, 4, dtype=u8)], [ones(d, dtype=u8), ones(d, 2, 4, dtype=torch.int64)],
        0.5 + 1j), mode)


@pytest.mark.parametrize("mode", MODES)
def test_foreach_lerp_list_refuses_an_integer_pair_first(mode: str) -> None:
    u8 = torch.uint8
    assert_refused_as_cpu(lambda d: torch._foreach_lerp(
        [ones(d, 4, 1, dtype=u8), ones(d)], [ones(d, dtype=u8), ones(d, dtype=u8)], [ones(d, dtype=u8)] * 2), mode)


@pytest.mark.parametrize("mode", MODES)
def test_norm_refuses_an_integer_input_before_its_dims(mode: str) -> None:
    assert_refused_as_cpu(lambda d: torch.ops.aten.norm.ScalarOpt_dim(ones(d, 2, 1, dtype=torch.int32), None, [-3]),
                          mode)


LERP_SHAPES = {  # TensorIterator's shapes before the kernel's dispatch and its Scalar
    "int_pair": lambda d: torch._foreach_lerp([ones(d, 4, dtype=I64)], [ones(d, 2, 1, 2, dtype=I64)], 1.2),
    "float_pair_before_overflow": lambda d: torch._foreach_lerp([ones(d, 4)], [ones(d, 2, 1, 2)], 1e300),
    "inplace_grows_self": lambda d: torch._foreach_lerp_([ones(d, 3)], [ones(d, 2, 3)], 0.5),
    "inplace_list": lambda d: torch._foreach_lerp_([ones(d, 4, 3, 1, dtype=I64)], [ones(d, 2, 5, dtype=I64)],
                                                   [ones(d, dtype=I64)]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(LERP_SHAPES))
def test_foreach_lerp_shapes_first(name: str, mode: str) -> None:
    assert_refused_as_cpu(LERP_SHAPES[name], mode)


@pytest.mark.parametrize("mode", MODES)
def test_complex_order_refused(mode: str) -> None:
    assert_refused_as_cpu(lambda d: torch.linalg.vector_norm(ones(d, 1, 2, dtype=BF16), 0.5 + 1j), mode)
    assert_refused_as_cpu(lambda d: torch.ops.aten.norm.ScalarOpt_dim(empty(d, 0, 3), 0.1 + 1j, [0]), mode)
