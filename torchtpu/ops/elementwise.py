"""Lowerings of element-wise ATen ops: arithmetic, comparisons, activations and their backward ops."""

from __future__ import annotations

import math
from typing import Any

import torch

from torchtpu import dtypes
from torchtpu.dtypes import check_scalar_fits, checked_scalar
from torchtpu.ops import host_index, operand_checks, scalar_args, value_fits
from torchtpu.ops import prims as P
from torchtpu.ops.add_alpha import check_alpha, scales_other, times_alpha
from torchtpu.ops.complex_pow import complex_pow
from torchtpu.ops.prims import Kind, via_complex64
from torchtpu.ops.registry import lower
from torchtpu.ops.scalar_args import known
from torchtpu.ops.tracing import Sym, aten_type_name

aten = torch.ops.aten


@lower(aten.add.Tensor, aten.add.Scalar)
def add(self: Any, other: Any, alpha: Any = 1) -> Sym:
    compute, result = P.result_dtype(self, other)
    check_alpha(alpha, result)
    if compute == torch.bool and scales_other(alpha, compute):
        # ATen's bool kernel: alpha converted to bool first (-1 is true), self + alpha * other nonzero
        scaled = P.compare("NE", P.binary("multiply", P.convert(other, torch.int64), alpha), 0)
        return P.binary("or", P.convert(self, torch.bool), scaled)
    other = P.via_common(other, compute, result)
    if scales_other(alpha, compute):
        check_scalar_fits(alpha, result, "add(): alpha")
        other = times_alpha(other, alpha, compute, result)
    return P.convert(P.binary("add", P.via_common(self, compute, result), other), result)


@lower(aten.sub.Tensor, aten.sub.Scalar)
def sub(self: Any, other: Any, alpha: Any = 1) -> Sym:
    def is_bool(x: Any) -> bool:
        return x.dtype == torch.bool if isinstance(x, Sym) else isinstance(x, bool)

    if is_bool(self) and is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if is_bool(self) or is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    compute, result = P.result_dtype(self, other)
    check_alpha(alpha, result)
    other = P.via_common(other, compute, result)
    if scales_other(alpha, compute):
        check_scalar_fits(alpha, result, "sub(): alpha")
        other = times_alpha(other, alpha, compute, result)
    return P.convert(P.binary("subtract", P.via_common(self, compute, result), other), result)


@lower(aten.rsub.Tensor, aten.rsub.Scalar)
def rsub(self: Any, other: Any, alpha: Any = 1) -> Sym:
    return sub(other, self, alpha)


@lower(aten.mul.Tensor, aten.mul.Scalar)
def mul(self: Any, other: Any) -> Sym:
    return P.binary("multiply", self, other, scalar_other_exact=True)


@lower(aten.div.Tensor, aten.div.Scalar)
def div(self: Any, other: Any) -> Sym:
    return P.true_divide(self, other)


@lower(aten.div.Tensor_mode, aten.div.Scalar_mode)
def div_mode(self: Any, other: Any, rounding_mode: str | None = None) -> Sym:
    if rounding_mode is None:
        return div(self, other)
    compute, result = P.result_dtype(self, other)
    a, b = P.prepare([self, other], compute, scalar_other_exact=True)
    if compute.is_floating_point:
        from torchtpu.ops.math import div_floor

        q = div_floor(a, b) if rounding_mode == "floor" else P.emit1("trunc", [P.emit1("divide", [a, b])])
    else:
        q = P.emit1("floor_divide" if rounding_mode == "floor" else "divide", [a, b])
    return P.convert(q, result)


@lower(aten.remainder.Tensor, aten.remainder.Scalar)
def remainder(self: Any, other: Any) -> Sym:
    return P.binary("remainder", self, other)


@lower(aten.fmod.Tensor, aten.fmod.Scalar)
def fmod(self: Any, other: Any) -> Sym:
    compute, result = P.result_dtype(self, other)
    if compute.is_floating_point or compute.is_complex or compute == torch.bool:
        return P.binary("fmod", self, other)
    # integers: ATen's kernel refuses a zero divisor (the IR's fmod gives 0); the IR's integer divide raises it, so
    # 1 / b (0 or +-1 for any other b) joins the result times 0
    a, b = P.prepare([self, other], compute)
    zero_check = P.binary("multiply", P.emit1("divide", [P.full(1, b.shape, compute), b]), P.zeros_like(b))
    return P.convert(P.binary("add", P.emit1("fmod", [a, b]), zero_check), result)


