"""TPU number formats: owns float32 <-> bfloat16 conversion and the bf16 splits of XLA's dot algorithms.

Semantics (tpu-facts section 5, [GC-bf16]):
* f32 -> bf16 is round-to-nearest-even on the 16 dropped mantissa bits; overflow rounds to +-inf; NaN stays
  NaN (canonical quiet NaN, sign kept, as ml_dtypes does); inf stays inf; a result that would be a bf16
  subnormal is flushed to zero with its sign kept ("bf16 on Cloud TPU has no subnormals").
* bf16 -> f32 appends 16 zero bits (exact).
* `split_bf16x3` / `split_bf16x6` follow XLA's DotAlgorithmRewriter [XLA-rw]: Truncate(x) masks the low 16
  bits (x & 0xFFFF0000); x3: hi = bf16(Truncate(x)), lo = bf16_RNE(x - Truncate(x)); x6: hi = Truncate(x),
  mid = Truncate(x - hi), lo = bf16_RNE(x - hi - mid). Each "bf16(...)" is the conversion above.

Kernels are numba `@njit(cache=True)` loops over the uint32 view; they compile on first use (not at import)
and are cached on disk. Values never touch cost counters here.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from numba import njit

from . import kernel_cache

kernel_cache.check()  # before any cached kernel of sim/ or drivers/sim/ can run (kernel_cache's docstring)

__all__ = [
    "BF16",
    "from_bf16",
    "is_bf16_dtype",
    "round_bf16",
    "round_bf16_bits",
    "split_bf16x3",
    "split_bf16x6",
    "to_bf16",
    "truncate_bf16",
]

BF16 = np.dtype(ml_dtypes.bfloat16)

_HI = np.uint32(0xFFFF0000)  # bf16 keeps the high 16 bits of a binary32 [GC-bf16]


@njit(cache=True, inline="always")
def _rne_bits(u: np.uint32) -> np.uint32:
    """bf16 RNE of one binary32 bit pattern; returns the rounded binary32 pattern (low 16 bits zero)."""
    sign = u & np.uint32(0x80000000)
    mag = u & np.uint32(0x7FFFFFFF)
    if mag > np.uint32(0x7F800000):  # NaN -> canonical quiet NaN, sign kept
        return sign | np.uint32(0x7FC00000)
    if mag == np.uint32(0x7F800000):  # +-inf
        return u
    # round to nearest, ties to even: add 0x7FFF plus the lowest kept bit, then drop 16 bits.
    # Carries propagate into the exponent, so the largest finite values overflow to inf.
    r = (mag + np.uint32(0x7FFF) + ((mag >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    if r < np.uint32(0x00800000):  # bf16 subnormal (exponent field 0) -> signed zero
        return sign
    return sign | r


@njit(cache=True)
def _round_bits_loop(src: np.ndarray, dst: np.ndarray) -> None:
    for i in range(src.size):
        dst[i] = _rne_bits(src[i])


@njit(cache=True)
def _widen_loop(src: np.ndarray, dst: np.ndarray) -> None:
    for i in range(src.size):
        dst[i] = np.uint32(src[i]) << np.uint32(16)


@njit(cache=True)
def _to_bf16_bits_loop(src: np.ndarray, dst: np.ndarray) -> None:
    for i in range(src.size):
        dst[i] = np.uint16(_rne_bits(src[i]) >> np.uint32(16))


def _as_f32(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == BF16:
        return from_bf16(x)
    return np.ascontiguousarray(x, dtype=np.float32)


def is_bf16_dtype(dtype: object) -> bool:
    """True for ml_dtypes.bfloat16 (and its name)."""
    try:
        return np.dtype(dtype) == BF16
    except TypeError:
        return False


def round_bf16_bits(u: np.ndarray) -> np.ndarray:
    """Round binary32 bit patterns (uint32 array) to bf16 precision; returns uint32 patterns."""
    u = np.ascontiguousarray(u, dtype=np.uint32)
    out = np.empty_like(u)
    _round_bits_loop(u.reshape(-1), out.reshape(-1))
    return out


def round_bf16(x: np.ndarray) -> np.ndarray:
    """float32 in, float32 out holding bf16 values (RNE, subnormal results flushed, NaN/inf kept)."""
    x = _as_f32(x)
    out = np.empty(x.shape, np.float32)
    _round_bits_loop(x.reshape(-1).view(np.uint32), out.reshape(-1).view(np.uint32))
    return out


def to_bf16(x: np.ndarray) -> np.ndarray:
    """To ml_dtypes.bfloat16 with TPU rounding (bit-identical to ml_dtypes astype on normal results)."""
    x = np.asarray(x)
    if x.dtype == BF16:
        return x.copy()
    shape = x.shape  # np.ascontiguousarray makes 0-d arrays 1-d
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty(x.shape, np.uint16)
    _to_bf16_bits_loop(x.reshape(-1).view(np.uint32), out.reshape(-1))
    return out.view(BF16).reshape(shape)


def from_bf16(x: np.ndarray) -> np.ndarray:
    """bf16 (ml_dtypes) -> float32 by appending 16 zero bits (exact; bf16 subnormal inputs pass through)."""
    x = np.asarray(x)
    if x.dtype != BF16:
        return np.asarray(x, dtype=np.float32)
    shape = x.shape
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.float32)
    _widen_loop(x.reshape(-1).view(np.uint16), out.reshape(-1).view(np.uint32))
    return out.reshape(shape)


def truncate_bf16(x: np.ndarray) -> np.ndarray:
    """XLA's Truncate: float32 with the low 16 bits masked (x & 0xFFFF0000) [XLA-rw]."""
    x = _as_f32(x)
    return (x.view(np.uint32) & _HI).view(np.float32)


def split_bf16x3(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hi, lo): float32 arrays of bf16 values for BF16_BF16_F32_X3.

    hi = bf16(t), lo = bf16_RNE(x - t) with t = Truncate(x) [XLA-rw] `Split2xToBF16`.
    """
    x = _as_f32(x)
    t = truncate_bf16(x)
    with np.errstate(invalid="ignore", over="ignore"):
        rest = x - t  # exact for finite x; inf - inf = NaN (handled by the dot's NaN guard)
    return round_bf16(t), round_bf16(rest)


def split_bf16x6(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hi, mid, lo) float32 arrays of bf16 values for BF16_BF16_F32_X6 (see module docstring)."""
    x = _as_f32(x)
    th = truncate_bf16(x)
    with np.errstate(invalid="ignore", over="ignore"):
        r1 = x - th
        tm = truncate_bf16(r1)
        r2 = r1 - tm
    return round_bf16(th), round_bf16(tm), round_bf16(r2)
