"""The sim's control flow: IR op `while`, an element-wise bounded loop whose condition and body are regions
(programs over 0-d values, drivers/ir.py `Region`).

The regions run through the same kernels as any program (kernels*.py), on the elements still looping: after
each trip the elements whose condition fails are dropped, so a trip costs what its live elements cost, and an
element's result is its state when its condition first fails (or after `limit` trips). After
`INTERPRETED_TRIPS` trips the live elements finish in one compiled loop where the regions allow it
(while_compiled.py: the same arithmetic, the same bits).

IR op `while_array` carries whole arrays through its regions; those run as plans compiled once (regions.py).
"""

from __future__ import annotations

import numpy as np
from torchtpu.drivers.ir import Op, Program
from torchtpu.drivers.sim.kernels import KERNELS, kernel
from torchtpu.drivers.sim.regions import compiled_region
from torchtpu.drivers.sim.while_compiled import INTERPRETED_TRIPS, compiled


def run_region(program: Program, args: list[np.ndarray]) -> list[np.ndarray]:
    """`program` (element-wise ops over 0-d values) on 1-D arrays of equal length: numpy broadcasts the 0-d
    constants against them."""
    env = {v.id: a for v, a in zip(program.inputs, args)}
    for op in program.ops:
        outs = KERNELS[op.name](op, [env[v.id] for v in op.inputs])
        for v, out in zip(op.outputs, outs):
            env[v.id] = out
    return [env[v.id] for v in program.outputs]


@kernel("while")
def _while(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    cond, body, limit = op.attr("cond").program, op.attr("body").program, op.attr("limit")
    shape = op.outputs[0].shape
    state = [np.array(np.broadcast_to(a, shape)).reshape(-1) for a in args]  # the results, written in place
    live = np.arange(state[0].size)
    cur = [s.copy() for s in state]  # never the results: a body passing a value through must not alias them
    for trip in range(limit):
        if trip == INTERPRETED_TRIPS and (run := compiled(cond, body)) is not None:
            # a long loop: the elements still looping finish in one compiled call (while_compiled.py)
            cur = [np.array(c, copy=True) for c in cur]
            run(*cur, limit - trip)
            for s, c in zip(state, cur):
                s[live] = c
            break
        go = np.broadcast_to(run_region(cond, cur)[0], live.shape)
        if not go.all():
            live = live[go]
            cur = [c[go] for c in cur]
        if not live.size:
            break
        cur = [np.broadcast_to(v, live.shape) for v in run_region(body, cur)]
        for s, c in zip(state, cur):
            s[live] = c
    return [s.reshape(shape) for s in state]


@kernel("while_array")
def _while_array(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    """The whole state through `body` while `cond` holds (at most `limit` trips); the results never alias the
    operands."""
    cond = compiled_region(op.attr("cond").program)
    body = compiled_region(op.attr("body").program)
    state = list(args)
    for _ in range(op.attr("limit")):
        if not cond(state)[0]:
            break
        state = body(state)
    return [np.array(s, copy=True) if not s.flags.writeable or any(s is a for a in args) else s for s in state]