@lower(aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, static=("exponent",))
def pow_(self: Sym, exponent: Any) -> Sym:
    if isinstance(exponent, int) and not isinstance(exponent, bool) and exponent < 0 and \
            not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if not isinstance(exponent, Sym | bool | complex):  # the kernel's exp_scalar.to<scalar_t>() (checked_convert)
        result = P.result_dtype(self, exponent)[1]
        if result in (torch.float16, torch.bfloat16) or not (result.is_floating_point or result.is_complex):
            checked_scalar(exponent, result)  # float16 ** 70000.0 is refused (fuzz seed 45, _foreach_pow_)
    complex_result = complex_pow(self, exponent)
    if complex_result is not None:
        return complex_result
    if not isinstance(exponent, Sym):
        if exponent == 2:
            return P.convert(P.binary("multiply", self, self), P.result_dtype(self, exponent)[1])
        if exponent == 1:
            return P.convert(self, P.result_dtype(self, exponent)[1])
        if exponent == 0.5 and self.dtype.is_floating_point:
            return P.emit1("sqrt", [self])
        if exponent == -0.5 and self.dtype in (torch.bfloat16, torch.float16):
            # ATen's CPU pow special case for reduced floats: 1 / sqrt(x) with sqrt rounded to the dtype first
            # (vectorized bf16 ops), not one rounding of x^-0.5: normalize's gradient cancels only this way
            return P.binary("divide", P.full(1.0, self.shape, self.dtype), P.emit1("sqrt", [self]))
        cube_or_inverse_square = _as_products(self, exponent)
        if cube_or_inverse_square is not None:
            return cube_or_inverse_square
    return P.binary("power", self, exponent)


def _as_products(self: Sym, exponent: Any) -> Sym | None:
    """x ** 3 and x ** -2 as ATen's CPU kernel computes them for float32, float64 and bfloat16: (x * x) * x and
    1 / (x * x), each op rounded to the dtype (float16 takes std::pow there, one rounding: left to `power`).
    One rounding of the exact power differs from CPU in about a quarter of float32 inputs."""
    if isinstance(exponent, bool) or not isinstance(exponent, (int, float)) or exponent not in (3, -2):
        return None
    dtype = P.result_dtype(self, exponent)[1]
    if dtype not in (torch.float32, torch.float64, torch.bfloat16):
        return None
    x = P.convert(self, dtype)
    square = P.binary("multiply", x, x)
    if exponent == 3:
        return P.binary("multiply", square, x)
    return P.binary("divide", P.full(1.0, self.shape, dtype), square)


@lower(aten.pow.Scalar)
def pow_scalar(self: Any, exponent: Sym) -> Sym:
    return P.binary("power", self, exponent)


def refuse_complex(name: str, self: Sym, other: Sym) -> None:
    """ATen's check for maximum/minimum/fmax/fmin: complex numbers have no order."""
    if P.result_dtype(self, other)[1].is_complex:
        raise RuntimeError(f"{name} not implemented for complex tensors.")


@lower(aten.maximum.default)
def maximum(self: Sym, other: Sym) -> Sym:
    refuse_complex("maximum", self, other)
    return P.binary("maximum", self, other)


@lower(aten.minimum.default)
def minimum(self: Sym, other: Sym) -> Sym:
    refuse_complex("minimum", self, other)
    return P.binary("minimum", self, other)


@lower(aten.atan2.default)
def atan2(self: Sym, other: Sym) -> Sym:
    return P.binary("atan2", self, other, Kind.INT_TO_FLOAT)


@lower(aten.copysign.Tensor, aten.copysign.Scalar)
def copysign(self: Sym, other: Any) -> Sym:
    """|self| with other's sign bit (-0.0 and a negative NaN count as negative), int -> float promotion. A lowering,
    not upstream's decomposition: that refuses a CPU 0-dim operand, which CPU/CUDA take as a scalar."""
    return P.binary("copysign", self, other, Kind.INT_TO_FLOAT)


@lower(aten.heaviside.default)
def heaviside(self: Sym, values: Sym) -> Sym:
    """ATen's kernel: values where self == 0, else self > 0 (so NaN gives 0); same dtypes only, no complex."""
    if self.dtype.is_complex or values.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if self.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    positive = P.convert(P.compare("GT", self, P.zeros_like(self)), self.dtype)
    return P.where(P.compare("EQ", self, P.zeros_like(self)), values, positive)


