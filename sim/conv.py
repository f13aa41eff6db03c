"""N-d convolution on the MXU: owns the StableHLO-style convolution lowered to `mxu.matmul` by im2col.

Layouts: lhs (N, C, *spatial), rhs (O, C / groups, *kernel_spatial), output (N, O, *out_spatial).
Semantics follow stablehlo.convolution with those fixed layouts:
1. lhs_dilation d inserts d - 1 zeros between input elements (transposed convolution);
2. padding [(lo, hi), ...] pads each spatial dim with zeros (negative values crop);
3. rhs_dilation r spreads the kernel taps r apart (effective size (k - 1) * r + 1);
4. out = floor((padded - effective_kernel) / stride) + 1 positions per dim;
5. feature_group_count g splits C and O into g groups (depthwise when g == C).
Each group is one MXU GEMM: M = N * prod(out), K = C / g * prod(kernel), N = O / g, with the contraction index
ordered (input channel, kernel position in row-major order) - that order is what the exact mode sums in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import mxu

__all__ = ["conv", "conv_output_shape"]


def _norm(v: Sequence[int] | int | None, n: int, default: int, name: str) -> tuple[int, ...]:
    if v is None:
        return (default,) * n
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    t = tuple(int(x) for x in v)
    if len(t) != n:
        raise ValueError(f"{name} needs {n} values (one per spatial dim), got {t}")
    return t


def _norm_padding(padding: Any, n: int) -> tuple[tuple[int, int], ...]:
    if padding is None:
        return ((0, 0),) * n
    if isinstance(padding, (int, np.integer)):
        return ((int(padding), int(padding)),) * n
    pads = tuple((int(p[0]), int(p[1])) if isinstance(p, (tuple, list)) else (int(p), int(p))
                 for p in padding)
    if len(pads) != n:
        raise ValueError(f"padding needs {n} (lo, hi) pairs, got {pads}")
    return pads


def conv_output_shape(in_spatial: Sequence[int], kernel_spatial: Sequence[int], window_strides: Sequence[int],
                      padding: Sequence[tuple[int, int]], lhs_dilation: Sequence[int],
                      rhs_dilation: Sequence[int]) -> tuple[int, ...]:
    """Output spatial shape of a convolution (steps 1-4 of the module docstring)."""
    out = []
    for s, k, st, (lo, hi), ld, rd in zip(in_spatial, kernel_spatial, window_strides, padding, lhs_dilation,
                                         rhs_dilation):
        dilated = (s - 1) * ld + 1 if s > 0 else 0
        padded = dilated + lo + hi
        eff = (k - 1) * rd + 1
        out.append(max(0, (padded - eff) // st + 1) if padded >= eff else 0)
    return tuple(out)


def _dilate_and_pad(x: np.ndarray, pads: tuple[tuple[int, int], ...], ld: tuple[int, ...]) -> np.ndarray:
    nsp = len(pads)
    if any(d != 1 for d in ld):
        shape = list(x.shape)
        for i, d in enumerate(ld):
            s = shape[2 + i]
            shape[2 + i] = (s - 1) * d + 1 if s > 0 else 0
        y = np.zeros(shape, x.dtype)
        y[(slice(None), slice(None), *(slice(None, None, d) for d in ld))] = x
        x = y
    crop = tuple(slice(max(0, -lo), x.shape[2 + i] - max(0, -hi)) for i, (lo, hi) in enumerate(pads))
    x = x[(slice(None), slice(None), *crop)]
    widths = [(0, 0), (0, 0)] + [(max(0, lo), max(0, hi)) for lo, hi in pads]
    if any(w != (0, 0) for w in widths[2:]):
        x = np.pad(x, widths[: 2 + nsp])
    return x


def conv(
    lhs: np.ndarray,
    rhs: np.ndarray,
    *,
    window_strides: Sequence[int] | int | None = None,
    padding: Any = None,
    lhs_dilation: Sequence[int] | int | None = None,
    rhs_dilation: Sequence[int] | int | None = None,
    feature_group_count: int = 1,
    precision: str = "DEFAULT",
    out_dtype: Any = None,
    mode: str | None = None,
    array: int = mxu.DEFAULT_ARRAY,
) -> np.ndarray:
    """Convolution of lhs (N, C, *spatial) with rhs (O, C/groups, *kernel) through `mxu.matmul`."""
    lhs = np.asarray(lhs)
    rhs = np.asarray(rhs)
    if lhs.ndim < 3 or rhs.ndim != lhs.ndim:
        raise ValueError(f"conv needs lhs (N, C, *spatial) and rhs (O, I, *kernel) of equal rank, got "
                         f"{lhs.shape} and {rhs.shape}")
    nsp = lhs.ndim - 2
    g = int(feature_group_count)
    n, c = lhs.shape[:2]
    o, cg = rhs.shape[:2]
    if g < 1 or c % g or o % g or c // g != cg:
        raise ValueError(f"conv: C={c}, O={o}, rhs in-channels={cg} do not fit feature_group_count={g}")
    strides = _norm(window_strides, nsp, 1, "window_strides")
    ld = _norm(lhs_dilation, nsp, 1, "lhs_dilation")
    rd = _norm(rhs_dilation, nsp, 1, "rhs_dilation")
    pads = _norm_padding(padding, nsp)
    ksp = rhs.shape[2:]
    out_sp = conv_output_shape(lhs.shape[2:], ksp, strides, pads, ld, rd)
    x = _dilate_and_pad(lhs, pads, ld)
    eff = tuple((k - 1) * r + 1 for k, r in zip(ksp, rd))
    if 0 in out_sp or 0 in ksp or n == 0:
        res_dtype = np.int32 if lhs.dtype.kind in "iu" else np.float64 if np.float64 in (lhs.dtype, rhs.dtype) \
            else np.float32
        return mxu.convert_out(np.zeros((n, o, *out_sp), res_dtype), out_dtype)
    # windows: (N, C, *out_positions_before_stride, *eff_kernel) -> taps and strides by slicing (views)
    win = np.lib.stride_tricks.sliding_window_view(x, eff, axis=tuple(range(2, 2 + nsp)))
    sel = (slice(None), slice(None), *(slice(0, s * st, st) for s, st in zip(out_sp, strides)),
           *(slice(None, None, r) for r in rd))
    patches = win[sel]  # (N, C, *out, *k)
    kvol = int(np.prod(ksp))
    pix = int(np.prod(out_sp))
    # -> (G, N * pix, Cg * kvol) with K ordered (channel, kernel position)
    p = patches.reshape(n, g, cg, pix, kvol)
    a = np.ascontiguousarray(p.transpose(1, 0, 3, 2, 4)).reshape(g, n * pix, cg * kvol)
    w = rhs.reshape(g, o // g, cg * kvol).transpose(0, 2, 1)  # (G, K, Og)
    if a.dtype == np.float64 or w.dtype == np.float64:  # float64 is exact (host numpy), never the MXU, as a dot
        y = np.matmul(a.astype(np.float64), np.ascontiguousarray(w, dtype=np.float64))
    else:
        y = mxu.matmul(a, np.ascontiguousarray(w), precision=precision, mode=mode, array=array)
    y = y.reshape(g, n, pix, o // g).transpose(1, 0, 3, 2).reshape(n, o, *out_sp)
    return mxu.convert_out(np.ascontiguousarray(y), out_dtype)
