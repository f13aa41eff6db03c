"""VPU kernels beyond matmul: owns elementwise (compute in float32, round on store), reductions, scans,
transcendentals and data movement, with the simple StableHLO/PyTorch-like semantics the driver needs.

Numeric rule ("VPU operations are still performed in fp32" [SB-tpus]): floating inputs are loaded as float32
(bf16 widened exactly), the op runs in float32, and the result is stored in the output dtype (bf16 with TPU
rounding: RNE, subnormals flushed). Integer and bool data keep numpy integer semantics.
numpy does the work; numba is used only where numpy has no function (erf, erfinv, lgamma, digamma).
The reduction order of floating sums is numpy's (pairwise); the TPU's order is UNCONFIRMED.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numba import vectorize

from .numerics import BF16, from_bf16, to_bf16

__all__ = [
    "REDUCTIONS",
    "UNARY",
    "argmax",
    "argmin",
    "argsort",
    "concatenate",
    "cumprod",
    "cumsum",
    "gather_along_axis",
    "index_select",
    "load",
    "pad",
    "reduce",
    "scatter",
    "scatter_add",
    "slice_",
    "sort",
    "store",
    "transpose",
    "unary",
    "vpu_apply",
]


# ------------------------------------------------------------------ load / store
def load(x: Any) -> np.ndarray:
    """Array as the VPU computes on it: bf16/float16 -> float32, other dtypes unchanged."""
    x = np.asarray(x)
    if x.dtype == BF16:
        return from_bf16(x)
    if x.dtype == np.float16:
        return x.astype(np.float32)
    return x


def store(x: Any, dtype: Any) -> np.ndarray:
    """Cast a float32 (or other) result to its storage dtype; bf16 gets TPU rounding."""
    dt = np.dtype(dtype)
    x = np.asarray(x)
    if dt == BF16:
        return to_bf16(x.astype(np.float32, copy=False))
    if x.dtype == dt:
        return x
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(dt)


def _storage_dtype(arrays: Sequence[np.ndarray]) -> np.dtype:
    dts = [a.dtype for a in arrays]
    if any(d == BF16 for d in dts):
        others = [d for d in dts if d != BF16]
        return BF16 if all(d.kind != "f" for d in others) else np.result_type(*others, np.float32)
    return np.result_type(*dts) if dts else np.dtype(np.float32)


def vpu_apply(fn: Callable[..., Any], *arrays: Any, out_dtype: Any = None) -> np.ndarray:
    """Run `fn` on the loaded (float32 for floating) inputs and store the result in out_dtype.

    out_dtype None: bf16 when the floating inputs are bf16, else numpy's promotion of the inputs.
    """
    arrs = [np.asarray(a) for a in arrays]
    dt = _storage_dtype(arrs) if out_dtype is None else np.dtype(out_dtype)
    with np.errstate(all="ignore"):
        res = fn(*(load(a) for a in arrs))
    if np.asarray(res).dtype == np.float64 and all(a.dtype.kind != "f" or a.dtype.itemsize < 8 for a in arrs):
        res = np.asarray(res, np.float32)  # numpy scalars promote to float64; the VPU has float32 ALUs
    return store(res, dt)


# ------------------------------------------------------------------ transcendentals
def _erf_scalar(x: float) -> float:
    return math.erf(x)


def _lgamma_scalar(x: float) -> float:
    return math.lgamma(x)


@functools.cache
def _ufunc(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """numba ufunc for a math function numpy lacks; compiled on first use (cached on disk), not at import."""
    scalar = {"erf": _erf_scalar, "lgamma": _lgamma_scalar}[name]
    return vectorize(["float32(float32)", "float64(float64)"], cache=True)(scalar)


def _erf(x: np.ndarray) -> np.ndarray:
    return _ufunc("erf")(x)


def _lgamma(x: np.ndarray) -> np.ndarray:
    return _ufunc("lgamma")(x)


def _erfinv(y: np.ndarray) -> np.ndarray:
    """Inverse erf: Giles' single-precision polynomial start + 2 Newton steps in float64 (derived)."""
    y64 = np.asarray(y, np.float64)
    w = -np.log((1.0 - y64) * (1.0 + y64))
    x = np.where(w < 5.0, _giles_small(w - 2.5), _giles_large(np.sqrt(np.maximum(w, 5.0)) - 3.0)) * y64
    for _ in range(2):
        err = _erf(x) - y64
        x = x - err / (2.0 / math.sqrt(math.pi) * np.exp(-x * x))
    x = np.where(np.abs(y64) == 1.0, np.copysign(np.inf, y64), x)
    return np.where(np.abs(y64) > 1.0, np.nan, x)