_FLOAT_UNARY = {
    aten.exp.default: "exponential", aten.expm1.default: "exponential_minus_one", aten.log.default: "log",
    aten.log1p.default: "log_plus_one", aten.sqrt.default: "sqrt", aten.rsqrt.default: "rsqrt",
    aten.tanh.default: "tanh", aten.sigmoid.default: "logistic", aten.sin.default: "sine",
    aten.cos.default: "cosine", aten.tan.default: "tan", aten.erf.default: "erf", aten.erfinv.default: "erfinv",
    aten.lgamma.default: "lgamma", aten.digamma.default: "digamma", aten.atan.default: "atan",
    aten.asin.default: "asin", aten.acos.default: "acos", aten.sinh.default: "sinh", aten.cosh.default: "cosh",
    aten.asinh.default: "asinh", aten.acosh.default: "acosh", aten.atanh.default: "atanh",
    aten.reciprocal.default: "reciprocal", aten.exp2.default: "exp2", aten.log2.default: "log2",
    aten.log10.default: "log10",
}
_SAME_UNARY = {
    aten.neg.default: "negate", aten.abs.default: "abs", aten.sign.default: "sign",
    aten.floor.default: "floor", aten.ceil.default: "ceil", aten.trunc.default: "trunc",
    aten.round.default: "round_nearest_even", aten.bitwise_not.default: "not",
}


def _float_unary(name: str) -> Any:
    def lowering(self: Sym) -> Sym:
        return P.float_unary(name, self)

    lowering.__name__ = name
    return lowering


# CPU's refusal of a complex input, per same-dtype unary kernel (all NotImplementedError); {} is the dtype's name.
_COMPLEX_REFUSED = {
    "floor": "floor is not supported for complex inputs", "ceil": "ceil is not supported for complex inputs",
    "trunc": "trunc is not supported for complex inputs",
    "round_nearest_even": "\"round_vml_cpu\" not implemented for '{}'",
    "sign": "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.",
}


def refuse_complex_unary(name: str, self: Sym) -> None:
    """CPU's NotImplementedError for a complex input of a real-only unary kernel (`name`: a _COMPLEX_REFUSED key)."""
    if self.dtype.is_complex and name in _COMPLEX_REFUSED:
        raise NotImplementedError(_COMPLEX_REFUSED[name].format(aten_type_name(self.dtype)))


def _same_unary(name: str) -> Any:
    def lowering(self: Sym) -> Sym:
        refuse_complex_unary(name, self)
        if self.dtype == torch.complex32:
            return via_complex64(lowering, self)
        if self.dtype == torch.bool and name in ("sign", "abs"):
            return self
        if self.dtype.is_complex and name in ("abs", "sign"):
            from torchtpu.ops.complex import complex_abs, complex_sgn

            return complex_abs(self) if name == "abs" else complex_sgn(self)
        if name == "sign" and self.dtype.is_floating_point:  # CPU: (0 < a) - (a < 0): NaN -> 0, -0.0 -> 0.0
            return (P.convert(P.compare("GT", self, 0), self.dtype)
                    - P.convert(P.compare("LT", self, 0), self.dtype))
        if name == "not" and (self.dtype.is_floating_point or self.dtype.is_complex):
            raise NotImplementedError(f'"bitwise_not" not implemented for {aten_type_name(self.dtype)!r}')
        if name == "negate" and self.dtype == torch.bool:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.")
        return P.emit1(name, [self])

    lowering.__name__ = name
    return lowering


for _op, _name in _FLOAT_UNARY.items():
    lower(_op)(_float_unary(_name))
for _op, _name in _SAME_UNARY.items():
    lower(_op)(_same_unary(_name))


@lower(aten.sgn.default)
def sgn(self: Sym) -> Sym:
    if self.dtype == torch.bool:
        return self
    if self.dtype == torch.complex32:
        from torchtpu.ops.complex import complex32_sgn

        return complex32_sgn(self)
    if self.dtype.is_complex:
        from torchtpu.ops.complex import complex_sgn

        return complex_sgn(self)
    return _same_unary("sign")(self)


def _float_like(x: Sym) -> bool:
    return x.dtype.is_floating_point or x.dtype.is_complex


def _floats_only(x: Sym, kernel: str) -> None:
    """ATen's CPU kernels of some float-only ops refuse integer and bool tensors by dtype dispatch."""
    if not _float_like(x):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{aten_type_name(x.dtype)}\'')


@lower(aten.frac.default)
def frac(self: Sym) -> Sym:
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f'"frac_cpu" not implemented for \'{aten_type_name(self.dtype)}\'')
    return self - P.emit1("trunc", [self])


