"""Issue 17, known.json's cpu_raises ("a dtype check CPU makes and tpu skips", "a shape check CPU makes and tpu
skips"): calls CPU refuses and tpu computed silently. Each raises CPU's exception class with CPU's words on tpu in
every eager mode, and under torch.compile(backend="tpu") where the op reaches a compiled graph; the calls next to
them that CPU computes are computed (ops/cpu_raise_checks.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu, assert_refused_as_cpu_compiled, ones

import torchtpu  # noqa: F401

aten = torch.ops.aten
B, U8, I8, I16, I32, I64 = torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64
F32, F64, C64, BF16 = torch.float32, torch.float64, torch.complex64, torch.bfloat16
_f = ones


def _s(dtype: torch.dtype = F32, d: str = "cpu") -> torch.Tensor:
    """A 0-dim tensor of ones."""
    return torch.ones((), dtype=dtype, device=d)

# name -> fn(device): raises on CPU.
CASES: dict[str, Callable[[str], object]] = {
    "all_out_short": lambda d: aten.all.out(_f(2, 3, d=d), 1, out=_f(0, dtype=I16, d=d)),
    "all_all_out_float": lambda d: aten.all.all_out(_f(2, 3, d=d), out=_f(0, d=d)),
    "any_out_complex": lambda d: aten.any.out(_f(3, 2, dtype=C64, d=d), 1, out=_f(3, 2, dtype=C64, d=d)),
    "any_dims_out_float": lambda d: aten.any.dims_out(_f(2, 4, d=d), out=_f(2, 4, d=d)),
    "any_all_out_long": lambda d: aten.any.all_out(_f(2, 3, d=d), out=_f(0, dtype=I64, d=d)),
    "aminmax_out_min": lambda d: aten.aminmax.out(_f(3, 2, dtype=B, d=d), min=_f(3, 2, dtype=I64, d=d),
                                                  max=_f(3, 2, dtype=I64, d=d)),
    "aminmax_out_max": lambda d: aten.aminmax.out(_f(3, d=d), min=_f(0, d=d), max=_f(0, dtype=F64, d=d)),
    "aminmax_out_dim_first": lambda d: aten.aminmax.out(_f(1, d=d), dim=1, min=_f(0, dtype=I32, d=d),
                                                        max=_f(3, 5, 2, dtype=I32, d=d)),
    "frexp_out_exponent": lambda d: aten.frexp.Tensor_out(_f(2, d=d), mantissa=_s(d=d), exponent=_f(0, d=d)),
    "frexp_out_mantissa": lambda d: aten.frexp.Tensor_out(_f(2, d=d), mantissa=_f(0, dtype=F64, d=d),
                                                          exponent=_f(0, dtype=I32, d=d)),
    "multinomial_out_float": lambda d: aten.multinomial.out(_f(1, 1, d=d), 2, out=_f(1, 1, d=d)),
    "softshrink_out_double": lambda d: aten.softshrink.out(_f(1, 3, d=d), 2.0 ** 40, out=_f(0, dtype=F64, d=d)),
    "softshrink_negative_lambda": lambda d: aten.softshrink.out(_f(2, d=d), -1.0, out=_f(0, dtype=F64, d=d)),
    "softshrink_out_int8": lambda d: aten.softshrink.out(_f(3, 1, 1, dtype=I8, d=d), out=_f(3, 1, 1, d=d)),
    "hardtanh_uint8_negative": lambda d: aten.hardtanh.default(_f(1, dtype=U8, d=d), -4),
    "hardtanh__uint8_negative": lambda d: aten.hardtanh_.default(_f(2, dtype=U8, d=d), False, -1.122),
    "threshold_backward_int_overflow": lambda d: aten.threshold_backward.grad_input(
        _f(1, 2, dtype=I32, d=d), _f(1, 2, dtype=B, d=d), 2.0 ** 40, grad_input=_f(0, dtype=I32, d=d)),
    "threshold_backward_int8_overflow": lambda d: aten.threshold_backward.default(
        _f(3, dtype=I8, d=d), _f(3, dtype=I8, d=d), 300.0),
    "cumprod__dtype": lambda d: aten.cumprod_.default(_f(3, 2, 1, dtype=I64, d=d), -3, dtype=I8),
    "cumsum__dtype": lambda d: aten.cumsum_.default(_f(3, dtype=I64, d=d), 0, dtype=F32),
    "bce_long_target": lambda d: aten.binary_cross_entropy.default(_f(5, dtype=F64, d=d) * 0.5, _f(5, dtype=I64, d=d)),
    "bce_out_dtypes": lambda d: aten.binary_cross_entropy.out(
        _f(5, 3, 1, dtype=I32, d=d), _f(5, 3, 1, dtype=I64, d=d), reduction=1, out=_f(0, dtype=I32, d=d)),
    "bce_out_double_out": lambda d: aten.binary_cross_entropy.out(_f(5, d=d) * 0.5, _f(5, d=d), reduction=1,
                                                                  out=_f(0, dtype=F64, d=d)),
    "huber_loss_backward_target": lambda d: aten.huber_loss_backward.default(
        _f(3, 1, dtype=I32, d=d), _s(I32, d), _f(3, dtype=I64, d=d), 2, 2.0),
    "huber_loss_backward_grad": lambda d: aten.huber_loss_backward.default(_f(3, dtype=F64, d=d), _f(3, d=d),
                                                                           _f(3, d=d), 1, 2.0),
    "huber_loss_backward_out": lambda d: aten.huber_loss_backward.out(
        _f(3, 0, d=d), _f(3, 0, d=d), _f(3, 0, dtype=I64, d=d), 6, -1.0, grad_input=_f(0, d=d)),
    "smooth_l1_loss_backward_bool": lambda d: aten.smooth_l1_loss_backward.default(
        _f(4, 1, 1, d=d), _f(4, 2, 4, dtype=B, d=d), _f(4, 1, 4, dtype=I64, d=d), 0, 1.0),
    "soft_margin_loss_out_double": lambda d: aten.soft_margin_loss.out(_f(3, d=d), _f(3, d=d), 1,
                                                                       out=_f(0, dtype=F64, d=d)),
    "soft_margin_loss_backward_shape": lambda d: aten.soft_margin_loss_backward.default(
        _f(1, 4, dtype=F64, d=d), _f(1, 2, 1, dtype=F64, d=d), _f(1, 2, 1, dtype=F64, d=d), 1),
    "bucketize_2d_boundaries": lambda d: aten.bucketize.Tensor(_f(4, 2, 5, d=d), _f(4, 2, 5, d=d)),
    "bucketize_out_2d_boundaries": lambda d: aten.bucketize.Tensor_out(
        _f(2, 0, dtype=I64, d=d), _f(2, 0, dtype=F64, d=d), out_int32=True, right=True, out=_f(0, dtype=C64, d=d)),
    "bucketize_out_dtype": lambda d: aten.bucketize.Tensor_out(_f(3, d=d), _f(4, d=d), out=_f(0, d=d)),
    "norm_dtype_narrowing": lambda d: aten.norm.ScalarOpt_dim_dtype(_f(3, 3, d=d), -2, [0], False, dtype=BF16),
    "as_strided_scatter_out_src": lambda d: aten.as_strided_scatter.out(_s(I32, d), _s(I32, d), [1],
                                                                        [1], out=_f(0, dtype=I32, d=d)),
    "as_strided_scatter_src": lambda d: aten.as_strided_scatter.default(_f(4, d=d), _f(2, d=d), [3], [1]),
    "glu_backward_grad_shape": lambda d: aten.glu_backward.default(_f(2, 3, d=d), _f(2, 3, d=d), 0),
    "bce_with_logits_shape": lambda d: aten.binary_cross_entropy_with_logits.default(
        _f(1, 1, dtype=F64, d=d), _f(3, dtype=I64, d=d), None, None, 0),
    "bce_with_logits_out_shape": lambda d: aten.binary_cross_entropy_with_logits.out(
        _f(5, 5, 5, d=d), _f(1, 5, 1, d=d), _f(5, d=d), reduction=1, out=_f(5, 5, 5, d=d)),
    "bce_with_logits_long_target": lambda d: aten.binary_cross_entropy_with_logits.default(
        _f(3, 1, dtype=F64, d=d), _f(3, 2, dtype=I64, d=d)),
    "bce_with_logits_bool_target": lambda d: aten.binary_cross_entropy_with_logits.default(_f(2, d=d),
                                                                                         _f(2, dtype=B, d=d)),
    "soft_margin_loss_out_uint8": lambda d: aten.soft_margin_loss.out(_s(U8, d), _s(U8, d), 1,
                                                                      out=_f(4, 5, dtype=U8, d=d)),
    "soft_margin_loss_int": lambda d: aten.soft_margin_loss.default(_f(2, dtype=I32, d=d), _f(2, dtype=I32, d=d)),
    "soft_margin_loss_backward_int": lambda d: aten.soft_margin_loss_backward.default(
        _f(2, 3, dtype=I32, d=d), _f(2, 3, dtype=I32, d=d), _f(2, 3, dtype=U8, d=d), 1),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)



COMPILED = ["hardtanh_uint8_negative", "threshold_backward_int8_overflow", "bce_long_target",
            "huber_loss_backward_grad", "soft_margin_loss_backward_shape", "bucketize_2d_boundaries",
            "norm_dtype_narrowing", "glu_backward_grad_shape", "bce_with_logits_shape", "as_strided_scatter_src"]

# refused by PyTorch's own meta function while Dynamo traces, in its words ("Cannot do hardtanh", "torch.float32")
UPSTREAM_WORDS = frozenset({"hardtanh_uint8_negative", "norm_dtype_narrowing", "as_strided_scatter_src"})


@pytest.mark.parametrize("name", COMPILED)
def test_refused_as_cpu_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(CASES[name], words=name not in UPSTREAM_WORDS)


ACCEPTED: dict[str, Callable[[str], torch.Tensor]] = {
    "all_out_uint8": lambda d: aten.all.out(_f(2, 3, d=d), 1, out=_f(0, dtype=U8, d=d)),
    "any_out_bool": lambda d: aten.any.out(_f(2, 3, d=d), 0, out=_f(0, dtype=B, d=d)),
    "hardtanh_uint8_truncated_limit": lambda d: aten.hardtanh.default(_f(2, dtype=U8, d=d) * 3, -0.5, 2),
    "threshold_backward_uint8_negative": lambda d: aten.threshold_backward.default(_f(3, dtype=U8, d=d),
                                                                                   _f(3, dtype=U8, d=d), -4),
    "threshold_backward_mixed": lambda d: aten.threshold_backward.default(_f(2, dtype=I32, d=d), _f(2, d=d), 1e30),
    "cumprod__same_dtype": lambda d: aten.cumprod_.default(_f(3, dtype=I64, d=d) * 2, 0, dtype=I64),
    "norm_dtype_widening": lambda d: aten.norm.ScalarOpt_dim_dtype(_f(3, 3, d=d), 2, [0], False, dtype=F64),
    "smooth_l1_loss_backward_int_target": lambda d: aten.smooth_l1_loss_backward.default(
        _s(d=d), _f(4, d=d) * 0.5, _f(4, dtype=I64, d=d), 1, 1.0),
    "glu_backward_broadcast_grad": lambda d: aten.glu_backward.default(_f(1, 3, d=d), _f(2, 3, d=d), 0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_as_cpu(name: str, mode: str) -> None:
    expected = ACCEPTED[name]("cpu")
    with torch.tpu.eager_mode(mode):
        got = ACCEPTED[name]("tpu")
        torch.tpu.synchronize()
    assert got.dtype == expected.dtype and torch.equal(got.cpu(), expected), (got, expected)
