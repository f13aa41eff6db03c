"""Lowerings of separable linear resampling: upsampling (nearest, nearest-exact, linear, bilinear, bicubic,
trilinear, antialiased bilinear), reflection / replication padding, average pooling and adaptive average
pooling, and all their backward ops.

Each of these maps every spatial dimension independently by a fixed (out, in) matrix, so the op is one
contraction per spatial dimension (`dot_general` at HIGHEST: the weights are not bf16 values) and its backward
is the same with the transposed matrices. The matrices depend only on static sizes and arguments: they are
computed once at trace time, with ATen's index formulas in ATen's opmath (float64 for a float64 input, else
float32), and enter the program as dense constants.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from torchtpu.ops import pool_checks, spatial_checks
from torchtpu.ops import prims as P
from torchtpu.ops.complex import imag, make_complex, real
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten
F32 = np.float32


def apply_dims(x: Sym, mats: Sequence[np.ndarray | None], first: int) -> Sym:
    """Contracts dims first, first+1, ... of x with (out, in) matrices (None: identity), keeping dim order. A
    complex x: the real matrices map its real and imaginary parts each."""
    if x.dtype.is_complex:
        return P.convert(make_complex(apply_dims(real(x), mats, first), apply_dims(imag(x), mats, first)), x.dtype)
    integral = not (x.dtype.is_floating_point or x.dtype.is_complex)
    compute = torch.int64 if integral else (torch.float64 if x.dtype == torch.float64 else torch.float32)
    y = P.convert(x, compute)
    for i, m in enumerate(mats):
        if m is None:
            continue
        d = first + i
        if y.shape[d] != m.shape[1]:
            raise RuntimeError(f"resample: dim {d} has size {y.shape[d]}, the matrix expects {m.shape[1]}")
        mat = P.dense(m.round().astype(np.int64) if integral else m, compute)
        if 0 in y.shape:
            shape = list(y.shape)
            shape[d] = m.shape[0]
            y = P.full(0, tuple(shape), compute)
            continue
        taps = _taps(m)
        if taps is not None:
            y = _apply_taps(y, d, *taps)
            continue
        z = P.emit1("dot_general", [y, mat], lhs_batch=(), rhs_batch=(), lhs_contract=(d,), rhs_contract=(1,),
                    precision="HIGHEST", out_dtype=P.TORCH_TO_IR[compute])
        perm = list(range(y.ndim - 1))
        perm.insert(d, y.ndim - 1)
        y = P.transpose(z, perm)
    return P.convert(y, x.dtype)


MAX_TAPS = 16  # matrices with more nonzeros in a row contract on the MXU (an inf or NaN there spreads)


def _taps(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(column, weight, present) per output row and tap, when each row has at most MAX_TAPS nonzeros."""
    nz = m != 0
    count = int(nz.sum(1).max()) if m.size else 0
    if count == 0 or count > MAX_TAPS:
        return None
    order = np.argsort(~nz, axis=1, kind="stable")[:, :count]
    return order, np.take_along_axis(m, order, 1), np.take_along_axis(nz, order, 1)


def _apply_taps(y: Sym, d: int, cols: np.ndarray, weights: np.ndarray, present: np.ndarray) -> Sym:
    """Row o of the result along dim d is sum_t weights[o, t] * y[cols[o, t]] over its present taps only: the
    values a row does not use never enter it (a matrix product multiplies them by 0, and 0 * inf is NaN)."""
    out = cols.shape[0]
    shape = tuple(out if i == d else 1 for i in range(y.ndim))
    total = None
    for t in range(cols.shape[1]):
        term = P.emit1("index_select", [y, P.dense(cols[:, t], torch.int64)], dimension=d)
        if not (weights[:, t] == 1).all():
            term = term * P.broadcast_to(P.reshape(P.dense(weights[:, t], y.dtype), shape), term.shape)
        if not present[:, t].all():
            keep = P.broadcast_to(P.reshape(P.dense(present[:, t], torch.bool), shape), term.shape)
            term = P.where(keep, term, P.zeros_like(term))
        total = term if total is None else total + term
    return total


