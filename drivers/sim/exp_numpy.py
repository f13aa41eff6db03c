"""numpy's float32 exp (its AVX512F SIMD routine) as numba code, so fused loops can compute exp.

np.exp on float32 arrays is not the C library's expf: numpy 2.4's `FLOAT_exp` (numpy/_core/src/umath/
loops_exponent_log.dispatch.c.src) sends every element, strided or not, through `simd_exp_FLOAT`, compiled once per
dispatch target. On an X86_V4 (AVX512F) machine it is the `SIMD_AVX512F` body, which `expf` follows operation by
operation, every operation float32:

- a NaN lane becomes 0 (and its result numpy's NPY_NANF, 0x7fc00000, whatever the input's sign and payload);
  x >= xmax (88.72283935546875f, +inf included) gives +inf, x <= xmin (-103.97208404541015625f, -inf included) +0;
- quadrant = (x * log2e + 0x1.8p23f) - 0x1.8p23f (three separate roundings: round to nearest integer);
- Cody-Waite: r = fma(quadrant, c1, x), r = fma(quadrant, c2, r) (the third step, fma(quadrant, 0, r), changes
  only the sign of a zero r, and P(-0)/Q(-0) = P(+0)/Q(+0), so it is left out);
- P = p5..p0 and Q = q2..q0 by Horner steps that are fmas, poly = P / Q;
- scalef(poly, quadrant): poly * 2^quadrant rounded once to float32 (gradual underflow below 2^-126): here the
  exact product in float64 (a 24-bit poly times a power of two in [2^-150, 2^128]) converted to float32.

The X86_V3 (AVX2/FMA3) body differs in that last step (an exponent add, and a division for subnormal results), and
the baseline one calls libm's expf, so `AVAILABLE` is True only where the running numpy is the version read, its
float32 exp dispatches to X86_V4, and `expf` reproduces np.exp on a fixed sample with the special values
(`self_check`). benchmarks/exp_numpy_exhaustive.py compares all 2^32 float32 inputs with np.exp;
tests/test_sim_exp_numpy.py keeps the hard cases and a random sample.
"""

from __future__ import annotations

import hashlib

import numba
import numpy as np
from llvmlite import ir as llir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

with open(__file__, "rb") as _source:
    SOURCE_DIGEST = hashlib.sha256(_source.read()).hexdigest()[:16]  # names this code in fused loop sources

NUMPY_VERSIONS = ("2.4.6",)  # numpy versions whose simd_exp_FLOAT was read (its AVX512F body is ported here)
TARGET = "X86_V4"  # the dispatch target of that body


@intrinsic
def _fma(typingctx, a, b, c):  # noqa: ARG001 - numba's intrinsic signature
    """a * b + c rounded once (llvm.fma.f32)."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):  # noqa: ARG001
        f = llir.FloatType()
        fn = cgutils.get_or_insert_function(builder.module, llir.FunctionType(f, [f, f, f]), "llvm.fma.f32")
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def _bits_f64(typingctx, x):  # noqa: ARG001
    def codegen(context, builder, signature, args):  # noqa: ARG001
        return builder.bitcast(args[0], llir.DoubleType())

    return types.float64(types.int64), codegen


def _f(bits: int) -> np.float32:
    return np.array([bits], np.uint32).view(np.float32)[0]


# npy_math.h / npy_simd_data.h constants (their float literals' bits) and the kernel's xmax/xmin
_XMAX, _XMIN = _f(0x42B17218), _f(0xC2CFF1B5)
_LOG2E, _MAGIC = _f(0x3FB8AA3B), _f(0x4B400000)  # NPY_LOG2Ef, NPY_RINT_CVT_MAGICf (0x1.8p23f)
_C1, _C2 = _f(0xBF317200), _f(0xB5BFBE8E)  # NPY_CODY_WAITE_LOGE_2_HIGHf, _LOWf
_P0, _P1, _P2, _P3, _P4, _P5 = (_f(b) for b in (0x3F800000, 0x3F39CBD5, 0x3E7D4C58, 0x3D517D8C, 0x3BDD7159,
                                                0x3A053DD8))
_Q0, _Q1, _Q2 = _f(0x3F800000), _f(0xBE8C6857), _f(0x3CB0E832)
_ZERO, _INF, _NAN = np.float32(0), np.float32(np.inf), _f(0x7FC00000)  # NPY_NANF

_NJ = {"cache": True, "nogil": True, "error_model": "numpy"}


@numba.njit(**_NJ, inline="always")
def expf(x):  # pragma: no cover - numba
    """numpy 2.4's float32 exp (simd_exp_FLOAT, AVX512F) of a float32 x."""
    nan = x != x
    big = x >= _XMAX
    small = x <= _XMIN
    y = _ZERO if (nan or big or small) else x
    quadrant = (y * _LOG2E + _MAGIC) - _MAGIC
    r = _fma(quadrant, _C1, y)
    r = _fma(quadrant, _C2, r)
    num = _fma(_P5, r, _P4)
    num = _fma(num, r, _P3)
    num = _fma(num, r, _P2)
    num = _fma(num, r, _P1)
    num = _fma(num, r, _P0)
    den = _fma(_Q2, r, _Q1)
    den = _fma(den, r, _Q0)
    poly = num / den
    scale = _bits_f64((np.int64(quadrant) + 1023) << 52)  # 2^quadrant, quadrant in [-150, 128]
    v = np.float32(np.float64(poly) * scale)
    return _NAN if nan else (_INF if big else (_ZERO if small else v))


