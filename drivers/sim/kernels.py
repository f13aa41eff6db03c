"""The sim driver's value rule for each IR op: numpy views in, numpy arrays out.

Kernels run under `np.errstate(all="ignore")`, set once per launch by the driver (IEEE results, no warnings).

Float math runs in float32 on the VPU model (bf16/f16 storage is widened on load and rounded on store, with
bf16 subnormals flushed as on the chip); matmuls and convolutions go through `torchtpu.sim.mxu`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import ml_dtypes
import numba
import numpy as np
from torchtpu.drivers import ir
from torchtpu.drivers.ir import Op
from torchtpu.sim import numerics

NP_DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32), "bfloat16": np.dtype(ml_dtypes.bfloat16), "float16": np.dtype(np.float16),
    "float64": np.dtype(np.float64), "int64": np.dtype(np.int64), "int32": np.dtype(np.int32),
    "int16": np.dtype(np.int16), "int8": np.dtype(np.int8), "uint8": np.dtype(np.uint8),
    "bool": np.dtype(np.bool_), "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn), "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "complex32": np.dtype(np.uint32),  # two float16 bit patterns, the real part in the low half (c10's layout)
}
_NARROW = ("bfloat16", "float16")

Kernel = Callable[[Op, list[np.ndarray]], list[np.ndarray]]
KERNELS: dict[str, Kernel] = ir.impls("sim")  # IR op name -> kernel, filled by `kernel` (ir.implements)


def complex32_bits(x: np.ndarray) -> np.ndarray:
    """complex32 words of a complex or real array: each part rounded to float16 once (from float32: c10's
    complex<Half>(complex<float>)), the real part's bits low."""
    c = x.astype(np.complex64) if x.dtype != np.complex64 else x
    with np.errstate(over="ignore"):
        re = np.ascontiguousarray(c.real).astype(np.float16).view(np.uint16).astype(np.uint32)
        im = np.ascontiguousarray(c.imag).astype(np.float16).view(np.uint16).astype(np.uint32)
    return re | (im << np.uint32(16))


def complex32_values(bits: np.ndarray) -> np.ndarray:
    """complex32 words as complex64 values (exact)."""
    out = np.empty(bits.shape, np.complex64)
    out.real = (bits & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
    out.imag = (bits >> np.uint32(16)).astype(np.uint16).view(np.float16)
    return out


def store(x: np.ndarray, dtype: str) -> np.ndarray:
    """Converts a computed array to the storage dtype `dtype` as the chip would (bf16: RNE, subnormals flushed)."""
    target = NP_DTYPES[dtype]
    if x.dtype == target:
        return x
    if dtype == "complex32":
        return complex32_bits(x)
    if x.dtype.kind == "c" and np.dtype(target).kind != "c":  # a complex value into a real dtype: its real part
        x = x.real
    if dtype == "bfloat16":
        if x.dtype != np.float32:
            x = x.astype(np.float32)
        return numerics.to_bf16(x)
    if dtype in ("int64", "int32", "int16", "int8", "uint8") and x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            return np.trunc(x).astype(target)
    if dtype in ir.FLOAT8_DTYPES and x.dtype != np.float32:
        x = x.astype(np.float32)  # through float32, as c10's fp8 constructors take a float; then RNE (ml_dtypes)
    return x.astype(target)


_NARROW_NP = frozenset({NP_DTYPES["bfloat16"], NP_DTYPES["float16"], NP_DTYPES["float8_e4m3fn"],
                        NP_DTYPES["float8_e5m2"]})


def load(x: np.ndarray) -> np.ndarray:
    """Widens narrow floats to float32 for VPU math."""
    if x.dtype in _NARROW_NP:
        return x.astype(np.float32)
    return x


def kernel(*names: str) -> Callable[[Kernel], Kernel]:
    """Registers the decorated function as the sim kernel of each IR op in `names` (each known, once)."""
    return ir.implements("sim", *names)


# erf stays the C library's (glibc's erff: ~9 ns per float32 element, scalar): it is not correctly rounded (on
# 2^20 N(0, 1) float32 inputs 4.9% differ from float32(erf(float64 x))), so no other implementation, vectorized
# or not, gives its bits; the fused loops call the same function (fusion.py).
@numba.vectorize(["float32(float32)", "float64(float64)"], cache=True)
def _erf(x):  # pragma: no cover - numba
    return math.erf(x)


@numba.vectorize(["float32(float32)", "float64(float64)"], cache=True)
def _erfc(x):  # pragma: no cover - numba
    return math.erfc(x)


@numba.vectorize(["float32(float32)", "float64(float64)"], cache=True)
def _erfinv(y):  # pragma: no cover - numba
    # Giles' single-precision approximation, refined by two Newton steps on erf.
    if y <= -1.0:
        return -math.inf if y == -1.0 else math.nan
    if y >= 1.0:
        return math.inf if y == 1.0 else math.nan
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    x = p * y
    for _ in range(2):
        err = math.erf(x) - y
        x -= err / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def _round_half_even(x: np.ndarray) -> np.ndarray:
    return np.rint(x)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)  # x - t is exact, so the half-way test is too (floor(|x| + 0.5) rounds 0.49999997 up)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