def _horner(w: np.ndarray, coeffs: Sequence[float]) -> np.ndarray:
    p = np.full_like(w, coeffs[0])
    for c in coeffs[1:]:
        p = p * w + c
    return p


def _giles_small(w: np.ndarray) -> np.ndarray:
    # M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single-precision branch
    return _horner(w, [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                       -0.00125372503, -0.00417768164, 0.246640727, 1.50140941])


def _giles_large(w: np.ndarray) -> np.ndarray:
    # same source, |w| >= 5 branch
    return _horner(w, [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                       -0.0076224613, 0.00943887047, 1.00167406, 2.83297682])


def _digamma(x: np.ndarray) -> np.ndarray:
    """psi(x): recurrence up to x >= 6, then the asymptotic series (derived, float64 internally)."""
    x = np.asarray(x, np.float64)
    res = np.zeros_like(x)
    refl = x < 0.5  # reflection: psi(1 - x) - psi(x) = pi cot(pi x)
    xr = np.where(refl, 1.0 - x, x)
    for _ in range(6):
        small = xr < 6.0
        res = np.where(small, res - 1.0 / np.where(small, xr, 1.0), res)
        xr = np.where(small, xr + 1.0, xr)
    inv2 = 1.0 / (xr * xr)
    series = np.log(xr) - 0.5 / xr - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 / 240)))
    res = res + series
    with np.errstate(all="ignore"):
        res = np.where(refl, res - np.pi / np.tan(np.pi * x), res)
    return np.where((x <= 0) & (x == np.floor(x)), np.nan, res)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype, copy=False)


UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype, copy=False),
    "cbrt": np.cbrt, "reciprocal": lambda x: (1 / x).astype(x.dtype, copy=False),
    "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "logistic": _sigmoid, "sigmoid": _sigmoid, "erf": _erf,
    "erfinv": _erfinv, "lgamma": _lgamma, "digamma": _digamma,
    "abs": np.abs, "neg": np.negative, "sign": np.sign, "floor": np.floor, "ceil": np.ceil,
    "round": np.rint, "trunc": np.trunc,
}


def unary(name: str, x: Any, out_dtype: Any = None) -> np.ndarray:
    """Named elementwise function computed in float32 (see UNARY), stored as out_dtype (default: x's)."""
    if name not in UNARY:
        raise ValueError(f"unknown unary op {name!r}; valid: {', '.join(sorted(UNARY))}")
    f = UNARY[name]
    x = np.asarray(x)
    if out_dtype is None:
        out_dtype = x.dtype if x.dtype.kind == "f" or x.dtype == BF16 else np.float32
    return vpu_apply(lambda v: np.asarray(f(v.astype(np.float32) if v.dtype.kind != "f" else v)), x,
                     out_dtype=out_dtype)


# ------------------------------------------------------------------ reductions and scans
REDUCTIONS = ("sum", "prod", "max", "min", "and", "or", "mean")


