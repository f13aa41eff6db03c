"""Element-wise emitters: unary and binary math, compare/select/clamp/convert, constants, iota, random bits,
complex numbers and FFT."""

from __future__ import annotations

import math

import numpy as np
from torchtpu.drivers.ir import FLOAT_DTYPES, INT_DTYPES, Op
from torchtpu.drivers.pjrt.emit_core import BITS_INT, SIGNED, Emitter, V, _ints, _out, emits, numel

# -- element-wise, unary --
_FLOAT_UNARY = {
    "exponential": "stablehlo.exponential", "exponential_minus_one": "stablehlo.exponential_minus_one",
    "log": "stablehlo.log", "log_plus_one": "stablehlo.log_plus_one", "sqrt": "stablehlo.sqrt",
    "rsqrt": "stablehlo.rsqrt", "cbrt": "stablehlo.cbrt", "tanh": "stablehlo.tanh",
    "logistic": "stablehlo.logistic", "sine": "stablehlo.sine", "cosine": "stablehlo.cosine",
    "tan": "stablehlo.tan", "erf": "chlo.erf", "erfc": "chlo.erfc", "erfinv": "chlo.erf_inv",
    "atan": "chlo.atan", "asin": "chlo.asin", "acos": "chlo.acos", "sinh": "chlo.sinh",
    "cosh": "chlo.cosh", "asinh": "chlo.asinh", "acosh": "chlo.acosh", "atanh": "chlo.atanh",
}


def _float_math(e: Emitter, name: str, x: V) -> V:
    if name in _FLOAT_UNARY:
        return e.unary(_FLOAT_UNARY[name], x)
    if name == "reciprocal":
        return e.binary("stablehlo.divide", e.like(1, x), x)
    if name == "exp2":
        return e.binary("stablehlo.power", e.like(2, x), x)
    if name == "log2":
        return e.binary("stablehlo.divide", e.unary("stablehlo.log", x), e.like(math.log(2.0), x))
    if name == "log10":
        return e.binary("stablehlo.divide", e.unary("stablehlo.log", x), e.like(math.log(10.0), x))
    raise KeyError(name)


