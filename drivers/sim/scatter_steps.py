"""A combining scatter whose every step is rounded to the buffer's dtype (`scatter_axis` with `rounding="each"`).

CPU's index_reduce (ATen's index_reduce_func_impl) updates `self` one source slice at a time with the dtype's own
arithmetic: for float16/bfloat16 each `self[i] = self[i] * src[j]` (or `+`) is computed in float32 and rounded
back to the half dtype before the next slice is combined. The default scatter (`rounding="once"`, as CPU's
scatter_reduce and XLA's widened scatter) combines in float32 and rounds once at the end, which differs by an ulp
or more once three values meet at one element. Here the updates are applied in rounds: round r takes, for every
target element, its r-th update in the index grid's C order (the order in which ATen visits them), so no round
writes an element twice and each step is one `store` of the widened combine.
"""

from __future__ import annotations

import numpy as np
from torchtpu.drivers.sim.kernels import load, store

_COMBINE = {"add": np.add, "multiply": np.multiply}


def widened(dtype: np.dtype) -> bool:
    """Whether the sim combines values of `dtype` in a wider type (`load`): only then does rounding each step
    differ from combining in the dtype itself, which numpy's ufunc.at already does step by step."""
    return load(np.empty(0, dtype)).dtype != dtype


def scatter_rounded(x: np.ndarray, grid: tuple[np.ndarray, ...], src: np.ndarray, reduce: str,
                    dtype: str) -> np.ndarray:
    """`x` with `src` combined into the elements `grid` (the full index grid, one array per axis, broadcastable
    to src's shape) names, each combine rounded to `dtype`; the updates to one element in C order of the grid."""
    combine = _COMBINE.get(reduce)
    if combine is None:
        raise ValueError(f"scatter_axis rounding='each': reduce {reduce!r} has no rounding; valid: {tuple(_COMBINE)}")
    out = x.copy().reshape(-1)
    if src.size == 0:
        return out.reshape(x.shape)
    target = np.ravel_multi_index(tuple(np.broadcast_to(g, src.shape) for g in grid), x.shape).reshape(-1)
    values = load(np.ascontiguousarray(src)).reshape(-1)
    order = np.argsort(target, kind="stable")  # equal targets keep their C order
    ordered = target[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, ordered.size]))
    rank = np.empty_like(order)
    rank[order] = np.arange(ordered.size) - first
    for r in range(int(rank.max()) + 1):
        pick = rank == r
        where = target[pick]
        out[where] = store(combine(load(out[where]), values[pick]), dtype)
    return out.reshape(x.shape)