@lower(aten.round.decimals)
def round_decimals(self: Sym, decimals: int = 0) -> Sym:
    if self.dtype.is_complex:
        raise NotImplementedError(f'"round_cpu" not implemented for \'{aten_type_name(self.dtype)}\'')
    scale = 10.0 ** decimals
    x = P.convert(self, torch.float32) if self.dtype in (torch.float16, torch.bfloat16) else self  # CPU's opmath
    return P.convert(P.emit1("round_nearest_even", [x * scale]) / scale, self.dtype)


_COMPARE = {aten.eq: "EQ", aten.ne: "NE", aten.lt: "LT", aten.le: "LE", aten.gt: "GT", aten.ge: "GE"}


def _compare(direction: str) -> Any:
    def lowering(self: Sym, other: Any) -> Sym:
        return P.compare(direction, self, other)

    return lowering


for _packet, _dir in _COMPARE.items():
    lower(_packet.Tensor, _packet.Scalar)(_compare(_dir))


@lower(aten.isnan.default)
def isnan(self: Sym) -> Sym:
    return P.compare("NE", self, self)


@lower(aten.isinf.default)
def isinf(self: Sym) -> Sym:
    if self.dtype == torch.complex32:  # its parts, exactly
        self = P.convert(self, torch.complex64)
    if self.dtype.is_complex:  # ATen: isinf(real) | isinf(imag)
        parts = [P.compare("EQ", P.emit1("abs", [P.emit1(n, [self])]), math.inf) for n in ("real", "imag")]
        return P.emit1("or", parts)
    if not self.dtype.is_floating_point:
        return P.full(False, self.shape, torch.bool)
    return P.compare("EQ", P.emit1("abs", [self]), math.inf)


def _logical(name: str) -> Any:
    def lowering(self: Sym, other: Sym) -> Sym:
        a, b = P.prepare([P.compare("NE", self, 0), P.compare("NE", other, 0)], torch.bool)
        return P.emit1(name, [a, b])

    return lowering


lower(aten.logical_and.default)(_logical("and"))
lower(aten.logical_or.default)(_logical("or"))
lower(aten.logical_xor.default)(_logical("xor"))


@lower(aten.logical_not.default)
def logical_not(self: Sym) -> Sym:
    return P.compare("EQ", self, 0) if self.dtype != torch.bool else P.emit1("not", [self])


def _bitwise(name: str) -> Any:
    def lowering(self: Any, other: Any) -> Sym:
        _, result = P.result_dtype(self, other)
        if result.is_floating_point or result.is_complex:
            raise NotImplementedError(f'"bitwise_{name}" not implemented for {aten_type_name(result)!r}')
        return P.binary(name, self, other)

    return lowering


for _packet, _name in ((aten.bitwise_and, "and"), (aten.bitwise_or, "or"), (aten.bitwise_xor, "xor")):
    lower(_packet.Tensor, _packet.Scalar)(_bitwise(_name))


@lower(aten.where.self)
def where(condition: Sym, self: Any, other: Any) -> Sym:
    operand_checks.check_where_condition(condition)
    _, result = P.result_dtype(self, other)
    if not (result.is_floating_point or result.is_complex):  # CPU checks a scalar operand for integer results only
        check_scalar_fits(self, result, "where(): self")
        check_scalar_fits(other, result, "where(): other")
    return P.where(condition, self, other)


@lower(aten.masked_fill.Scalar, aten.masked_fill.Tensor, prepare=host_index.MASK_AT_1)
def masked_fill(self: Sym, mask: Sym, value: Any) -> Sym:
    operand_checks.check_masked_fill_value(value)
    operand_checks.check_masked_fill_mask(mask)
    if isinstance(value, Sym):
        value = value_fits.check_fits(value, self.dtype, P.convert(value, self.dtype))
    else:
        check_scalar_fits(value, self.dtype, "masked_fill()")
        value = P.const(value, self.dtype)
    shape = P.broadcast_shapes(self.shape, mask.shape)
    m = P.broadcast_to(P.convert(mask, torch.bool), shape)
    return P.emit1("select", [m, P.broadcast_to(value, shape), P.broadcast_to(self, shape)])