def _axes(axis: int | Sequence[int] | None, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return None
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    return tuple(int(a) % ndim if ndim else int(a) for a in axis)


def reduce(x: Any, op: str, axis: int | Sequence[int] | None = None, keepdims: bool = False,
           out_dtype: Any = None) -> np.ndarray:
    """sum/prod/max/min/and/or/mean over axes; floats accumulate in float32, integers in int64."""
    x = np.asarray(x)
    ax = _axes(axis, x.ndim)
    v = load(x)
    if op in ("sum", "prod", "mean") and v.dtype.kind in "biu":
        acc = np.int64 if op != "mean" else np.float32
    else:
        acc = None
    fns = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "and": np.all, "or": np.any,
           "mean": np.mean}
    if op not in fns:
        raise ValueError(f"unknown reduction {op!r}; valid: {', '.join(REDUCTIONS)}")
    with np.errstate(all="ignore"):
        if op in ("and", "or") or acc is None:
            res = fns[op](v, axis=ax, keepdims=keepdims)
        else:
            res = fns[op](v, axis=ax, keepdims=keepdims, dtype=acc)
    if out_dtype is None:
        out_dtype = np.bool_ if op in ("and", "or") else (x.dtype if acc is None else acc)
    return store(np.asarray(res), out_dtype)


def _arg(x: Any, axis: int | None, keepdims: bool, fn: Callable[..., np.ndarray]) -> np.ndarray:
    v = load(x)
    if axis is None:
        res = np.asarray(fn(v.reshape(-1)))
        return res.reshape((1,) * v.ndim) if keepdims else res
    return np.asarray(fn(v, axis=axis, keepdims=keepdims)).astype(np.int64)


def argmax(x: Any, axis: int | None = None, keepdims: bool = False) -> np.ndarray:
    """Index of the first maximum (a NaN counts as the maximum, as in PyTorch); int64."""
    return _arg(x, axis, keepdims, np.argmax).astype(np.int64)


def argmin(x: Any, axis: int | None = None, keepdims: bool = False) -> np.ndarray:
    """Index of the first minimum (a NaN counts as the minimum, as in PyTorch); int64."""
    return _arg(x, axis, keepdims, np.argmin).astype(np.int64)


def cumsum(x: Any, axis: int, out_dtype: Any = None, reverse: bool = False) -> np.ndarray:
    """Sequential (in index order) cumulative sum in float32 / int64."""
    return _scan(x, axis, np.cumsum, out_dtype, reverse)


def cumprod(x: Any, axis: int, out_dtype: Any = None, reverse: bool = False) -> np.ndarray:
    """Sequential cumulative product in float32 / int64."""
    return _scan(x, axis, np.cumprod, out_dtype, reverse)


def _scan(x: Any, axis: int, fn: Callable[..., np.ndarray], out_dtype: Any, reverse: bool) -> np.ndarray:
    x = np.asarray(x)
    v = load(x)
    acc = np.int64 if v.dtype.kind in "biu" else None
    if reverse:
        v = np.flip(v, axis)
    with np.errstate(all="ignore"):
        res = fn(v, axis=axis, dtype=acc)
    if reverse:
        res = np.flip(res, axis)
    return store(res, x.dtype if out_dtype is None and acc is None else (out_dtype or acc))


# ------------------------------------------------------------------ data movement
def transpose(x: Any, perm: Sequence[int]) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(np.asarray(x), tuple(perm)))


def slice_(x: Any, start: Sequence[int], limit: Sequence[int],
           strides: Sequence[int] | None = None) -> np.ndarray:
    """stablehlo.slice: x[start:limit:strides] per dim."""
    strides = strides or [1] * len(start)
    index = tuple(slice(a, b, s) for a, b, s in zip(start, limit, strides))
    return np.ascontiguousarray(np.asarray(x)[index])


def gather_along_axis(x: Any, index: Any, axis: int) -> np.ndarray:
    """torch.gather: out[i][j] = x[index[i][j]][j] (for axis 0); negative indices are an error."""
    idx = np.asarray(index, np.int64)
    _check_index(idx, np.asarray(x).shape[axis])
    return np.take_along_axis(np.asarray(x), idx, axis)


