"""Reshape chains folded in a DEFER_AND_FUSE region's Program (region_ir.build, before region_dce.prune).

A region reads each tensor as a reshape of its storage's flat value and writes each result back flattened, so an
op that reads what the previous one wrote sees reshape(reshape(result, (numel,)), sizes): half of a small
model's training-step region was reshapes, a thousand of them chains. reshape(reshape(x, a), b) is reshape(x, b)
(row-major order either way) and a reshape to x's own shape is x, so each chain becomes at most one reshape of
its source; the inner reshapes then feed nothing and the pruning drops them. Pure data movement: results are
bit-identical.
"""

from __future__ import annotations

from torchtpu.drivers.ir import Op, Program, Value


def fold_reshapes(program: Program, op_starts: list[int]) -> tuple[Program, list[int]]:
    """`program` with every reshape of a reshape reading the first one's source instead (an identity reshape
    replaced by its source), and `op_starts` (each event's first op index) moved to the kept ops' indices."""
    source: dict[int, Value] = {}  # a reshape's output id -> the value it reshapes, chains followed to the start
    same: dict[int, Value] = {}  # an identity reshape's output id -> its source
    ops: list[Op] = []
    kept_before = [0] * (len(program.ops) + 1)
    changed = False
    for i, op in enumerate(program.ops):
        inputs = op.inputs
        if same and any(v.id in same for v in inputs):
            inputs = tuple(same.get(v.id, v) for v in inputs)
        if op.name == "reshape":
            src = source.get(inputs[0].id, inputs[0])
            out = op.outputs[0]
            if src.type == out.type:
                same[out.id] = src
                kept_before[i + 1] = len(ops)
                changed = True
                continue
            source[out.id] = src
            inputs = (src,)
        if inputs is not op.inputs and inputs != op.inputs:
            op = Op(op.name, inputs, op.attrs, op.outputs)
            changed = True
        ops.append(op)
        kept_before[i + 1] = len(ops)
    if not changed:
        return program, op_starts
    program.ops = ops
    program.outputs = [same.get(v.id, v) for v in program.outputs]
    program._key = None
    return program, [kept_before[s] for s in op_starts]