@lower(aten.clamp.default, aten.clamp.Tensor)
def clamp(self: Sym, min: Any = None, max: Any = None) -> Sym:  # noqa: A002 - ATen's names
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if self.dtype.is_floating_point:  # ATen reads a Scalar bound of a float tensor as a double
        for b in (min, max):
            if isinstance(b, complex):
                _real_bound(b)
        min, max = (b.real if isinstance(b, complex) else b for b in (min, max))  # noqa: A001
    compute, result = P.result_dtype(self, min, max)
    if result.is_complex:  # after the shapes, as ATen's TensorIterator
        P.broadcast_shapes(self.shape, *(b.shape for b in (min, max) if isinstance(b, Sym)))
        raise NotImplementedError("clamp is not supported for complex types")
    if result == torch.bool and not any(isinstance(b, Sym) for b in (min, max)):  # ATen's Scalar kernels' dtypes
        kernel = "clamp" if min is not None and max is not None else "clamp_min" if min is not None else "clamp_max"
        raise NotImplementedError(f'"{kernel}_scalar_cpu" not implemented for \'Bool\'')
    check_scalar_fits(min, result, "clamp(): min")
    check_scalar_fits(max, result, "clamp(): max")
    x = P.convert(self, compute)
    if min is not None:
        x, lo = P.prepare([x, min], compute)
        x = P.emit1("maximum", [x, lo])
    if max is not None:
        x, hi = P.prepare([x, max], compute)
        x = P.emit1("minimum", [x, hi])
    return P.convert(x, result)


@lower(aten.clamp_min.default)
def clamp_min(self: Sym, min: Any) -> Sym:  # noqa: A002
    _no_complex_bound(min)
    return clamp(self, min, None)


@lower(aten.clamp_max.default)
def clamp_max(self: Sym, max: Any) -> Sym:  # noqa: A002
    _no_complex_bound(max)
    return clamp(self, None, max)


def _real_bound(bound: complex) -> None:
    """ATen reads a Scalar bound of a float tensor as a double: a nonzero imaginary part overflows (a program
    input's is checked at every call)."""
    if not known(bound):
        scalar_args.check_each_call(bound, _real_bound)
    elif bound.imag != 0:
        raise RuntimeError("value cannot be converted to type double without overflow")


def _no_complex_bound(bound: Any) -> None:
    if isinstance(bound, complex):  # clamp_min/clamp_max promote to complex, where clamp reads a double
        raise NotImplementedError("clamp is not supported for complex types")


@lower(aten.relu.default)
def relu(self: Sym) -> Sym:
    if self.dtype.is_complex:  # ATen's relu is clamp_min(0)
        raise NotImplementedError("clamp is not supported for complex types")
    return P.where(P.compare("LE", self, 0), P.zeros_like(self), self)  # NaN stays NaN, as clamp_min(0)


def promoted(*xs: Sym) -> tuple[list[Sym], torch.dtype]:
    """The operands in their common dtype (ATen's TensorIterator binary op), and that dtype."""
    _, common = P.result_dtype(*xs, kind=Kind.NO_OPMATH)
    return [P.convert(x, common) for x in xs], common


def opmath(*xs: Sym) -> tuple[list[Sym], torch.dtype]:
    """The operands in their common dtype's computation dtype (float32 for float16/bfloat16: a CPU kernel's
    opmath, rounded once at the end), and the common (result) dtype."""
    compute, common = P.result_dtype(*xs)
    return [P.convert(x, compute) for x in xs], common


@lower(aten.threshold_backward.default)
def threshold_backward(grad_output: Sym, self: Sym, threshold: Any) -> Sym:
    # ATen: threshold(self, threshold, 0, other=grad) as a binary TensorIterator op, so the result has the
    # common dtype of grad and self, and the threshold is read as that dtype
    # (AT_DISPATCH_ALL_TYPES: no bool or complex kernel); a float16/bfloat16 x is compared in float with the
    # threshold read as float, not rounded to the tensor's type (threshold_kernel's reduced-float path)
    (g, x), common = promoted(grad_output, self)
    if common == torch.bool or common.is_complex:
        raise NotImplementedError(f'"threshold_cpu" not implemented for {aten_type_name(common)!r}')
    read = dtypes.opmath(common)
    value = checked_scalar(threshold, read)
    return P.where(P.compare("LE", P.convert(x, read), P.convert(value, read)), P.zeros_like(g), g)