def index_select(x: Any, axis: int, index: Any) -> np.ndarray:
    """torch.index_select / numpy take along one axis."""
    idx = np.asarray(index, np.int64)
    _check_index(idx, np.asarray(x).shape[axis])
    return np.take(np.asarray(x), idx, axis=axis)


def _check_index(idx: np.ndarray, size: int) -> None:
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        raise IndexError(f"index out of range for a dimension of size {size}")


def _scatter_coords(x: np.ndarray, axis: int, idx: np.ndarray) -> tuple[np.ndarray, ...]:
    grids = list(np.indices(idx.shape, sparse=True))
    grids[axis] = idx
    return tuple(grids)


def scatter_add(x: Any, axis: int, index: Any, src: Any) -> np.ndarray:
    """torch.scatter_add: out = x.copy(); out[index[i][j]][j] += src[i][j] (axis 0); float32 accumulation
    in the order of the flattened index array."""
    x = np.asarray(x)
    idx = np.asarray(index, np.int64)
    _check_index(idx, x.shape[axis])
    src = np.asarray(src)[tuple(slice(0, s) for s in idx.shape)]
    out = load(x).copy()
    with np.errstate(all="ignore"):
        np.add.at(out, _scatter_coords(out, axis, idx), load(src).astype(out.dtype, copy=False))
    return store(out, x.dtype)


def scatter(x: Any, axis: int, index: Any, src: Any) -> np.ndarray:
    """torch.scatter (replace): later entries of the flattened index win on duplicates."""
    x = np.asarray(x)
    idx = np.asarray(index, np.int64)
    _check_index(idx, x.shape[axis])
    src = np.asarray(src)[tuple(slice(0, s) for s in idx.shape)]
    out = x.copy()
    out[_scatter_coords(out, axis, idx)] = src.astype(x.dtype)
    return out


def pad(x: Any, padding: Sequence[tuple[int, int] | tuple[int, int, int]], value: float = 0) -> np.ndarray:
    """stablehlo.pad: per dim (lo, hi[, interior]); negative lo/hi crop."""
    x = np.asarray(x)
    for d, p in enumerate(padding):
        lo, hi = int(p[0]), int(p[1])
        interior = int(p[2]) if len(p) > 2 else 0
        if interior:
            n = x.shape[d]
            shape = list(x.shape)
            shape[d] = n + (n - 1) * interior if n else 0
            y = np.full(shape, value, x.dtype)
            sl = [slice(None)] * x.ndim
            sl[d] = slice(None, None, interior + 1)
            y[tuple(sl)] = x
            x = y
        if lo < 0 or hi < 0:
            sl = [slice(None)] * x.ndim
            sl[d] = slice(max(0, -lo), x.shape[d] - max(0, -hi))
            x = x[tuple(sl)]
        if lo > 0 or hi > 0:
            widths = [(0, 0)] * x.ndim
            widths[d] = (max(0, lo), max(0, hi))
            x = np.pad(x, widths, constant_values=np.asarray(value).astype(x.dtype))
    return np.ascontiguousarray(x)


def concatenate(arrays: Sequence[Any], axis: int) -> np.ndarray:
    return np.concatenate([np.asarray(a) for a in arrays], axis=axis)


def argsort(x: Any, axis: int = -1, descending: bool = False) -> np.ndarray:
    """Stable argsort (equal keys keep their order; NaN sorts as the largest), int64."""
    v = load(x)
    if not descending:
        return np.argsort(v, axis=axis, kind="stable").astype(np.int64)
    n = v.shape[axis]
    rev = np.flip(v, axis)
    idx = np.flip(np.argsort(rev, axis=axis, kind="stable"), axis)
    return (n - 1 - idx).astype(np.int64)


def sort(x: Any, axis: int = -1, descending: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Stable sort: (values, int64 indices)."""
    x = np.asarray(x)
    idx = argsort(x, axis, descending)
    return np.take_along_axis(x, idx, axis), idx
