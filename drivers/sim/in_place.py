"""The HBM bytes a program launch moves across its boundary, where an in-place update is priced as the
elements it writes.

A program's inputs are read once and its outputs written once, except for an output that `Program.aliases` marks
as written in place into an input (an in-place ATen op: XLA donates the target's buffer, input-output aliasing)
and that the program computes as one scatter into that very input: a real chip then reads and writes only the
updated elements, never the rest of the buffer. Any other shape of program, or an alias not marked, is priced
whole (fail closed: unknown aliasing never lowers a cost).
"""

from __future__ import annotations

from torchtpu.drivers.ir import Op, Program, Value

_SCATTERS = ("scatter_axis", "index_add")  # operand 0: the buffer updated, operand 2: the updates


def external_bytes(program: Program) -> int:
    """Bytes read from and written to HBM at the program's boundary (in-place scatters: the elements written)."""
    total = sum(v.type.nbytes for v in program.inputs) + sum(v.type.nbytes for v in program.outputs)
    for out_index, in_index in program.aliases:
        written = _scatter_update_bytes(program, program.outputs[out_index], program.inputs[in_index])
        if written is not None:
            total += written - program.inputs[in_index].type.nbytes - program.outputs[out_index].type.nbytes
    return total


def _scatter_update_bytes(program: Program, out: Value, target: Value) -> int | None:
    """The bytes the in-place update of `target` into `out` moves, if `out` is one scatter of `target` (through
    reshapes only, row-major bitcasts) and nothing else reads `target` or the chain; else None."""
    producer = {o.id: op for op in program.ops for o in op.outputs}
    readers: dict[int, int] = {}
    for op in program.ops:
        for v in op.inputs:
            readers[v.id] = readers.get(v.id, 0) + 1
    for v in program.outputs:
        readers[v.id] = readers.get(v.id, 0) + 1
    if sum(1 for v in program.inputs if v.id == target.id) != 1 or sum(
            1 for v in program.outputs if v.id == out.id) != 1 or out.type != target.type:
        return None
    op = _through_reshapes(producer, out.id, readers)
    if op is None or op.name not in _SCATTERS:
        return None
    operand = op.inputs[0]
    while operand.id != target.id:  # back through reshapes to the program input
        prev = producer.get(operand.id)
        if prev is None or prev.name != "reshape" or readers.get(operand.id) != 1:
            return None
        operand = prev.inputs[0]
    if readers.get(target.id) != 1:
        return None
    passes = 1 if op.attr("reduce") == "replace" else 2  # a combining update reads the old elements too
    return passes * op.inputs[2].type.nbytes


def _through_reshapes(producer: dict[int, Op], value_id: int, readers: dict[int, int]) -> Op | None:
    """The first op producing `value_id` that is not a reshape (each reshape's input read by it alone)."""
    op = producer.get(value_id)
    while op is not None and op.name == "reshape":
        if readers.get(op.inputs[0].id) != 1:
            return None
        op = producer.get(op.inputs[0].id)
    return op