@emits(*_FLOAT_UNARY, "reciprocal", "exp2", "log2", "log10")
def _emit_float_unary(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    shape, dtype = _out(op)
    xf = x if x.dtype in ("float64", "float32", "complex64", "complex128") else e.convert(x, "float32")
    return [e.convert(_float_math(e, op.name, xf), dtype)]


@emits("abs", "negate", "floor", "ceil", "round_nearest_even", "round_nearest_afz", "sign", "square", "trunc", "not")
def _emit_any_unary(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    shape, dtype = _out(op)
    name = op.name
    if x.dtype == "bool":
        if name == "not":
            return [e.unary("stablehlo.not", x)]
        if name in ("abs", "floor", "ceil", "round_nearest_even", "trunc", "sign"):
            return [x]
        if name == "square":
            return [x]
    xc = e.widen(x)
    if name in ("floor", "ceil", "round_nearest_even", "round_nearest_afz", "trunc") and xc.dtype not in FLOAT_DTYPES:
        y = xc
    elif name == "trunc":
        y = e.select(e.compare("LT", xc, e.like(0, xc)), e.unary("stablehlo.ceil", xc),
                     e.unary("stablehlo.floor", xc))
    elif name == "square":
        y = e.binary("stablehlo.multiply", xc, xc)
    elif name == "sign" and xc.dtype == "uint8":
        y = e.convert(e.compare("NE", xc, e.like(0, xc)), "uint8")
    elif name == "abs" and xc.dtype == "uint8":
        y = xc
    elif name == "negate" and xc.dtype == "uint8":
        y = e.binary("stablehlo.subtract", e.like(0, xc), xc)
    else:
        y = e.unary(f"stablehlo.{name}", xc)
    return [e.convert(y, dtype)]


@emits("is_finite")
def _emit_is_finite(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    if x.dtype in FLOAT_DTYPES:
        return [e.unary("stablehlo.is_finite", x, "bool")]
    return [e.const(True, x.shape, "bool")]


# -- element-wise, binary --
_BOOL_BINARY = {"add": "stablehlo.or", "multiply": "stablehlo.and", "maximum": "stablehlo.or",
                "minimum": "stablehlo.and", "and": "stablehlo.and", "or": "stablehlo.or", "xor": "stablehlo.xor"}
_PLAIN_BINARY = {"add": "stablehlo.add", "subtract": "stablehlo.subtract", "multiply": "stablehlo.multiply",
                 "maximum": "stablehlo.maximum", "minimum": "stablehlo.minimum", "atan2": "stablehlo.atan2",
                 "and": "stablehlo.and", "or": "stablehlo.or", "xor": "stablehlo.xor", "fmod": "stablehlo.remainder",
                 "power": "stablehlo.power", "shift_left": "stablehlo.shift_left",
                 "nextafter": "chlo.next_after"}


def _signbit(e: Emitter, x: V) -> V:
    bits = BITS_INT[x.dtype]
    return e.compare("LT", e.bitcast(x, bits), e.const(0, x.shape, bits))


def _divide(e: Emitter, a: V, b: V) -> V:
    """a / b correctly rounded, as ATen's: XLA would turn a division by a splat into a multiplication by its
    reciprocal (off by an ulp in a third of float32 quotients), so such a divisor goes behind a barrier. Not on
    TPU: its division is not IEEE's either way, and the barrier would materialise the broadcast in HBM."""
    if a.dtype in FLOAT_DTYPES and e.platform != "tpu" and e.is_splat(b):
        b = e.barrier(b)
    return e.binary("stablehlo.divide", a, b)


def _binary_math(e: Emitter, name: str, a: V, b: V) -> V:
    is_float = a.dtype in FLOAT_DTYPES
    if name in _PLAIN_BINARY:
        return e.binary(_PLAIN_BINARY[name], a, b)
    if name == "divide":
        return _divide(e, a, b)
    if name == "shift_right_arithmetic":
        return e.binary("stablehlo.shift_right_logical" if a.dtype == "uint8" else "stablehlo.shift_right_arithmetic",
                        a, b)
    if name == "remainder":  # Python-style: the result takes the divisor's sign
        r = e.binary("stablehlo.remainder", a, b)
        if a.dtype == "uint8":
            return r
        zero = e.like(0, r)
        fix = e.binary("stablehlo.and", e.compare("NE", r, zero),
                       e.compare("NE", e.compare("LT", r, zero), e.compare("LT", b, zero)))
        return e.select(fix, e.binary("stablehlo.add", r, b), r)
    if name == "floor_divide":
        if is_float:
            return e.unary("stablehlo.floor", _divide(e, a, b))
        q = e.binary("stablehlo.divide", a, b)
        if a.dtype == "uint8":
            return q
        r = e.binary("stablehlo.remainder", a, b)
        zero = e.like(0, r)
        fix = e.binary("stablehlo.and", e.compare("NE", r, zero),
                       e.compare("NE", e.compare("LT", r, zero), e.compare("LT", b, zero)))
        return e.select(fix, e.binary("stablehlo.subtract", q, e.like(1, q)), q)
    if name == "hypot":
        aa, ab = e.unary("stablehlo.abs", a), e.unary("stablehlo.abs", b)
        big, small = e.binary("stablehlo.maximum", aa, ab), e.binary("stablehlo.minimum", aa, ab)
        ratio = e.binary("stablehlo.divide", small, big)
        root = e.unary("stablehlo.sqrt", e.binary("stablehlo.add", e.like(1, a),
                                                  e.binary("stablehlo.multiply", ratio, ratio)))
        r = e.select(e.compare("EQ", big, e.like(0, a)), e.like(0, a), e.binary("stablehlo.multiply", big, root))
        inf = e.like(math.inf, a)
        return e.select(e.binary("stablehlo.or", e.compare("EQ", aa, inf), e.compare("EQ", ab, inf)), inf, r)
    if name == "copysign":
        mag = e.unary("stablehlo.abs", a)
        return e.select(_signbit(e, b), e.unary("stablehlo.negate", mag), mag)
    if name == "xlogy":
        out = e.binary("stablehlo.multiply", a, e.unary("stablehlo.log", b))
        keep_zero = e.binary("stablehlo.and", e.compare("EQ", a, e.like(0, a)), e.compare("EQ", b, b))
        return e.select(keep_zero, e.like(0, out), out)
    raise KeyError(name)


@emits("add", "subtract", "multiply", "divide", "remainder", "fmod", "power", "maximum", "minimum", "atan2",
       "and", "or", "xor", "shift_left", "shift_right_arithmetic", "floor_divide", "nextafter", "hypot",
       "copysign", "xlogy")
def _emit_binary(e: Emitter, op: Op, args: list[V]) -> list[V]:
    a, b = args
    shape, dtype = _out(op)
    if a.dtype == "bool" and op.name in _BOOL_BINARY:
        return [e.binary(_BOOL_BINARY[op.name], a, b)]
    if op.name == "nextafter" and a.dtype == b.dtype == dtype:  # the next value of the storage dtype
        return [_binary_math(e, op.name, a, b)]
    if a.dtype in FLOAT_DTYPES or op.name not in ("and", "or", "xor", "shift_left", "shift_right_arithmetic"):
        a, b = e.widen(a), e.widen(b)
    if e.checking and a.dtype in INT_DTYPES and numel(b.shape):
        if op.name in ("divide", "remainder", "floor_divide"):
            what = "remainder" if op.name == "remainder" else "division"
            e.check("ZeroDivisionError", f"integer {what} by zero", e.compare("EQ", b, e.like(0, b)))
    float_only = ("atan2", "nextafter", "hypot", "copysign", "xlogy")
    if op.name in float_only and a.dtype not in FLOAT_DTYPES:
        a, b = e.convert(a, "float32"), e.convert(b, "float32")
    if op.name == "power" and a.dtype in SIGNED:  # as ATen: 1 ** -n = 1, (-1) ** -n = +-1, other ** -n = 0
        negative = e.compare("LT", b, e.like(0, b))
        positive = _binary_math(e, "power", a, e.select(negative, e.like(0, b), b))
        one, zero = e.like(1, a), e.like(0, a)
        even = e.compare("EQ", e.binary("stablehlo.remainder", b, e.like(2, b)), e.like(0, b))
        minus_one = e.select(even, one, e.like(-1, a))
        inverse = e.select(e.compare("EQ", a, one), one,
                           e.select(e.compare("EQ", a, e.like(-1, a)), minus_one, zero))
        return [e.convert(e.select(negative, inverse, positive), dtype)]
    return [e.convert(_binary_math(e, op.name, a, b), dtype)]


@emits("compare")
def _emit_compare(e: Emitter, op: Op, args: list[V]) -> list[V]:
    a, b = args
    return [e.compare(op.attr("direction"), a, b)]


@emits("select")
def _emit_select(e: Emitter, op: Op, args: list[V]) -> list[V]:
    return [e.select(*args)]


@emits("clamp")
def _emit_clamp(e: Emitter, op: Op, args: list[V]) -> list[V]:
    lo, x, hi = (e.widen(a) for a in args)
    if x.dtype == "bool":
        y = e.binary("stablehlo.and", e.binary("stablehlo.or", x, lo), hi)
    else:  # max/min propagate NaN from any operand, as the sim's clamp does
        y = e.binary("stablehlo.minimum", e.binary("stablehlo.maximum", x, lo), hi)
    return [e.convert(y, op.outputs[0].dtype)]


@emits("convert")
def _emit_convert(e: Emitter, op: Op, args: list[V]) -> list[V]:
    return [e.convert(args[0], op.attr("dtype"))]


@emits("constant")
def _emit_constant(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    return [e.const(op.attr("value"), shape, dtype)]


@emits("iota")
def _emit_iota(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    return [e.convert(e.iota(shape, op.attr("dimension")), dtype)]


@emits("rng")
def _emit_rng(e: Emitter, op: Op, args: list[V]) -> list[V]:
    """Philox bits keyed by a hash of (seed, offset), so each offset draws from its own stream (as in the sim);
    uniform: 23 random mantissa bits in [0, 1); normal: sqrt(2) * erfinv(2u - 1), as jax.random does."""
    (state,) = args
    shape, dtype = _out(op)
    n = numel(shape)
    if n == 0:
        return [e.const(0, shape, dtype)]

    def word(i: int) -> V:
        one = e.op("stablehlo.slice", [state], (1,), "int64",
                   f"start_indices = {_ints([i])}, limit_indices = {_ints([i + 1])}, strides = {_ints([1])}")
        return e.reshape(one, ())

    golden = e.const(-7046029254386353131, (), "int64")  # 0x9E3779B97F4A7C15
    key = e.binary("stablehlo.xor", e.binary("stablehlo.multiply", word(0), golden), word(1))
    key = e.op("stablehlo.concatenate", [e.reshape(key, (1,)), e.const(0, (1,), "int64")], (2,), "int64",
               "dimension = 0 : i64")
    _, bits = e.op_multi("stablehlo.rng_bit_generator", [e.bitcast(key, "uint64")],
                         [((2,), "uint64"), ((n,), "uint32")], "rng_algorithm = #stablehlo<rng_algorithm PHILOX>")
    mantissa = e.binary("stablehlo.or", e.binary("stablehlo.shift_right_logical", bits, e.like(9, bits)),
                        e.like(0x3F800000, bits))
    values = e.binary("stablehlo.subtract", e.bitcast(mantissa, "float32"), e.const(1.0, (n,), "float32"))
    if op.attr("distribution") == "normal":
        v = e.binary("stablehlo.subtract", e.binary("stablehlo.multiply", values, e.const(2.0, (n,), "float32")),
                     e.const(1.0, (n,), "float32"))
        v = e.binary("stablehlo.maximum", v, e.const(float(np.nextafter(np.float32(-1), np.float32(0))), (n,),
                                                     "float32"))
        values = e.binary("stablehlo.multiply", e.unary("chlo.erf_inv", v), e.const(math.sqrt(2.0), (n,), "float32"))
    return [e.convert(e.reshape(values, shape), dtype)]


# -- complex numbers and FFT --
@emits("real", "imag")
def _emit_real_imag(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    return [e.op(f"stablehlo.{op.name}", args, shape, dtype)]


@emits("complex")
def _emit_complex(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    return [e.op("stablehlo.complex", args, shape, dtype)]


@emits("fft")
def _emit_fft(e: Emitter, op: Op, args: list[V]) -> list[V]:
    """stablehlo.fft over the innermost dims (IFFT and IRFFT scale by 1/n, as numpy's inverse transforms)."""
    shape, dtype = _out(op)
    if 0 in shape or 0 in args[0].shape:
        return [e.const(0, shape, dtype)]
    return [e.op("stablehlo.fft", args, shape, dtype, f"fft_type = #stablehlo<fft_type {op.attr('fft_type')}>, "
                 f"fft_length = {_ints(op.attr('fft_length'))}")]
