"""`gather_axis` and the adding `scatter_axis` as compiled loops, instead of numpy's multi-array fancy indexing
and `np.add.at`.

Both IR ops index one axis with a full index array (`torch.gather` and its backward, `scatter_add`): numpy pays
~6 ns an element to gather through three broadcast index arrays and ~16 ns an element in `np.add.at`'s
iterator; DeBERTa-v2's relative-position attention at hidden 256 x 256 tokens gathers and scatters (8, 256,
256) elements four times a training step (~47 ms of its ~140 ms of plan steps). The loops here take ~1-2 ns.

A gather copies, so any loop gives its bits. The scatter adds each source element to its target in the order
`np.add.at` does (C order over the index's positions: for one target, increasing position along the axis),
one binary add each with the update as the first operand (which NaN survives NaN + NaN depends on it: the
index_add loop measured the same), so the results are the same bits (tests/sim/test_axis_index_loops.py
compares both on duplicate indices, NaN payloads, infinities and signed zeros).

Each entry returns None where it does not apply (another dtype, shapes that are not the plain (pre, axis, post)
view, an index out of range: the caller's numpy path then raises its own error).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from torchtpu.sim import numerics  # noqa: F401 - checks the kernel caches before a cached kernel runs

_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int64)})
_GATHER_DTYPES = _DTYPES | {np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)}


# two loops, not one with a mode flag: numba types every branch, and a loop that may write its table cannot take
# a read-only gather source (a folded constant; tests/sim/test_axis_index_loops.py)
@njit(cache=True, nogil=True)
def _gather(x: np.ndarray, index: np.ndarray, out: np.ndarray) -> bool:  # pragma: no cover - compiled
    size = x.shape[1]
    for p in range(index.shape[0]):
        for i in range(index.shape[1]):
            for q in range(index.shape[2]):
                r = index[p, i, q]
                if r < 0:
                    r += size
                if r < 0 or r >= size:
                    return False
                out[p, i, q] = x[p, r, q]
    return True


@njit(cache=True, nogil=True)
def _scatter_add(out: np.ndarray, index: np.ndarray, src: np.ndarray) -> bool:  # pragma: no cover - compiled
    size = out.shape[1]
    for p in range(index.shape[0]):
        for i in range(index.shape[1]):
            for q in range(index.shape[2]):
                r = index[p, i, q]
                if r < 0:
                    r += size
                if r < 0 or r >= size:
                    return False  # `out` is the caller's private copy: dropped
                out[p, r, q] = src[p, i, q] + out[p, r, q]
    return True


def _views(shape: tuple[int, ...], index_shape: tuple[int, ...], dim: int) -> tuple[tuple, tuple] | None:
    """((pre, n, post) of the array, (pre, m, post) of the index), or None when the index does not span the
    array's other dimensions exactly."""
    if len(shape) != len(index_shape) or not 0 <= dim < len(shape) \
            or shape[:dim] != index_shape[:dim] or shape[dim + 1:] != index_shape[dim + 1:]:
        return None
    pre = int(np.prod(shape[:dim], dtype=np.int64))
    post = int(np.prod(shape[dim + 1:], dtype=np.int64))
    return (pre, shape[dim], post), (pre, index_shape[dim], post)


def gather(x: np.ndarray, index: np.ndarray, dim: int) -> np.ndarray | None:
    """`np.take_along_axis(x, index, dim)` (negative indices wrapped) as a new C-contiguous array, or None."""
    views = _views(x.shape, index.shape, dim)
    if views is None or x.dtype not in _GATHER_DTYPES or index.dtype.kind != "i" or not index.size:
        return None
    out = np.empty(index.shape, x.dtype)
    ok = _gather(np.ascontiguousarray(x).reshape(views[0]), np.ascontiguousarray(index).reshape(views[1]),
                 out.reshape(views[1]))
    return out if ok else None


def scatter_add(x: np.ndarray, index: np.ndarray, src: np.ndarray, dim: int) -> np.ndarray | None:
    """A new C-contiguous copy of `x` with `src` added at `index` along `dim` (negative indices wrapped, `src`
    of the index's shape), as `np.add.at(x, full index, src)` adds it, or None (also for a
    1-D `x`: np.add.at's 1-D path keeps the other NaN where two meet)."""
    views = _views(x.shape, index.shape, dim)
    if views is None or x.ndim < 2 or x.dtype not in _DTYPES or src.dtype != x.dtype or src.shape != index.shape \
            or index.dtype.kind != "i" or not index.size:
        return None
    out = np.array(x, order="C")  # a copy
    ok = _scatter_add(out.reshape(views[0]), np.ascontiguousarray(index).reshape(views[1]),
                      np.ascontiguousarray(src).reshape(views[1]))
    return out if ok else None
