"""Dead-op elimination for a DEFER_AND_FUSE region's Program (region_ir.build).

A region's outputs are only the storages someone still references at the flush (deferred.py), so the ops that
computed a result the program dropped before the flush (a loop's `y = a + b` overwritten each step, a view read
nobody uses) feed no output. Such an op is removed when it cannot fail: the ops listed here have no runtime
check on the sim or the PJRT driver (an integer division by zero, an index out of range, a `check_index` raise;
those ops always run, so a dropped result still raises its error as DEFER_NEVER does). Live outputs are computed
by the same ops as before: results are bit-identical.
"""

from __future__ import annotations

from torchtpu.drivers.ir import FLOAT_DTYPES, Op, Program
from torchtpu.drivers.ir_ops import BINARY, UNARY

# integer division and remainder raise on a zero divisor (drivers/sim/kernels.py); on floats they cannot fail
_INT_CHECKED = frozenset({"divide", "remainder", "fmod", "floor_divide"})
PURE = frozenset(UNARY) | (frozenset(BINARY) - _INT_CHECKED) | frozenset({
    "is_finite", "compare", "select", "clamp", "convert", "constant", "iota", "broadcast_in_dim", "reshape",
    "transpose", "slice", "reverse", "concatenate", "pad", "reduce", "argreduce", "cumulative", "dot_general",
    "real", "imag", "complex",
})
_NON_INT = FLOAT_DTYPES | frozenset({"complex64", "complex128"})


def removable(op: Op) -> bool:
    """Whether `op` can be dropped when nothing reads its results (it has no side effect and cannot raise)."""
    name = op.name
    if name in PURE:
        return True
    return name in _INT_CHECKED and all(v.dtype in _NON_INT for v in op.inputs)


def prune(program: Program, op_starts: list[int]) -> tuple[Program, list[int]]:
    """`program` without the removable ops whose results feed no output, and `op_starts` (each event's first op
    index) moved to the kept ops' indices (an event all of whose ops went starts where the next one does)."""
    needed = {v.id for v in program.outputs}
    keep = [False] * len(program.ops)
    for i in range(len(program.ops) - 1, -1, -1):
        op = program.ops[i]
        if not removable(op) or any(o.id in needed for o in op.outputs):
            keep[i] = True
            needed.update(v.id for v in op.inputs)
    if all(keep):
        return program, op_starts
    kept_before = [0] * (len(keep) + 1)
    for i, k in enumerate(keep):
        kept_before[i + 1] = kept_before[i] + k
    program.ops = [op for op, k in zip(program.ops, keep) if k]
    program._key = None
    return program, [kept_before[s] for s in op_starts]