def _transposed(mats: Sequence[np.ndarray | None]) -> list[np.ndarray | None]:
    return [None if m is None else np.ascontiguousarray(m.T) for m in mats]


# --- per-dimension matrices (ATen's UpSample.h formulas; float32 arithmetic unless `dt` says) ---------------------

def _scale(in_size: int, out_size: int, align_corners: bool, scale: float | None, dt: type = F32) -> np.floating:
    if align_corners:
        return dt((in_size - 1) / (out_size - 1)) if out_size > 1 else dt(0)
    return dt(1.0 / scale) if scale is not None and scale > 0 else dt(in_size) / dt(out_size)


def nearest(in_size: int, out_size: int, scale: float | None, exact: bool = False, shortcuts: bool = True
            ) -> np.ndarray:
    """`shortcuts`: ATen's nearest_idx, which copies when out == in and halves when out == 2 * in whatever the
    given scale; without them every index is floor(dst * (1 / scale)) (its compute_indices_weights_nearest)."""
    s = F32(1.0 / scale) if scale is not None and scale > 0 else F32(in_size) / F32(out_size)
    dst = np.arange(out_size, dtype=F32)
    if exact:
        src = np.floor((dst + F32(0.5)) * s)
    elif shortcuts and out_size == in_size:
        src = dst
    elif shortcuts and out_size == 2 * in_size:
        src = np.floor(dst / 2)
    else:
        src = np.floor(dst * s)
    src = np.minimum(src.astype(np.int64), in_size - 1)
    m = np.zeros((out_size, in_size), F32)
    m[np.arange(out_size), src] = 1
    return m