# logistic and rsqrt compute each numpy step in place in one new array (IN_PLACE; False: one new array per step,
# the old path, for measuring): the same ufuncs in the same order and loop dtypes, each element computed alone,
# so the same bits (tests/test_sim_unary_in_place.py), without logistic's three temporaries (each a fresh array
# written and read back: 2 MB apiece on a medium Llama's 2 x 256 x 1024 SiLU, 0.70 -> 0.52 ms per call there,
# benchmarks/unary_in_place.py). The exp reads -x, a fresh dense array, in both, so numpy runs the same loop.
IN_PLACE = True
_REAL_FLOATS = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


def _logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) in x's dtype (float32 constants, as the chip's VPU computes it)."""
    if not IN_PLACE or x.dtype not in _REAL_FLOATS:
        return np.float32(1) / (np.float32(1) + np.exp(-x))
    t = np.negative(x) if x.ndim else np.negative(x, out=np.empty((), x.dtype))  # -x's layout; 0-d: an array
    np.exp(t, out=t)
    np.add(np.float32(1), t, out=t)
    return np.divide(np.float32(1), t, out=t)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    """1 / sqrt(x) in x's dtype."""
    if not IN_PLACE or x.dtype not in _REAL_FLOATS:
        return np.float32(1) / np.sqrt(x)
    t = np.sqrt(x) if x.ndim else np.sqrt(x, out=np.empty((), x.dtype))
    return np.divide(np.float32(1), t, out=t)


_UNARY_FLOAT: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exponential": np.exp, "exponential_minus_one": np.expm1, "log": np.log, "log_plus_one": np.log1p,
    "sqrt": np.sqrt, "rsqrt": _rsqrt, "cbrt": np.cbrt, "tanh": np.tanh,
    "logistic": _logistic, "sine": np.sin, "cosine": np.cos,
    "tan": np.tan, "erf": _erf, "erfc": _erfc, "erfinv": _erfinv, "atan": np.arctan,
    "asin": np.arcsin, "acos": np.arccos, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "reciprocal": lambda x: np.float32(1) / x, "exp2": np.exp2,
    "log2": np.log2, "log10": np.log10,
}
_UNARY_ANY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "abs": np.abs, "negate": np.negative, "floor": np.floor, "ceil": np.ceil,
    "round_nearest_even": _round_half_even, "round_nearest_afz": _round_half_away, "sign": np.sign,
    "square": np.square, "trunc": np.trunc,
    "not": lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
}


