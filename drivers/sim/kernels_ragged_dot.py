"""The sim's value rule of IR op `ragged_dot` (drivers/ir_ragged_dot.py): each group's product on the MXU model at
the op's precision (as IR op dot_general), over that group's rows (or contraction positions) only, as a grouped
kernel computes it; rows past the last group end, and empty groups, are zeros."""

from __future__ import annotations

import numpy as np
from torchtpu.drivers.ir import Op
from torchtpu.drivers.sim.kernels import kernel, store
from torchtpu.drivers.sim.kernels_data import mxu_operand
from torchtpu.sim import mxu


def group_bounds(ends: np.ndarray, length: int, axis: str) -> list[tuple[int, int]]:
    """Each group's [start, stop) over an axis of `length` positions. Raises when the ends are not a valid
    partition of a prefix (nondecreasing, from 0 to at most `length`): a grouped kernel given such ends reads or
    writes out of place, and no result is right."""
    bounds = [int(e) for e in np.asarray(ends).reshape(-1)]
    previous = 0
    for e in bounds:
        if e < previous or e > length:
            raise ValueError(f"ragged_dot: group ends {bounds} must be nondecreasing int32 values from 0 to at most "
                             f"{length} (the {axis} length)")
        previous = e
    return list(zip([0, *bounds[:-1]], bounds))


@kernel("ragged_dot")
def _ragged_dot(op: Op, args: list[np.ndarray], array: int = mxu.DEFAULT_ARRAY) -> list[np.ndarray]:
    lhs, rhs, ends = args
    precision = op.attr("precision")
    # operands in C order: a group's slice of a transposed operand (the backward's x.T, a transposed weight)
    # would be a new product shape for mxu_layout's per-shape layout probe at every routing
    if op.attr("mode") == "rows":
        a, b = np.ascontiguousarray(mxu_operand(lhs)), np.ascontiguousarray(mxu_operand(rhs))
        out = np.zeros((lhs.shape[0], rhs.shape[2]), np.float32)
        for g, (start, stop) in enumerate(group_bounds(ends, lhs.shape[0], "rows")):
            if stop > start:
                out[start:stop] = mxu.matmul(a[start:stop], b[g], precision=precision, out_dtype=np.float32,
                                             array=array)
    else:
        b = np.ascontiguousarray(mxu_operand(rhs))
        out = np.zeros((ends.shape[0], lhs.shape[0], rhs.shape[1]), np.float32)
        for g, (start, stop) in enumerate(group_bounds(ends, lhs.shape[1], "contraction")):
            if stop > start:
                part = np.ascontiguousarray(mxu_operand(lhs[:, start:stop]))
                out[g] = mxu.matmul(part, b[start:stop], precision=precision, out_dtype=np.float32, array=array)
    return [store(out, op.outputs[0].dtype)]