def _linear_parts(in_size: int, out_size: int, align_corners: bool, scale: float | None, dt: type = F32,
                  fused: bool = False, stored: torch.dtype | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i0, i1, l0, l1) per output index, as compute_source_index_and_lambda: i1 = i0 + 1 but at the last input; an
    unchanged size copies whatever the given scale ("scale_factor = 1, simply copy": i1 = i0, l0 = 1, l1 = 0).
    `fused`: the source index as CPU's float32/float64 forward kernels compute it (`_fma_half`); i0 is
    guard_index_and_lambda's floorf, of the index rounded to float32. `stored`: the float16 / bfloat16 input of a
    linear1d / trilinear3d forward, whose kernel (HelperInterpLinear) keeps lambda1 in the input's type and
    lambda0 = 1 - lambda1 rounded to it, then interpolates in float32 (bilinear2d's kernel keeps float lambdas)."""
    if in_size == out_size:
        i = np.arange(out_size)
        return i, i, np.ones(out_size, dt), np.zeros(out_size, dt)
    s = _scale(in_size, out_size, align_corners, scale, dt)
    dst = np.arange(out_size, dtype=dt)
    if align_corners:
        src = s * dst
    else:
        src = np.maximum(_fma_half(s, dst, dt) if fused else s * (dst + dt(0.5)) - dt(0.5), dt(0))
    i0 = np.minimum(np.floor(src.astype(F32)).astype(np.int64), in_size - 1)
    i1 = i0 + (i0 < in_size - 1)
    l1 = np.clip(src - i0.astype(dt), dt(0), dt(1)).astype(dt)
    if stored is not None:
        l1 = torch.from_numpy(l1).to(stored).to(torch.float32).numpy()
        return i0, i1, (1 - torch.from_numpy(l1)).to(stored).to(torch.float32).numpy(), l1
    return i0, i1, (dt(1) - l1).astype(dt), l1


def _fma_half(s: np.floating, dst: np.ndarray, dt: type) -> np.ndarray:
    """s * (dst + 0.5) - 0.5 rounded once, as CPU's compiled area_pixel_compute_source_index (a fused multiply-add:
    0.33333334f * 1.5f - 0.5f is 1.5e-8 there, 0 rounded twice; that decides whether a zero weight meets an inf)."""
    exact = [Fraction(float(s)) * Fraction(float(d) + 0.5) - Fraction(1, 2) for d in dst]
    return np.array([float(v) for v in exact], np.float64).astype(dt)


def linear(in_size: int, out_size: int, align_corners: bool, scale: float | None, dt: type = F32,
           stored: torch.dtype | None = None) -> np.ndarray:
    """`dt`: the weights' arithmetic (ATen's opmath: float64 for a float64 input, else float32); `stored`: as
    `_linear_parts`."""
    i0, i1, l0, l1 = _linear_parts(in_size, out_size, align_corners, scale, dt, stored=stored)
    m = np.zeros((out_size, in_size), dt)
    np.add.at(m, (np.arange(out_size), i0), l0)
    np.add.at(m, (np.arange(out_size), i1), l1)
    return m


def _linear_forward(x: Sym, out_sizes: Sequence[int], align: bool, scales: Sequence[float | None]) -> Sym:
    """A float input's linear interpolation, dim by dim, each output l0 * x[i0] + l1 * x[i1] with both taps always
    read, as CPU's kernel (a zero weight times an inf is NaN there; fuzz seed 15: a matrix of the nonzero taps
    only gave the inf)."""
    dt = np.float64 if x.dtype == torch.float64 else F32
    stored = x.dtype if x.dtype in (torch.float16, torch.bfloat16) and len(out_sizes) != 2 else None
    mats = [linear(i, o, align, sc, dt, stored) for i, o, sc in zip(x.shape[2:], out_sizes, scales)]
    if 0 in x.shape or x.dtype.is_complex:
        return apply_dims(x, mats, 2)
    y = P.convert(x, torch.float64 if dt is np.float64 else torch.float32)
    for d, (i, o, sc) in enumerate(zip(x.shape[2:], out_sizes, scales)):
        i0, i1, l0, l1 = _linear_parts(i, o, align, sc, dt, fused=x.dtype in (torch.float32, torch.float64),
                                       stored=stored)
        y = _apply_taps(y, 2 + d, np.stack([i0, i1], 1), np.stack([l0, l1], 1), np.ones((o, 2), bool))
    return P.convert(y, x.dtype)


def cubic(in_size: int, out_size: int, align_corners: bool, scale: float | None, dt: type = F32) -> np.ndarray:
    """`dt`: the weights' arithmetic (ATen's opmath: float64 for a float64 input, else float32)."""
    cols, weights = cubic_taps(in_size, out_size, align_corners, scale, dt)
    m = np.zeros((out_size, in_size), dt)
    for k in range(4):
        np.add.at(m, (np.arange(out_size), cols[:, k]), weights[:, k])
    return m


def cubic_taps(in_size: int, out_size: int, align_corners: bool, scale: float | None, dt: type = F32
               ) -> tuple[np.ndarray, np.ndarray]:
    """(column, weight) of each output row's 4 taps, the columns clamped to the input as ATen's kernel reads them
    (a border row reads one column twice: kept as two taps, not merged into one weight)."""
    s = _scale(in_size, out_size, align_corners, scale, dt)
    dst = np.arange(out_size, dtype=dt)
    src = s * dst if align_corners else s * (dst + dt(0.5)) - dt(0.5)
    i = np.floor(src).astype(np.int64)
    t = (src - i.astype(dt)).astype(dt)
    a = dt(-0.75)

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = np.stack([w.astype(dt) for w in (far(t + 1), near(t), near(1 - t), far(2 - t))], 1)
    cols = np.stack([np.clip(i - 1 + k, 0, in_size - 1) for k in range(4)], 1)
    return cols, weights


def _cubic_forward(x: Sym, output_size: Sequence[int], align: bool, scales: Sequence[float | None]) -> Sym:
    """upsample_bicubic2d of a float x as ATen's CPU kernel (UpSampleKernel.cpp's Interpolate) sums it: each
    output is sum_h w_h * (sum_w w_w * x[h, w]) over 4 taps per dim, the width first, a border's repeated column
    read twice. A merged weight (the (out, in) matrix) gave inf * (w0 + w1) where CPU computes inf * w0 + inf *
    w1, -inf where CPU's is NaN (fuzz seed 4)."""
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    dt = np.float64 if compute == torch.float64 else F32
    y = P.convert(x, compute)
    for d in (3, 2):
        cols, weights = cubic_taps(x.shape[d], output_size[d - 2], align, scales[d - 2], dt)
        if 0 in y.shape:
            y = P.full(0, tuple(output_size[d - 2] if i == d else n for i, n in enumerate(y.shape)), compute)
            continue
        y = _apply_taps(y, d, cols, weights, np.ones(cols.shape, bool))
    return P.convert(y, x.dtype)


def antialias(in_size: int, out_size: int, align_corners: bool, scale: float | None, dt: type = F32) -> np.ndarray:
    """The antialiased (triangle filter, support widened by the downscale factor) bilinear weights."""
    s = float(_scale(in_size, out_size, align_corners, scale, dt))
    support = 1.0 * s if s >= 1.0 else 1.0
    inv = 1.0 / s if s >= 1.0 else 1.0
    m = np.zeros((out_size, in_size), dt)
    for o in range(out_size):
        center = s * (o + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), in_size)
        w = np.array([max(0.0, 1.0 - abs((j - center + lo + 0.5) * inv)) for j in range(hi - lo)])
        total = w.sum()
        if total:
            m[o, lo:hi] = (w / total).astype(dt)
    return m


