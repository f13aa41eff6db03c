"""Lowerings of further element-wise math: NaN-aware fmax/fmin, nextafter, hypot, signbit, floor_divide, erfc,
angle, frexp, ldexp-free helpers, logit, and the float64-aware compute dtype used by the other families."""

from __future__ import annotations

import math
from typing import Any

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.elementwise import opmath, refuse_complex
from torchtpu.ops.prims import Kind
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym, aten_type_name

aten = torch.ops.aten


def acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype float math runs in: float32 on the VPU, float64 kept (the simulator computes it exactly)."""
    return dtype if dtype in (torch.float64, torch.complex64, torch.complex128) else torch.float32


def _nan_aware(kind: str, name: str) -> Any:
    def lowering(self: Sym, other: Sym) -> Sym:
        refuse_complex(name, self, other)
        compute, result = P.result_dtype(self, other)
        a, b = P.prepare([self, other], compute)
        m = P.emit1(kind, [a, b])
        if compute.is_floating_point:
            m = P.where(P.compare("NE", a, a), b, P.where(P.compare("NE", b, b), a, m))
        return P.convert(m, result)

    return lowering


lower(aten.fmax.default)(_nan_aware("maximum", "fmax"))
lower(aten.fmin.default)(_nan_aware("minimum", "fmin"))


@lower(aten.nextafter.default)
def nextafter(self: Sym, other: Sym) -> Sym:
    return P.binary("nextafter", self, other, Kind.NO_OPMATH)  # the next value of the result dtype, not of float32


@lower(aten.hypot.default)
def hypot(self: Sym, other: Sym) -> Sym:
    return P.binary("hypot", self, other)


@lower(aten.signbit.default)
def signbit(self: Sym) -> Sym:
    if self.dtype == torch.bool:
        return P.full(False, self.shape, torch.bool)
    if self.dtype.is_complex:
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    if not self.dtype.is_floating_point:
        return P.compare("LT", self, 0)
    x = P.convert(self, acc_dtype(self.dtype))
    return P.compare("LT", P.binary("copysign", P.full(1.0, x.shape, x.dtype), x), 0.0)


@lower(aten.floor_divide.default, aten.floor_divide.Scalar)
def floor_divide(self: Sym, other: Any) -> Sym:
    compute, result = P.result_dtype(self, other)
    if result.is_complex:
        raise NotImplementedError(f'"div_floor_cpu" not implemented for \'{aten_type_name(result)}\'')
    a, b = P.prepare([self, other], compute, scalar_other_exact=True)
    q = div_floor(a, b) if compute.is_floating_point else P.emit1("floor_divide", [a, b])
    return P.convert(q, result)


def div_floor(a: Sym, b: Sym) -> Sym:
    """Python's floor division of floats, as ATen's div_floor: from fmod, to avoid rounding a/b first."""
    mod = P.emit1("fmod", [a, b])
    div = (a - mod) / b
    fix = P.emit1("and", [P.compare("NE", mod, 0.0),
                          P.compare("NE", P.compare("LT", b, 0.0), P.compare("LT", mod, 0.0))])
    div = P.where(fix, div - 1.0, div)
    floored = P.emit1("floor", [div])
    floored = P.where(P.compare("GT", div - floored, 0.5), floored + 1.0, floored)
    q = P.where(P.compare("EQ", div, 0.0), P.binary("copysign", P.zeros_like(div), a / b), floored)
    return P.where(P.compare("EQ", b, 0.0), a / b, q)


@lower(aten.erfc.default)
def erfc(self: Sym) -> Sym:
    return P.float_unary("erfc", self)


@lower(aten.angle.default)
def angle(self: Sym) -> Sym:
    if self.dtype.is_complex:
        from torchtpu.ops.complex import imag, real

        return P.emit1("atan2", [imag(self), real(self)])
    _, result = P.result_dtype(self, kind=Kind.INT_TO_FLOAT)
    x = P.convert(self, acc_dtype(result))
    y = P.where(P.compare("LT", x, 0.0), P.full(math.pi, x.shape, x.dtype), P.zeros_like(x))
    return P.convert(P.where(P.compare("NE", x, x), x, y), result)


@lower(aten.frexp.Tensor)
def frexp(self: Sym) -> tuple[Sym, Sym]:
    x = P.convert(self, acc_dtype(self.dtype))
    a = P.emit1("abs", [x])
    finite_nonzero = P.emit1("and", [P.emit1("is_finite", [x]), P.compare("NE", x, 0.0)])
    safe = P.where(finite_nonzero, a, P.full(1.0, a.shape, a.dtype))
    e = P.emit1("floor", [P.emit1("log2", [safe])]) + 1.0
    m = x / P.emit1("exp2", [e])
    # log2 can round across a power of two: renormalize the mantissa into [0.5, 1)
    big = P.compare("GE", P.emit1("abs", [m]), 1.0)
    e = P.where(big, e + 1.0, e)
    m = P.where(big, m * 0.5, m)
    small = P.compare("LT", P.emit1("abs", [m]), 0.5)
    e = P.where(small, e - 1.0, e)
    m = P.where(small, m * 2.0, m)
    m = P.where(finite_nonzero, m, x)
    e = P.where(finite_nonzero, e, P.zeros_like(e))
    return P.convert(m, self.dtype), P.convert(e, torch.int32)


@lower(aten.logit.default, static=("eps",))
def logit(self: Sym, eps: float | None = None) -> Sym:
    _, result = P.result_dtype(self, kind=Kind.INT_TO_FLOAT)
    x = P.convert(self, acc_dtype(result))
    if eps is not None:  # ATen's bounds in the result's dtype: lo = eps, hi = 1 - lo (1.0 for a Half eps of 1e-5)
        lo = torch.tensor(eps, dtype=result)
        hi = torch.tensor(1, dtype=result) - lo
        x = P.emit1("minimum", [P.emit1("maximum", [x, P.full(lo.item(), x.shape, x.dtype)]),
                                P.full(hi.item(), x.shape, x.dtype)])
    return P.convert(P.emit1("log", [x / (1.0 - x)]), result)


@lower(aten.logit_backward.default, static=("eps",))
def logit_backward(grad_output: Sym, self: Sym, eps: float | None = None) -> Sym:
    # a binary TensorIterator op: the common dtype of grad and self (a bool grad gives float), in its opmath
    (g, x), common = opmath(grad_output, self)
    grad = g / (x * (1.0 - x))
    if eps is not None:
        outside = P.emit1("or", [P.compare("LT", x, eps), P.compare("GT", x, 1.0 - eps)])
        grad = P.where(outside, P.zeros_like(grad), grad)
    else:
        outside = P.emit1("or", [P.compare("LT", x, 0.0), P.compare("GT", x, 1.0)])
        grad = P.where(outside, P.full(math.nan, grad.shape, grad.dtype), grad)
    return P.convert(grad, common)


def _shift(self: Any, other: Any, left: bool) -> Sym:
    compute, result = P.result_dtype(self, other)
    a, s = P.prepare([self, other], compute)
    if result == torch.bool or result.is_floating_point or result.is_complex:  # after the shape check, as ATen
        raise NotImplementedError(f'"{"lshift" if left else "rshift"}" not implemented for '
                                  f"'{aten_type_name(result)}' (tpu shifts integer tensors)")
    bits = 8 * {torch.int64: 8, torch.int32: 4, torch.int16: 2}.get(compute, 1)
    out_of_range = P.emit1("or", [P.compare("LT", s, 0), P.compare("GE", s, bits)])
    safe = P.where(out_of_range, P.zeros_like(s), s)
    y = P.emit1("shift_left" if left else "shift_right_arithmetic", [a, safe])
    if left:
        fill = P.zeros_like(a)
    else:  # ATen: an over-wide right shift leaves the sign
        fill = P.where(P.compare("LT", a, 0), P.full(-1, a.shape, compute), P.zeros_like(a))
    return P.convert(P.where(out_of_range, fill, y), result)


@lower(aten.bitwise_left_shift.Tensor, aten.bitwise_left_shift.Tensor_Scalar, aten.bitwise_left_shift.Scalar_Tensor)
@lower(aten.__lshift__.Tensor, aten.__lshift__.Scalar, aten.__ilshift__.Tensor, aten.__ilshift__.Scalar)
def bitwise_left_shift(self: Any, other: Any) -> Sym:
    return _shift(self, other, True)


@lower(aten.bitwise_right_shift.Tensor, aten.bitwise_right_shift.Tensor_Scalar,
       aten.bitwise_right_shift.Scalar_Tensor)
@lower(aten.__rshift__.Tensor, aten.__rshift__.Scalar, aten.__irshift__.Tensor, aten.__irshift__.Scalar)
def bitwise_right_shift(self: Any, other: Any) -> Sym:
    return _shift(self, other, False)


def _gcd(a: Sym, b: Sym) -> Sym:
    """ATen's calc_gcd (a, b = |a|, |b|; while a: a, b = b % a, a; C's truncating %), unrolled to its worst case
    for the type (consecutive Fibonacci numbers). The order and the truncation matter only for the most negative
    value, whose abs() wraps to itself: gcd(8, -32768) is 8 in int16, not -8."""
    p, q = P.emit1("abs", [b]), P.emit1("abs", [a])
    steps = {torch.int64: 92, torch.int32: 46, torch.int16: 23}.get(a.dtype, 12)
    one = P.full(1, a.shape, a.dtype)
    for _ in range(steps):
        nonzero = P.compare("NE", q, 0)
        r = P.emit1("fmod", [p, P.where(nonzero, q, one)])
        p, q = P.where(nonzero, q, p), P.where(nonzero, r, q)
    return p


@lower(aten.gcd.default)
def gcd(self: Sym, other: Sym) -> Sym:
    compute, result = P.result_dtype(self, other)
    a, b = P.prepare([self, other], compute)
    return P.convert(_gcd(a, b), result)


@lower(aten.lcm.default)
def lcm(self: Sym, other: Sym) -> Sym:
    compute, result = P.result_dtype(self, other)
    a, b = P.prepare([self, other], compute)
    g = _gcd(a, b)
    zero = P.compare("EQ", g, 0)
    q = P.emit1("divide", [a, P.where(zero, P.full(1, g.shape, g.dtype), g)])
    if compute.itemsize < 4:  # C's integer promotion: a / g * b and its abs() in int, then narrowed
        q, b = P.convert(q, torch.int32), P.convert(b, torch.int32)
    return P.convert(P.where(zero, P.zeros_like(q), P.emit1("abs", [q * b])), result)