@numba.njit(**_NJ)
def _exp_loop(x, out):  # pragma: no cover - numba
    for i in range(x.shape[0]):
        out[i] = expf(x[i])


def exp(x: np.ndarray) -> np.ndarray:
    """expf of every element of a float32 array (a new C-contiguous array of its shape)."""
    if x.dtype != np.float32:
        raise TypeError(f"exp_numpy: a float32 array is expected, got {x.dtype}")
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.float32)
    _exp_loop(flat, out)
    return out.reshape(x.shape)


def check_sample() -> np.ndarray:
    """The fixed float32 sample of `self_check`: specials, the range ends and their neighbours, subnormal results,
    and a seeded spread of bit patterns."""
    special = [0x0, 0x80000000, 0x1, 0x80000001, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
               0xFFA12345, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0xC2781E37]
    ends = [b + d for b in (0x42B17218, 0xC2CFF1B5, 0xC2AEAC50, 0xC2B00000, 0x42B00000, 0xC2CE8ECF) for d in (-2, -1,
                                                                                                         0, 1, 2)]
    spread = np.random.default_rng(20261207).integers(0, 1 << 32, 4096, dtype=np.uint64)
    bits = np.concatenate([np.array(special + ends, np.uint64), spread]).astype(np.uint32)
    return bits.view(np.float32)


def _dispatch_target() -> str | None:
    try:
        from numpy.lib.introspect import opt_func_info

        return opt_func_info(func_name="^exp$", signature="float32")["exp"]["ff"]["current"]
    except Exception:  # noqa: BLE001 - any failure to tell means: not the ported variant
        return None


def self_check() -> str | None:
    """None when the running np.exp on float32 is the ported routine; else why it is not."""
    if np.__version__ not in NUMPY_VERSIONS:
        return f"numpy {np.__version__} is not a version whose float32 exp was ported ({', '.join(NUMPY_VERSIONS)})"
    target = _dispatch_target()
    if target != TARGET:
        return f"numpy's float32 exp dispatches to {target}, not {TARGET} (the ported AVX512F body)"
    x = check_sample()
    with np.errstate(all="ignore"):
        expected = np.exp(x)
    got = exp(x)
    bad = np.flatnonzero(expected.view(np.uint32) != got.view(np.uint32))
    if bad.size:
        return f"exp_numpy.expf differs from np.exp at {bad.size} sample inputs (first: {x[bad[0]]!r})"
    return None


def __getattr__(name: str) -> object:
    """`REASON` (None, or why exp stays np.exp) and `AVAILABLE` (REASON is None), checked on first use: the check
    compiles and runs the port, which only a fused exp needs (fusion.FUSE_EXP, off by default)."""
    if name in ("REASON", "AVAILABLE"):
        reason = self_check()
        globals().update(REASON=reason, AVAILABLE=reason is None)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