def adaptive(in_size: int, out_size: int) -> np.ndarray:
    m = np.zeros((out_size, in_size), F32)
    for o in range(out_size):
        start = (o * in_size) // out_size
        end = ((o + 1) * in_size + out_size - 1) // out_size
        m[o, start:end] = F32(1) / F32(end - start)
    return m


def pad_index(in_size: int, lo: int, hi: int, mode: str) -> np.ndarray:
    out = in_size + lo + hi
    i = np.arange(out) - lo
    if mode == "reflect":
        i = np.abs(i)
        i = np.where(i >= in_size, 2 * (in_size - 1) - i, i)
    elif mode == "replicate":
        i = np.clip(i, 0, in_size - 1)
    else:  # circular
        i = np.mod(i, in_size)
    m = np.zeros((out, in_size), F32)
    m[np.arange(out), i] = 1
    return m


def pool_counts(in_size: int, k: int, s: int, p: int, ceil_mode: bool, include_pad: bool
                ) -> tuple[np.ndarray, np.ndarray]:
    """(sum matrix (out, in), per-output divisor) of one dimension of avg_pool."""
    out = _pool_out(in_size, k, s, p, 1, ceil_mode)
    m = np.zeros((out, in_size), F32)
    div = np.zeros(out, F32)
    for o in range(out):
        start = o * s - p
        end = min(start + k, in_size + p)
        pool = end - start
        lo, hi = max(start, 0), min(end, in_size)
        m[o, lo:hi] = 1
        div[o] = pool if include_pad else max(hi - lo, 0)
    return m, div


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    eff = d * (k - 1) + 1
    num = size + 2 * p - eff
    out = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


# --- upsampling ---------------------------------------------------------------------------------------------------