def _unary_opmath(x: Sym) -> torch.dtype:
    """A unary float kernel's computation dtype on CPU: float64 stays float64 (it was float32 for every input,
    a float64 gelu/silu off by 1e-8, which gradcheck's finite differences reject), the rest in float32."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


@lower(aten.gelu.default)
def gelu(self: Sym, approximate: str = "none") -> Sym:
    x = P.convert(self, _unary_opmath(self))
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        y = x * 0.5 * (P.emit1("tanh", [inner]) + 1.0)
    else:
        y = x * 0.5 * (P.emit1("erf", [x * (1.0 / math.sqrt(2.0))]) + 1.0)
    return P.convert(y, self.dtype)


@lower(aten.gelu_backward.default)
def gelu_backward(grad_output: Sym, self: Sym, approximate: str = "none") -> Sym:
    # a binary TensorIterator op: the common dtype of grad and self (float64 stays float64), in its opmath
    (g, x), common = opmath(grad_output, self)
    if not common.is_floating_point:  # AT_DISPATCH_FLOATING_TYPES_AND2(BFloat16, Half)
        raise NotImplementedError(f'"GeluBackwardKernelImpl" not implemented for \'{aten_type_name(common)}\'')
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        inner = (x + x * x * x * 0.044715) * k
        t = P.emit1("tanh", [inner])
        d_inner = (x * x * (3 * 0.044715) + 1.0) * k
        grad = (t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * d_inner
    else:
        cdf = (P.emit1("erf", [x * (1.0 / math.sqrt(2.0))]) + 1.0) * 0.5
        pdf = P.emit1("exponential", [x * x * -0.5]) * (1.0 / math.sqrt(2.0 * math.pi))
        grad = cdf + x * pdf
    return P.convert(g * grad, common)


@lower(aten.silu.default)
def silu(self: Sym) -> Sym:
    if self.dtype.is_complex:  # CPU's complex kernel: x / (1 + exp(-x))
        return self / (P.emit1("exponential", [-self]) + 1.0)
    x = P.convert(self, _unary_opmath(self))
    return P.convert(x * P.emit1("logistic", [x]), self.dtype)


@lower(aten.tanh_backward.default)
def tanh_backward(grad_output: Sym, output: Sym) -> Sym:
    (g, y), common = opmath(grad_output, output)  # CPU: a * (1 - b * b) in the common dtype's opmath
    if y.dtype.is_complex:  # CPU: a * conj(1 - b * b)
        from torchtpu.ops.complex import conj

        return P.convert(g * conj(1 - y * y), common)
    return P.convert(g * (1 - y * y), common)


@lower(aten.sigmoid_backward.default)
def sigmoid_backward(grad_output: Sym, output: Sym) -> Sym:
    (g, y), common = opmath(grad_output, output)  # CPU: a * (1 - b) * b in the common dtype's opmath
    if y.dtype.is_complex:  # CPU: a * conj((1 - b) * b)
        from torchtpu.ops.complex import conj

        return P.convert(g * conj((1 - y) * y), common)
    return P.convert(g * (1 - y) * y, common)


@lower(aten.leaky_relu.default, static=("negative_slope",))
def leaky_relu(self: Sym, negative_slope: float = 0.01) -> Sym:  # the kernel's negval.to<opmath_t>()
    slope = checked_scalar(negative_slope, dtypes.opmath(self.dtype) if self.dtype.is_floating_point else self.dtype)
    return P.where(P.compare("GT", self, 0), self, self * slope)


@lower(aten.leaky_relu_backward.default, static=("negative_slope",))
def leaky_relu_backward(grad_output: Sym, self: Sym, negative_slope: float, self_is_result: bool) -> Sym:
    (g, x), common = opmath(grad_output, self)  # a binary TensorIterator op: the common dtype of grad and self
    return P.convert(P.where(P.compare("GT", x, 0), g, g * negative_slope), common)


@lower(aten.fill.Scalar, aten.fill.Tensor)
def fill(self: Sym, value: Any) -> Sym:
    operand_checks.check_fill_value(value)
    if isinstance(value, Sym):
        return P.broadcast_to(P.convert(value, self.dtype), self.shape)
    check_scalar_fits(value, self.dtype, "fill_()", self.numel())
    return P.full(value, self.shape, self.dtype)


@lower(aten.zero_.default)
def zero_(self: Sym) -> Sym:
    return P.full(0, self.shape, self.dtype)


@lower(aten.hardtanh.default, static=("min_val", "max_val"))
def hardtanh(self: Sym, min_val: float = -1.0, max_val: float = 1.0) -> Sym:
    if not self.dtype.is_floating_point:  # the bounds take the tensor's type
        min_val, max_val = int(checked_scalar(min_val, torch.int64)), int(checked_scalar(max_val, torch.int64))
    return clamp(self, min_val, max_val)
