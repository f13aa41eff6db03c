"""`index_add` as one compiled loop over the rows it adds, instead of `np.add.at`.

`np.add.at(out, index, src)` along a dimension costs ~1 us per indexed row of a few hundred elements (its
iterator runs per element): a GPT-2 embedding backward ((128, 128) rows into a (1000, 128) gradient) took
~120 us where this loop takes ~10. Each output element receives its additions in the same order as there
(increasing position in `index`), one binary add each, so the results are the same bits, NaN payloads
included (tests/sim/test_index_add_rows.py compares both on duplicate indices, NaN, inf and signed zeros).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from torchtpu.sim import numerics  # noqa: F401 - checks the kernel caches before a cached kernel runs

_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int64)})


@njit(cache=True, nogil=True)
def _add_rows(out: np.ndarray, index: np.ndarray, src: np.ndarray) -> None:  # pragma: no cover - compiled
    for p in range(out.shape[0]):
        for i in range(index.shape[0]):
            r = index[i]
            for q in range(out.shape[2]):
                # src first: where two NaNs meet, x86 keeps the first operand's, and np.add.at's machine code
                # has the update first (measured: out + src flips NaN signs against it)
                out[p, r, q] = src[p, i, q] + out[p, r, q]


def index_add(x: np.ndarray, index: np.ndarray, src: np.ndarray, dim: int) -> np.ndarray | None:
    """A new C-contiguous array: `x` with `src`'s slices along `dim` added at `index` (1-D, every entry in
    [0, x.shape[dim])) in order, as `np.add.at` on `x` moved to put `dim` first; None where this loop does not
    apply (another dtype, `src` of another dtype, a multi-dimensional index, a 1-D `x`: np.add.at's 1-D path
    keeps the other NaN where two meet) and the caller uses `np.add.at`."""
    if x.dtype not in _DTYPES or src.dtype != x.dtype or index.ndim != 1 or index.dtype.kind not in "iu" \
            or x.ndim < 2 or src.ndim != x.ndim or src.shape[dim] != index.shape[0]:
        return None
    out = np.array(x, order="C")  # a copy
    pre = int(np.prod(x.shape[:dim], dtype=np.int64))
    post = int(np.prod(x.shape[dim + 1:], dtype=np.int64))
    rows = np.ascontiguousarray(src).reshape(pre, index.shape[0], post)
    _add_rows(out.reshape(pre, x.shape[dim], post), np.ascontiguousarray(index, dtype=np.int64), rows)
    return out