def _upsample(kind: str, nd: int, backward: bool) -> Callable[..., Sym]:
    def mats(in_sizes: Sequence[int], out_sizes: Sequence[int], align: bool, scales: Sequence[float | None],
             dtype: torch.dtype) -> list[np.ndarray]:
        dt = np.float64 if dtype == torch.float64 else F32  # ATen's opmath (nearest's index: float always)
        out = []
        for i, o, sc in zip(in_sizes, out_sizes, scales):
            if i == o and (kind == "linear" or (kind, backward) in (("aa", False), ("cubic", True))):
                # ATen copies a dim of unchanged size whatever the scale: linear (compute_source_index_and_lambda),
                # the antialiased forward (its separable kernel skips the dim), bicubic's backward; bicubic's
                # forward and the antialiased backward interpolate it
                out.append(np.eye(i, dtype=dt))
            elif kind in ("nearest", "nearest_exact"):
                # torch 2.13 on CPU: upsample_nearest2d and every nearest backward go through nearest_idx, the 1d
                # and 3d forwards do not (tests/test_upsample_nearest_scales.py)
                out.append(nearest(i, o, sc, exact=kind == "nearest_exact", shortcuts=backward or nd == 2))
            elif kind == "linear":
                low = dtype in (torch.float16, torch.bfloat16) and not backward and nd != 2
                out.append(linear(i, o, align, sc, dt, dtype if low else None))
            elif kind == "cubic":
                out.append(cubic(i, o, align, sc, dt))
            else:
                out.append(antialias(i, o, align, sc, dt))
        return out

    takes_align = kind not in ("nearest", "nearest_exact")

    def forward(self: Sym, output_size: Sequence[int], *rest: object) -> Sym:
        align = bool(rest[0]) if takes_align else False
        scales = list(rest[1:] if takes_align else rest) + [None] * nd
        spatial_checks.upsample(nd, self.shape, output_size)
        if kind == "cubic" and self.dtype.is_floating_point:
            return _cubic_forward(self, output_size, align, scales[:nd])
        m = mats(self.shape[2:], output_size, align, scales[:nd], self.dtype)
        if takes_align and not (self.dtype.is_floating_point or self.dtype.is_complex):
            return _fixed_point_dims(self, m, 2)
        if kind == "linear":
            return _linear_forward(self, output_size, align, scales[:nd])
        return apply_dims(self, m, 2)

    def backward_fn(grad_output: Sym, output_size: Sequence[int], input_size: Sequence[int], *rest: object) -> Sym:
        align = bool(rest[0]) if takes_align else False
        scales = list(rest[1:] if takes_align else rest) + [None] * nd
        spatial_checks.upsample_backward(nd, grad_output.shape, output_size, input_size)
        m = mats(input_size[2:], output_size, align, scales[:nd], grad_output.dtype)
        return apply_dims(grad_output, _transposed(m), 2)

    return backward_fn if backward else forward


_UPSAMPLE = {
    "upsample_nearest1d": ("nearest", 1), "upsample_nearest2d": ("nearest", 2), "upsample_nearest3d": ("nearest", 3),
    "_upsample_nearest_exact1d": ("nearest_exact", 1), "_upsample_nearest_exact2d": ("nearest_exact", 2),
    "_upsample_nearest_exact3d": ("nearest_exact", 3), "upsample_linear1d": ("linear", 1),
    "upsample_bilinear2d": ("linear", 2), "upsample_trilinear3d": ("linear", 3), "upsample_bicubic2d": ("cubic", 2),
    "_upsample_bilinear2d_aa": ("aa", 2),
}
def _fixed_point_dims(x: Sym, mats: Sequence[np.ndarray], first: int) -> Sym:
    """ATen's uint8 interpolation (UpSampleKernel.cpp, separable_upsample_generic_Nd_kernel_impl and its AVX twin):
    one pass per resized dim, the last dim first, each with the weights as int16 fixed point at the largest
    precision that keeps the largest weight under 2**15, the sum rounded (+ half, arithmetic shift) and clamped to
    the dtype's range before the next pass."""
    info = torch.iinfo(x.dtype)
    y = x
    for i in reversed(range(len(mats))):
        m = mats[i]
        if m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(m.shape[0], dtype=m.dtype)):
            continue  # an unchanged dim: no pass
        w_max = float(np.max(m)) if m.size else 0.0
        prec = 0
        while prec < 22 and int(0.5 + w_max * (1 << (prec + 1))) < (1 << 15):
            prec += 1
        w = m.astype(np.float64) * (1 << prec)
        q = np.where(w < 0, np.trunc(w - 0.5), np.trunc(w + 0.5))
        one = [None] * len(mats)
        one[i] = q
        z = apply_dims(P.convert(y, torch.int64), one, first)
        z = P.emit1("floor_divide", [z + (1 << (prec - 1)) if prec else z, P.full(1 << prec, z.shape, torch.int64)])
        z = P.emit1("clamp", [P.full(info.min, z.shape, torch.int64), z, P.full(info.max, z.shape, torch.int64)])
        y = P.convert(z, x.dtype)
    return y


