"""CPU's checks that tpu skipped and computed a result instead (issue 17, fuzzer known.json entries "a value check CPU
makes and tpu skips" / "an index/range check"): out= dtypes of signbit / isposinf / isneginf / nonzero_static /
take, take's index dtype, isin's bool / complex Scalar or tensor, the checked Scalar conversions of threshold and
elu_backward, bernoulli's check of each tensor p it reads (0 <= p <= 1, NaN refused; made when the program runs),
the fused weight-norm backward's contiguity checks of its saved tensors, and cdist's NaN p (linalg_lstsq's NaN,
which MKL refuses through ATen's internal assert, is a known.json entry: tpu returns the NaN solution, as CUDA's
solvers do).
Each call must raise on tpu as on CPU (class and words) in every eager mode and, where the op reaches a graph,
compiled."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled, ones

import torchtpu  # noqa: F401

aten = torch.ops.aten
i32, i64, bf16, f16 = torch.int32, torch.int64, torch.bfloat16, torch.float16

CASES = {
    "signbit_out_float": lambda d: aten.signbit.out(ones(2, 3, d=d), out=ones(0, d=d)),
    # test_unary_ufuncs' test_isposinf_isneginf_non_boolean_output (tpu gave the out= dtype rule's words)
    "isposinf_out_float": lambda d: aten.isposinf.out(ones(3, d=d), out=ones(3, d=d)),
    "isneginf_out_int": lambda d: aten.isneginf.out(ones(3, d=d), out=ones(3, dtype=i64, d=d)),
    "isposinf_out_complex": lambda d: aten.isposinf.out(ones(3, dtype=torch.complex64, d=d), out=ones(3, d=d)),
    "nonzero_static_size": lambda d: aten.nonzero_static.out(ones(3, d=d), size=-1, out=ones(0, dtype=i64, d=d)),
    "nonzero_static_out": lambda d: aten.nonzero_static.out(ones(1, 5, dtype=i64, d=d), size=3, out=ones(0, d=d)),
    "take_index_int": lambda d: aten.take(ones(1, 4, 3, dtype=torch.uint8, d=d), ones(2, dtype=i32, d=d) * 0),
    "take_out_index_int": lambda d: aten.take.out(ones(3, d=d), ones(2, dtype=i32, d=d) * 0, out=ones(0, d=d)),
    "take_out_dtype": lambda d: aten.take.out(ones(2, 4, dtype=torch.bool, d=d), ones(4, 5, dtype=i64, d=d) * 0,
                                             out=ones(4, 5, dtype=i32, d=d)),
    "isin_bool_scalar": lambda d: aten.isin.Tensor_Scalar(ones(3, 1, d=d), False, invert=True),
    "isin_complex_scalar": lambda d: aten.isin.Tensor_Scalar(ones(3, d=d), 1 + 1j),
    "isin_scalar_tensor_bool": lambda d: aten.isin.Scalar_Tensor(True, ones(3, d=d)),
    "isin_tensor_bool_test": lambda d: aten.isin.Tensor_Tensor(ones(3, d=d), ones(2, dtype=torch.bool, d=d)),
    "isin_tensor_bool_elements": lambda d: aten.isin.Tensor_Tensor(ones(3, dtype=torch.bool, d=d), ones(2, d=d)),
    "isin_tensor_complex_test": lambda d: aten.isin.Tensor_Tensor(ones(3, d=d), ones(2, dtype=torch.complex64, d=d)),
    "threshold_complex": lambda d: aten.threshold(ones(4, 1, dtype=bf16, d=d), False, 0.55 + 1j),
    "threshold_int_range": lambda d: aten.threshold(ones(4, dtype=torch.int8, d=d), 300, 1),
    "threshold_half_range": lambda d: aten.threshold(ones(4, dtype=f16, d=d), 0.5, 1e6),
    "elu_backward_scale": lambda d: aten.elu_backward(ones(4, d=d), 0, -0.09 + 1j, 1, False, ones(4, dtype=f16, d=d)),
    "elu_backward_alpha_result": lambda d: aten.elu_backward(ones(4, dtype=torch.float64, d=d), 1j, 1, 1, True,
                                                             ones(4, d=d)),
    "bernoulli_above_one": lambda d: aten.bernoulli.default(torch.tensor([0.5, 1.5], device=d)),
    "bernoulli_nan": lambda d: aten.bernoulli.default(torch.tensor([[0.5], [float("nan")]], device=d)),
    "bernoulli_out_negative": lambda d: aten.bernoulli.out(torch.tensor(-0.5, dtype=torch.float64, device=d),
                                                           out=ones(0, d=d)),
    "bernoulli_tensor_p": lambda d: aten.bernoulli_.Tensor(ones(2, 3, dtype=i64, d=d), ones(3, d=d) * 2),
    "cdist_nan_p": lambda d: aten._cdist_forward.out(ones(1, 4, 2, 3, d=d), ones(2, 3, d=d), float("nan"), None,
                                                     out=ones(0, d=d)),
    "weight_norm_backward_saved_g": lambda d: aten._weight_norm_interface_backward.out(
        ones(5, d=d), ones(5, d=d), ones(10, d=d)[::2], ones(5, d=d), 0, out0=ones(5, d=d), out1=ones(0, d=d)),
    "weight_norm_backward_saved_v": lambda d: aten._weight_norm_interface_backward(
        ones(2, 3, d=d), ones(3, 2, d=d).t(), ones(1, 3, d=d), ones(1, 3, d=d), 1),
    "weight_norm_backward_saved_norms": lambda d: aten._weight_norm_interface_backward(
        ones(5, d=d), ones(5, d=d), ones(5, d=d), ones(10, dtype=torch.complex64, d=d)[::2], 0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)


@pytest.mark.parametrize("name", ["threshold_complex", "threshold_half_range", "elu_backward_scale",
                                  "bernoulli_above_one", "weight_norm_backward_saved_g"])
def test_refused_as_cpu_compiled(name: str) -> None:
    """Dynamo's fake-tensor trace makes CPU's check (compile/fake_checks.py): CPU's class and words, wrapped."""
    assert_refused_as_cpu_compiled(CASES[name])


