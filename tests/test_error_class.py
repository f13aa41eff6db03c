"""The schema fuzzer's error_class findings of seeds 3-5 (issue 17): calls CPU and tpu both refuse, where tpu's dtype
refusal came before the check CPU makes first. An ATen dim check on the op's meta function (an IndexError), the
internal-overlap check of an in-place op's written tensor and TensorIterator's same-dtype check of a unary op's
out= tensor now come first, and a Scalar that cannot be converted to the operand type raises c10's RuntimeError
(not Python's TypeError or ValueError), so an `except` clause written against CPU catches tpu's error too."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu, assert_refused_as_cpu_compiled, ones

import torchtpu  # noqa: F401

aten = torch.ops.aten
B, C64, I8, I16, I32, I64 = torch.bool, torch.complex64, torch.int8, torch.int16, torch.int32, torch.int64
U8 = torch.uint8
_f = ones

# name -> fn(device): raises on CPU (fuzz seeds 3-5).
CASES: dict[str, Callable[[str], object]] = {
    # the meta function's dim check (an IndexError) before the dtype refusal
    "cummin_complex_dim_out_of_range": lambda d: aten.cummin.default(_f(3, 5, 3, dtype=C64, d=d), 64),
    "kthvalue_values_bool_dim_out_of_range": lambda d: aten.kthvalue.values(
        _f(2, dtype=B, d=d), 1, 64, values=_f(0, dtype=B, d=d), indices=_f(0, dtype=I64, d=d)),
    "baddbmm__bool_1d": lambda d: _f(2, dtype=B, d=d).baddbmm_(_f(2, dtype=B, d=d), _f(2, dtype=B, d=d)),
    "topk_values_bool_dim_out_of_range": lambda d: aten.topk.values(
        _f(3, dtype=B, d=d), 1, -2, values=_f(0, dtype=B, d=d), indices=_f(0, dtype=I64, d=d)),
    # an in-place op writing an expanded view: the internal-overlap check first
    "logit__complex_expanded": lambda d: _f(1, dtype=C64, d=d).expand(3).logit_(),
    "lt__complex_expanded": lambda d: _f(1, dtype=C64, d=d).expand(3).lt_(_f(3, dtype=C64, d=d)),
    "log_normal__int_expanded": lambda d: _f(1, dtype=I32, d=d).expand(3).log_normal_(),
    # TensorIterator's unary_op: the out= tensor's dtype is the input's, checked before the dispatch
    "hardshrink_out_uint8_float_out": lambda d: aten.hardshrink.out(_f(3, dtype=U8, d=d), 0.5, out=_f(3, d=d)),
    "gelu_out_int16_float_out": lambda d: aten.gelu.out(_f(3, dtype=I16, d=d), out=_f(3, d=d)),
    "gelu_out_int64_uint8_out": lambda d: aten.gelu.out(_f(3, dtype=I64, d=d), out=_f(3, dtype=U8, d=d)),
    "hardsigmoid_out_int8_int32_out": lambda d: aten.hardsigmoid.out(_f(3, dtype=I8, d=d), out=_f(3, dtype=I32, d=d)),
    # an in-place binary op: the broadcast shape must be the written tensor's, checked before the dispatch
    "gcd__bfloat16_broadcast": lambda d: _f(1, 1, dtype=torch.bfloat16, d=d).gcd_(_f(3, 2, dtype=torch.bfloat16, d=d)),
    "lcm__float_broadcast": lambda d: _f(d=d).lcm_(_f(4, 1, 2, d=d)),
    "gt__complex_broadcast": lambda d: _f(dtype=C64, d=d).gt_(_f(4, dtype=C64, d=d)),
    # a complex or NaN Scalar the kernel converts to a real or integer operand: c10's RuntimeError
    "hardtanh_out_int32_complex_bound": lambda d: aten.hardtanh.out(
        _f(3, 4, 1, dtype=I32, d=d), 2.259, 0.69 + 1j, out=_f(0, dtype=I32, d=d)),
    "hardtanh__int16_complex_bound": lambda d: aten.hardtanh_.default(_f(dtype=I16, d=d), -0.38 + 1j),
    "threshold_backward_complex_threshold": lambda d: aten.threshold_backward.default(
        _f(2, 4, 1, d=d), _f(2, 4, 4, d=d), 0.64 + 1j),
    "linspace_int64_nan_start": lambda d: aten.linspace.default(float("nan"), 1.611, 5, dtype=I64, device=d),
    "linspace_int8_start_out_of_range": lambda d: aten.linspace.default(0, 300, 3, dtype=I8, device=d),
}
# the cases whose op reaches a compiled graph as it is -> CPU's words too (Dynamo's fake run refuses the expanded
# view first, in FakeTensor's words)
COMPILED = {"cummin_complex_dim_out_of_range": True, "baddbmm__bool_1d": True, "logit__complex_expanded": False}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_refused_as_cpu_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(CASES[name], words=COMPILED[name])


def test_float_unary_out_of_same_dtype_computes() -> None:
    x = torch.linspace(-3, 3, 7)
    for op in (aten.hardshrink.out, aten.gelu.out, aten.hardsigmoid.out):
        out = torch.empty(7, device="tpu")
        op(x.to("tpu"), out=out)
        torch.testing.assert_close(out.cpu(), op(x, out=torch.empty(7)))


def test_integer_linspace_and_hardtanh_compute() -> None:
    got = torch.linspace(-5, 120, 6, dtype=I8, device="tpu").cpu()
    assert torch.equal(got, torch.linspace(-5, 120, 6, dtype=I8))
    x = torch.arange(-4, 5, dtype=I32)
    got = aten.hardtanh.default(x.to("tpu"), -2.5, 3.0 + 0j).cpu()
    assert torch.equal(got, aten.hardtanh.default(x, -2.5, 3.0 + 0j))