def _scales(op: Any) -> tuple[str, ...]:
    """The scale factors an upsampling builds its matrices from: static (keyed by value)."""
    return tuple(a.name for a in op._schema.arguments if a.name.startswith("scales"))


for _name, (_kind, _nd) in _UPSAMPLE.items():
    for _op, _backward in ((getattr(aten, _name).default, False), (getattr(aten, _name + "_backward").default, True)):
        lower(_op, static=_scales(_op))(_upsample(_kind, _nd, _backward))


# --- padding ------------------------------------------------------------------------------------------------------

def _pad_mats(shape: Sequence[int], padding: Sequence[int], nd: int, mode: str) -> list[np.ndarray]:
    # padding lists (left, right) pairs starting from the last dimension
    mats = []
    for i in range(nd):
        dim_from_end = nd - 1 - i
        lo, hi = padding[2 * dim_from_end], padding[2 * dim_from_end + 1]
        size = shape[len(shape) - nd + i]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({lo}, {hi}) at dimension {len(shape) - nd + i} of input "
                               f"{list(shape)}")
        mats.append(pad_index(size, lo, hi, mode))
    return mats


def _pad(mode: str, nd: int, backward: bool) -> Callable[..., Sym]:
    def forward(self: Sym, padding: Sequence[int]) -> Sym:
        spatial_checks.pad_input(nd, self.shape, padding, mode)
        return apply_dims(self, _pad_mats(self.shape, padding, nd, mode), self.ndim - nd)

    def backward_fn(grad_output: Sym, self: Sym, padding: Sequence[int]) -> Sym:
        spatial_checks.pad_backward(mode, nd, grad_output.shape, self.shape, padding)
        return apply_dims(grad_output, _transposed(_pad_mats(self.shape, padding, nd, mode)), self.ndim - nd)

    return backward_fn if backward else forward


for _mode, _prefix in (("reflect", "reflection_pad"), ("replicate", "replication_pad")):
    for _nd in (1, 2, 3):
        lower(getattr(aten, f"{_prefix}{_nd}d").default)(_pad(_mode, _nd, False))
        lower(getattr(aten, f"{_prefix}{_nd}d_backward").default)(_pad(_mode, _nd, True))


# --- average pooling ----------------------------------------------------------------------------------------------

def _expand(v: Sequence[int] | int, n: int) -> list[int]:
    v = [v] if isinstance(v, int) else list(v)
    return v * n if len(v) == 1 else v


def _avg_parts(shape: Sequence[int], nd: int, kernel_size: Sequence[int], stride: Sequence[int],
               padding: Sequence[int], ceil_mode: bool, count_include_pad: bool, divisor_override: int | None
               ) -> tuple[list[np.ndarray], np.ndarray]:
    k = _expand(kernel_size, nd)
    s = _expand(stride, nd) if stride else k
    p = _expand(padding, nd)
    mats, divs = [], []
    for i in range(nd):
        m, dv = pool_counts(shape[len(shape) - nd + i], k[i], s[i], p[i], ceil_mode, count_include_pad)
        mats.append(m)
        divs.append(dv)
    total = divs[0]
    for dv in divs[1:]:
        total = np.multiply.outer(total, dv)
    if divisor_override:
        total = np.full(total.shape, divisor_override, F32)
    return mats, np.asarray(total)