def test_accepted_calls_unchanged() -> None:
    """The checks refuse only what CPU refuses: in-range Scalars and matching dtypes still compute CPU's values."""
    x = torch.tensor([-1.0, 0.5, 2.0])
    calls = [lambda d: aten.threshold(x.to(d), 0.5, 2), lambda d: aten.isin.Tensor_Scalar(x.to(d), 2),
             lambda d: aten.isin.Tensor_Tensor(x.to(d), torch.tensor([2, 7], device=d)),
             lambda d: aten.take(x.to(d), torch.tensor([2, 0], device=d)),
             lambda d: aten.elu_backward(x.to(d), 1.0, 1 + 0j, 1, False, x.abs().to(d)),
             lambda d: aten.signbit.out(x.to(d), out=torch.empty(3, dtype=torch.bool, device=d)),
             lambda d: aten.isposinf.out(x.to(d) * torch.inf, out=torch.empty(3, dtype=torch.bool, device=d)),
             lambda d: aten.isneginf.out(x.to(d) * torch.inf, out=torch.empty(3, dtype=torch.bool, device=d))]
    for mode in MODES:
        with torch.tpu.eager_mode(mode):
            for call in calls:
                assert torch.equal(call("tpu").cpu(), call("cpu"))


@pytest.mark.parametrize("mode", MODES)
def test_bernoulli_accepted_probs(mode: str) -> None:
    """p at 0 and 1 draws exactly 0 and 1 as on CPU; an empty self reads no p (CPU accepts p = 2 there)."""
    p = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    assert_exactly_cpu(lambda d: [aten.bernoulli.default(p.to(d)), aten.bernoulli_.Tensor(ones(2, 2, d=d), p.to(d)),
                                  aten.bernoulli_.Tensor(ones(0, 2, d=d), p[:1].to(d) * 2)], mode)