def _unary(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    (x,) = args
    dtype = op.outputs[0].dtype
    xf = load(x)
    if op.name in _UNARY_FLOAT:  # under the driver's errstate(all="ignore")
        if xf.dtype.kind not in "fc":
            xf = xf.astype(np.float32)
        y = _UNARY_FLOAT[op.name](xf)
    elif op.name in ("floor", "ceil", "trunc", "round_nearest_even", "round_nearest_afz") and xf.dtype.kind != "f":
        y = xf
    else:
        y = _UNARY_ANY[op.name](xf)
    return [store(np.asarray(y), dtype)]


kernel(*_UNARY_FLOAT, *_UNARY_ANY)(_unary)


@kernel("is_finite")
def _is_finite(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = load(args[0])
    return [np.isfinite(x) if x.dtype.kind == "f" else np.ones(x.shape, np.bool_)]


def _int_div_floor(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(b == 0):
        raise ZeroDivisionError("integer division by zero")
    return np.floor_divide(a, b)


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":  # truncating integer division (StableHLO divide on integers)
        if np.any(b == 0):
            raise ZeroDivisionError("integer division by zero")
        q = np.floor_divide(a, b)  # toward zero from the floor: |INT_MIN| has no abs to divide
        return (q + ((q * b != a) & ((a < 0) != (b < 0)))).astype(a.dtype)
    return np.divide(a, b)


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # Python-style (sign of divisor), as torch
    if a.dtype.kind in "iu" and np.any(b == 0):
        raise ZeroDivisionError("integer remainder by zero")
    return np.mod(a, b)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu" and np.any(b < 0):  # as ATen (and the pjrt emitter): 1, +-1 or 0
        safe = np.power(a, np.where(b < 0, 0, b))
        inv = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0)).astype(a.dtype)
        return np.where(b < 0, inv, safe)
    return np.power(a, b)


def _xlogy(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = a * np.log(b)
    return np.where((a == 0) & ~np.isnan(b), np.zeros_like(out), out)


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": _divide,
    "remainder": _remainder, "fmod": np.fmod, "power": _power, "maximum": np.maximum, "minimum": np.minimum,
    "atan2": np.arctan2, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "shift_left": np.left_shift, "shift_right_arithmetic": np.right_shift, "nextafter": np.nextafter,
    "hypot": np.hypot, "copysign": np.copysign, "xlogy": _xlogy,
    "floor_divide": lambda a, b: _int_div_floor(a, b) if a.dtype.kind in "iu" else np.floor(a / b),
}


_BOOL_BINARY = {"add": np.logical_or, "multiply": np.logical_and, "maximum": np.logical_or,
                "minimum": np.logical_and}


@kernel(*_BINARY)
def _binary(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    a, b = args
    if op.name == "nextafter" and a.dtype == b.dtype:  # the next value of the storage dtype, not of float32
        return [np.nextafter(a, b)]
    if a.dtype in _NARROW_NP:
        a = a.astype(np.float32)
    if b.dtype in _NARROW_NP:
        b = b.astype(np.float32)
    fn = _BOOL_BINARY[op.name] if a.dtype == np.bool_ and op.name in _BOOL_BINARY else _BINARY[op.name]
    return [store(np.asarray(fn(a, b)), op.outputs[0].dtype)]  # under the driver's errstate(all="ignore")


_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
            "GE": np.greater_equal}


@kernel("compare")
def _compare(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    a, b = (load(x) for x in args)
    return [_COMPARE[op.attr("direction")](a, b)]


@kernel("select")
def _select(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    pred, a, b = args
    return [np.where(pred, a, b)]


def _pick(pred, a, b):  # pragma: no cover - numba
    return a if pred else b


# select as a ufunc (fast.py's select step): its loop picks a or b by the predicate without a branch, where
# np.where's loop branches per element (2 x 4 x 256 x 64 float32: 0.13 ms under a structured mask, 0.53 under a
# random one, 0.024 here; 512 x 1000 random: 2.3 -> 0.26 ms). Either copies the picked value's bits
# (tests/test_sim_select_ufunc.py: NaN payloads, signalling NaNs, -0.0). Its loops are in numpy's type order, so
# operands of two dtypes take the first loop both cast to safely, np.where's result type (np.result_type); buffers
# of a dtype without a loop (never the step's own: fast.py builds it only for SELECT_DTYPES) take the float32 one
# (float16, bfloat16: exact widening) or are refused (complex: a TypeError), never cast unsafely. `.ufunc`: the
# plain numpy ufunc (numba's DUFunc wrapper adds a Python call).
SELECT_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32",
                 "float64")
SELECT: np.ufunc = numba.vectorize(
    [f"{t}(boolean, {t}, {t})" for t in ("boolean", *SELECT_DTYPES[1:])], cache=True)(_pick).ufunc


@kernel("clamp")
def _clamp(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    lo, x, hi = (load(a) for a in args)
    y = np.minimum(np.maximum(x, lo), hi)
    if x.dtype.kind == "f":
        y = np.where(np.isnan(x) | np.isnan(lo) | np.isnan(hi), np.float32(np.nan), y)
    return [store(y, op.outputs[0].dtype)]


@kernel("convert")
def _convert(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    dtype = op.attr("dtype")
    if op.inputs[0].dtype == "complex32":
        if dtype == "complex32":
            return [x]
        x = complex32_values(x)
    if dtype == "bool":
        return [load(x) != 0]
    if x.dtype in _NARROW_NP and dtype != "float32":
        x = x.astype(np.float32)  # exact widening of bf16 / f16 / fp8
    return [store(x, dtype)]


@kernel("constant")
def _constant(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    out = op.outputs[0]
    value = np.asarray(op.attr("value"), dtype=np.float32 if out.dtype in _NARROW else NP_DTYPES[out.dtype])
    if value.ndim:  # a dense constant: the values in row-major order
        return [store(value, out.dtype).reshape(out.shape)]
    return [np.broadcast_to(store(value, out.dtype), out.shape)]


@kernel("iota")
def _iota(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    out = op.outputs[0]
    dim = op.attr("dimension")
    shape = [1] * len(out.shape)
    shape[dim] = out.shape[dim]
    ramp = np.arange(out.shape[dim]).reshape(shape)
    return [store(np.broadcast_to(ramp, out.shape), out.dtype)]


@kernel("rng")
def _rng(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    seed, offset = (int(v) for v in args[0])
    out = op.outputs[0]
    # The offset selects the high counter words: each op's draws come from a disjoint Philox stream (offsets of
    # consecutive ops differ by fewer than the counter values one draw consumes, so they must not overlap).
    gen = np.random.Generator(np.random.Philox(key=seed & (2**64 - 1), counter=(offset & (2**64 - 1)) << 128))
    if op.attr("distribution") == "uniform":
        values = gen.random(out.shape, dtype=np.float32)
    else:
        values = gen.standard_normal(out.shape, dtype=np.float32)
    return [store(values, out.dtype)]


@kernel("real")
def _real(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    return [np.ascontiguousarray(args[0].real)]


@kernel("imag")
def _imag(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    return [np.ascontiguousarray(args[0].imag)]


@kernel("complex")
def _complex(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    re, im = args
    out = np.empty(re.shape, NP_DTYPES[op.outputs[0].dtype])
    out.real, out.imag = re, im
    return [out]


@kernel("fft")
def _fft(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    n = tuple(op.attr("fft_length"))
    axes = tuple(range(x.ndim - len(n), x.ndim))
    fn = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn, "IRFFT": np.fft.irfftn}[op.attr("fft_type")]
    y = fn(x, s=n, axes=axes)
    return [np.asarray(y, dtype=NP_DTYPES[op.outputs[0].dtype])]
