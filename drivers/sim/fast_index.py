"""Direct numpy callables for the sim's indexing and slicing steps (gather, index_select, scatter, slice,
index checks).

The generic kernels (kernels_data.py) first check every index against its dimension (`_check_index`: a min, a
max and a `where` to wrap negative indices: three or four numpy calls), then index. numpy's own indexing makes
the same check (an index is valid when -size <= i < size) and wraps negative indices the same way, so the
callables here index directly with the raw indices and, when numpy rejects them (IndexError) or fails in any
other way, run the generic kernel, which raises its own error (or returns its value). The index arrays numpy
is given are those the generic kernel builds, or equal ones with the same memory layout, so results agree bit
for bit, duplicate scatter indices included (tests/sim/test_fast_index.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from torchtpu.drivers.ir import Op
from torchtpu.drivers.sim import axis_index_loops
from torchtpu.drivers.sim.kernels import KERNELS

FastKernel = Callable[..., np.ndarray]

_WIDENED = frozenset({"bfloat16", "float16"})  # loaded as float32 by the generic scatter
_INDEX = frozenset({"int64", "int32"})


def _generic(op: Op) -> Callable[..., np.ndarray]:
    kern = KERNELS[op.name]
    return lambda *args: kern(op, list(args))[0]


def _grids(shape: tuple[int, ...], dim: int) -> list[np.ndarray | None]:
    """`np.take_along_axis`'s fancy index for an array of `shape`, with None where the index array goes."""
    grids: list[np.ndarray | None] = []
    for d, n in enumerate(shape):
        if d == dim:
            grids.append(None)
            continue
        ramp = np.arange(n).reshape((1,) * d + (-1,) + (1,) * (len(shape) - d - 1))
        ramp.flags.writeable = False
        grids.append(ramp)
    return grids


def gather_axis(op: Op) -> FastKernel | None:
    """`np.take_along_axis(x, index, dim)`: x indexed by the aranges of its other dimensions and the index."""
    x_t, index_t = op.inputs
    dim = op.attr("dimension")
    if len(x_t.shape) != len(index_t.shape) or not 0 <= dim < len(x_t.shape) or index_t.dtype not in _INDEX:
        return None
    grids = _grids(tuple(x_t.shape), dim)
    before, after = grids[:dim], grids[dim + 1:]
    generic = _generic(op)

    def gather(x: np.ndarray, index: np.ndarray) -> np.ndarray:
        looped = axis_index_loops.gather(x, index, dim)  # C order, as below; None for an index out of range
        if looped is not None:
            return looped
        if index.flags.c_contiguous:  # what the generic kernel's `where` makes: the same result layout
            try:
                return x[(*before, index, *after)]
            except Exception:  # noqa: BLE001 - the generic kernel raises its own error
                pass
        return generic(x, index)

    return gather


def index_select(op: Op) -> FastKernel | None:
    """`np.take(x, index, axis=dim)` (it raises IndexError for an index outside -size..size-1)."""
    dim = op.attr("dimension")
    if not 0 <= dim < len(op.inputs[0].shape) or op.inputs[1].dtype not in _INDEX:
        return None
    generic = _generic(op)

    def take(x: np.ndarray, index: np.ndarray) -> np.ndarray:
        try:
            return np.take(x, index, axis=dim)
        except Exception:  # noqa: BLE001 - the generic kernel raises its own error
            return generic(x, index)

    return take


def scatter_axis(op: Op) -> FastKernel | None:
    """A copy of x with `copy[index grid] = src` (reduce "replace", dtypes stored as computed)."""
    x_t, index_t, src_t = op.inputs
    dim = op.attr("dimension")
    out = op.outputs[0].dtype
    if op.attr("reduce") != "replace" or out != x_t.dtype or x_t.dtype in _WIDENED or src_t.dtype in _WIDENED \
            or index_t.dtype not in _INDEX or not 0 <= dim < len(index_t.shape):
        return None
    # the generic kernel's grids: np.indices(index.shape, sparse=True), the index in place of axis `dim`
    grids = list(np.indices(tuple(index_t.shape), sparse=True))
    for g in grids:
        g.flags.writeable = False
    before, after = grids[:dim], grids[dim + 1:]
    generic = _generic(op)

    def scatter(x: np.ndarray, index: np.ndarray, src: np.ndarray) -> np.ndarray:
        if index.flags.c_contiguous:
            result = x.copy()
            try:
                result[(*before, index, *after)] = src
                return result
            except Exception:  # noqa: BLE001 - the generic kernel raises its own error
                pass
        return generic(x, index, src)

    return scatter


def slice_(op: Op) -> FastKernel:
    """`x[start:limit:stride, ...]` with the slices built once."""
    index = tuple(slice(lo, hi, s) for lo, hi, s in zip(op.attr("start"), op.attr("limit"), op.attr("strides")))
    return lambda x: x[index]


def check_index(op: Op) -> FastKernel:
    """The index itself when its min and max are in range (two reductions); else the generic kernel, which
    raises naming the first bad value (or returns the index: a bad value may be the allowed `ignore`)."""
    low, size = op.attr("low"), op.attr("size")
    generic = _generic(op)
    smallest, largest = np.minimum.reduce, np.maximum.reduce
    unsigned = {"int64": np.uint64, "int32": np.uint32}.get(op.inputs[0].dtype)
    if low == 0 and unsigned is not None:  # one reduction: a negative index viewed unsigned is >= 2**63
        def check_unsigned(index: np.ndarray) -> np.ndarray:
            if index.size and index.flags.c_contiguous and largest(index.view(unsigned), axis=None) < size:
                return index
            return generic(index)

        return check_unsigned

    def check(index: np.ndarray) -> np.ndarray:
        if index.size and smallest(index, axis=None) >= low and largest(index, axis=None) < size:
            return index
        return generic(index)

    return check


SPECIALIZERS: dict[str, Callable[[Op], FastKernel | None]] = {
    "gather_axis": gather_axis, "index_select": index_select, "scatter_axis": scatter_axis, "slice": slice_,
    "check_index": check_index,
}
