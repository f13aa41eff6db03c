"""The StableHLO of IR op `while` (an element-wise bounded loop, drivers/ir_ops.py): one `stablehlo.while` over
the whole state and a trip counter, looping while some element's condition holds and the counter is below
`limit`; each trip keeps the old state of the elements whose condition fails (a select), so every element ends
where the sim's per-element loop ends it. The regions are printed through the ordinary emitters, at the state's
shape (`Region.at`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from torchtpu.drivers import ir
from torchtpu.drivers.ir import Op, Program
from torchtpu.drivers.pjrt.emit_core import EMITTERS, Emitter, V, emits


def emit_program(e: Emitter, program: Program, args: Sequence[V]) -> list[V]:
    """`program`'s ops printed into the current block with its inputs bound to `args`; its outputs."""
    env = {v.id: a for v, a in zip(program.inputs, args)}
    for op in program.ops:
        emitter = EMITTERS.get(op.name)
        if emitter is None:
            raise ir.unsupported_error("pjrt", op.name)
        for value, out in zip(op.outputs, emitter(e, op, [env[v.id] for v in op.inputs])):
            env[value.id] = out
    return [env[v.id] for v in program.outputs]


def while_loop(e: Emitter, init: Sequence[V], cond: Callable[[list[V]], V],
               body: Callable[[list[V]], Sequence[V]]) -> list[V]:
    """stablehlo.while over values of any shape; `cond` gives a 0-d bool."""

    def block(fn: Callable[[list[V]], Sequence[V]]) -> str:
        saved, saved_indent = e.lines, e._indent
        e.lines, e._indent = [], saved_indent + "    "
        args = [V(f"%w{e.fresh()[1:]}", v.shape, v.dtype) for v in init]
        results = list(fn(args))
        e.raw(f'"stablehlo.return"({", ".join(r.name for r in results)}) : '
              f'({", ".join(r.type for r in results)}) -> ()')
        inner, e.lines, e._indent = e.lines, saved, saved_indent
        header = ", ".join(f"{a.name}: {a.type}" for a in args)
        return "{\n" + f"{saved_indent}  ^bb0({header}):\n" + "\n".join(inner) + f"\n{saved_indent}}}"

    regions = f" ({block(lambda a: [cond(a)])}, {block(body)})"
    return e.op_multi("stablehlo.while", init, [(v.shape, v.dtype) for v in init], region=regions)


def _any(e: Emitter, flag: V) -> V:
    if not flag.shape:
        return flag
    return e.reduce([flag], [e.const(False, (), "bool")], list(range(len(flag.shape))),
                    lambda a: [e.binary("stablehlo.or", a[0], a[1])])[0]


@emits("while")
def _emit_while(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape = op.outputs[0].shape
    cond, body = op.attr("cond").at(shape), op.attr("body").at(shape)
    limit = e.const(op.attr("limit"), (), "int64")
    checking, e.checking = e.checking, False  # a region's ops raise nothing (element-wise float math)

    def test(a: list[V]) -> V:
        within = e.compare("LT", a[0], limit)
        return e.binary("stablehlo.and", within, _any(e, emit_program(e, cond, a[1:])[0]))

    def step(a: list[V]) -> list[V]:
        go = emit_program(e, cond, a[1:])[0]
        new = emit_program(e, body, a[1:])
        return [e.binary("stablehlo.add", a[0], e.const(1, (), "int64")),
                *[e.select(go, n, old) for n, old in zip(new, a[1:])]]

    try:
        outs = while_loop(e, [e.const(0, (), "int64"), *args], test, step)
    finally:
        e.checking = checking
    return outs[1:]


@emits("while_array")
def _emit_while_array(e: Emitter, op: Op, args: list[V]) -> list[V]:
    """One stablehlo.while over the whole state and a trip counter, its regions printed at their own types."""
    cond, body = op.attr("cond").program, op.attr("body").program
    limit = e.const(op.attr("limit"), (), "int64")
    checking, e.checking = e.checking, False  # a region's ops raise nothing (no check_index in a region)

    def test(a: list[V]) -> V:
        within = e.compare("LT", a[0], limit)
        return e.binary("stablehlo.and", within, emit_program(e, cond, a[1:])[0])

    def step(a: list[V]) -> list[V]:
        return [e.binary("stablehlo.add", a[0], e.const(1, (), "int64")), *emit_program(e, body, a[1:])]

    try:
        outs = while_loop(e, [e.const(0, (), "int64"), *args], test, step)
    finally:
        e.checking = checking
    return outs[1:]