def _inverse(total: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return (F32(1) / np.asarray(total, F32)).astype(F32)


def _avg_pool(nd: int) -> Callable[..., Sym]:
    def forward(self: Sym, kernel_size: Sequence[int], stride: Sequence[int] = (), padding: Sequence[int] = (0,),
                ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None
                ) -> Sym:
        pool_checks.params("avg", nd, self.shape, kernel_size, stride, padding, 1, ceil_mode, divisor_override)
        mats, total = _avg_parts(self.shape, nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                 divisor_override)
        if self.dtype == torch.int64:  # CPU: the sum in int64 (wrapping), C's truncating division by the count
            summed = apply_dims(self, mats, self.ndim - nd)
            count = P.dense(np.maximum(np.asarray(total).round(), 1).astype(np.int64), torch.int64)
            return P.emit1("divide", [summed, P.broadcast_to(count, summed.shape)])
        summed = apply_dims(P.convert(self, _acc(self)), mats, self.ndim - nd)
        scale = P.broadcast_to(P.dense(_inverse(total), summed.dtype), summed.shape)
        return P.convert(summed * scale, self.dtype)

    return forward


def _avg_pool_backward(nd: int) -> Callable[..., Sym]:
    def backward(grad_output: Sym, self: Sym, kernel_size: Sequence[int], stride: Sequence[int],
                 padding: Sequence[int], ceil_mode: bool, count_include_pad: bool, divisor_override: int | None
                 ) -> Sym:
        k, s, p, _ = pool_checks.params("avg", nd, self.shape, kernel_size, stride, padding, 1, ceil_mode,
                                        divisor_override)
        pool_checks.avg_backward(nd, grad_output.shape, self.shape, k, s, p, ceil_mode)
        mats, total = _avg_parts(self.shape, nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                 divisor_override)
        g = P.convert(grad_output, _acc(grad_output))
        g = g * P.broadcast_to(P.dense(_inverse(total), g.dtype), g.shape)
        return P.convert(apply_dims(g, _transposed(mats), self.ndim - nd), grad_output.dtype)

    return backward


def _acc(x: Sym) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


for _nd in (2, 3):
    lower(getattr(aten, f"avg_pool{_nd}d").default)(_avg_pool(_nd))
    lower(getattr(aten, f"avg_pool{_nd}d_backward").default)(_avg_pool_backward(_nd))


def _adaptive_avg(nd: int) -> Callable[..., Sym]:
    def forward(self: Sym, output_size: Sequence[int]) -> Sym:
        pool_checks.adaptive("avg", nd, self.shape, output_size)
        sizes = self.shape[self.ndim - nd:]
        return apply_dims(self, [adaptive(i, o) for i, o in zip(sizes, output_size)], self.ndim - nd)

    return forward


def _adaptive_avg_backward(nd: int) -> Callable[..., Sym]:
    def backward(grad_output: Sym, self: Sym) -> Sym:
        pool_checks.adaptive_avg_backward(nd, grad_output.shape, self.shape, grad_output.dtype, self.dtype)
        sizes = self.shape[self.ndim - nd:]
        outs = grad_output.shape[grad_output.ndim - nd:]
        mats = [adaptive(i, o).T.copy() for i, o in zip(sizes, outs)]
        grad = apply_dims(grad_output, mats, grad_output.ndim - nd)
        return _planes_as_self(grad, self.shape, nd)

    return backward


def _planes_as_self(grad: Sym, self_shape: Sequence[int], nd: int) -> Sym:
    """CPU's kernel (cpu_adaptive_avg_pool_backward) writes grad_output's planes (its leading dims flattened) into
    the first of a result of self's shape: 2d zeroes that result first, so a grad with fewer planes leaves the
    rest 0 (fuzz seeds 15, 19: a result of grad's shape was returned); 3d does not (the rest is uninitialized) and
    one with more planes writes past CPU's result (a bus error here): both undefined, refused."""
    lead = len(self_shape) - nd
    have, want = math.prod(grad.shape[:lead]), math.prod(self_shape[:lead])
    if tuple(grad.shape) == tuple(self_shape):
        return grad
    if have > want or (have < want and nd == 3):
        raise RuntimeError(f"adaptive_avg_pool{nd}d_backward: grad_output has {have} planes but self has {want} "
                           f"(CPU's result is undefined there)")
    planes = P.reshape(grad, (have, *self_shape[lead:]))
    if have < want:
        planes = P.concat([planes, P.full(0, (want - have, *self_shape[lead:]), grad.dtype)], 0)
    return P.reshape(planes, self_shape)


for _nd in (2, 3):
    lower(getattr(aten, f"_adaptive_avg_pool{_nd}d").default)(_adaptive_avg(_nd))
    lower(getattr(aten, f"_adaptive_avg_pool{_nd}d_backward").default)(_adaptive_avg_backward(_nd))

