"""Float scalar arguments as program inputs, so that a new value neither recompiles nor re-traces.

Every eager op with a Python float argument launches its Program with the float constants hoisted to 0-d
inputs (`hoist`): a new value reuses the compiled executable. Ops whose lowering is marked
`@lower(..., float_inputs=True)` go further: their "generic" float arguments (finite, not a multiple of 0.5)
enter the eager cache key by class only (sign, magnitude below 1), so an optimizer's per-step bias corrections
or a learning-rate schedule hit the cached trace instead of tracing the lowering again each step.

Which hoisted input carries which argument is learnt once per cache key by tracing the lowering a second
time with every generic float nudged by a distinct factor (`template`): the two programs must have the same
structure, every hoisted constant must either stay fixed or follow exactly one argument, and every generic
argument must appear as a constant. Anything else (a constant derived from the value, a value that changes
the program's structure) leaves the op keyed by value, as before. Special values (integers, halves, inf, NaN)
stay in the key by value: lowerings branch on them (`alpha == 1`, `pow(x, 2)`, `pow(x, 0.5)`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from torchtpu import runtime
from torchtpu.drivers.ir import FLOAT_DTYPES, Builder, Op, Program

Template = tuple[Any, ...]  # per hoisted input: (argument index, IR dtype) or a fixed 0-d buffer


def is_generic(x: float) -> bool:
    """A float whose value no lowering is expected to branch on."""
    return math.isfinite(x) and not (2.0 * x).is_integer()


def class_key(x: float) -> tuple:
    """What a generic float contributes to the eager cache key."""
    return ("float~", x > 0.0, abs(x) < 1.0)


def _is_float_scalar_constant(op: Op) -> bool:
    return op.outputs[0].dtype in FLOAT_DTYPES and op.attr("value").__class__ is float


def hoist_constants(program: Program, selected: Callable[[Op], bool]) -> tuple[Program, list[Op]]:
    """`program` with each 0-d constant that `selected` picks made an extra input (in op order), and those
    constant ops: the one scalar hoister, for eager launches (float arguments) and deferred regions (all)."""
    builder = Builder()
    env = {v.id: builder.input(v.shape, v.dtype) for v in program.inputs}
    hoisted = []
    for op in program.ops:
        if op.name == "constant" and op.outputs[0].shape == () and selected(op):
            env[op.outputs[0].id] = builder.input((), op.outputs[0].dtype)
            hoisted.append(op)
            continue
        for o, n in zip(op.outputs, builder.emit(op.name, [env[v.id] for v in op.inputs], **dict(op.attrs))):
            env[o.id] = n
    return builder.finish([env[v.id] for v in program.outputs], program.name), hoisted


def hoist(program: Program) -> tuple[Program, tuple[np.ndarray, ...], list[tuple[float, str]]]:
    """(`program` with each 0-d float constant whose value is a Python float made an extra input, those inputs'
    0-d buffers, their (value, IR dtype)). The buffers hold exactly what the constant kernel makes."""
    launch, ops = hoist_constants(program, _is_float_scalar_constant)
    if not ops:
        return program, (), []
    values = [(op.attr("value"), op.outputs[0].dtype) for op in ops]
    buffers = tuple(runtime.scalar_buffer(v, d) for v, d in values)
    for buf in buffers:
        buf.flags.writeable = False
    return launch, buffers, values


def substitute(args: tuple, kwargs: dict[str, Any], values: Sequence[float]) -> tuple[tuple, dict[str, Any]]:
    """`args`/`kwargs` with their generic floats replaced by `values`, in the order the eager signature visits
    them (positional arguments, then keyword values; lists depth-first)."""
    it = iter(values)

    def visit(x: Any) -> Any:
        if x.__class__ is float and is_generic(x):
            return next(it)
        if x.__class__ is list or x.__class__ is tuple:
            return x.__class__(visit(v) for v in x)
        return x

    return tuple(visit(a) for a in args), {k: visit(v) for k, v in kwargs.items()}


def _nudged(x: float, index: int) -> float:
    """A different generic value of x's class, distinct for every argument index."""
    step = 2.0 ** -7 + (index + 1) * 2.0 ** -30
    return x * (1.0 + step) if abs(x) > 1.0 else x * (1.0 - step)


def template(retrace: Callable[[tuple, dict[str, Any]], Program], args: tuple, kwargs: dict[str, Any],
             launch: Program, values: list[tuple[float, str]], floats: list[float]) -> Template | None:
    """How to fill the hoisted inputs of `launch` from an op's generic floats, or None when the op must stay
    keyed by value. `retrace(args, kwargs)` traces the lowering again on other argument values."""
    probes = [_nudged(x, i) for i, x in enumerate(floats)]
    if any(not is_generic(p) or class_key(p) != class_key(x) for p, x in zip(probes, floats)):
        return None
    probe_launch, _, probe_values = hoist(retrace(*substitute(args, kwargs, probes)))
    if probe_launch.key() != launch.key() or len(probe_values) != len(values):
        return None
    entries: list[Any] = []
    used = set()
    for (value, dtype), (probe, _) in zip(values, probe_values):
        if value == probe:
            buf = runtime.scalar_buffer(value, dtype)
            buf.flags.writeable = False
            entries.append(buf)
            continue
        matches = [i for i, (x, p) in enumerate(zip(floats, probes)) if value == x and probe == p]
        if len(matches) != 1:
            return None
        used.add(matches[0])
        entries.append((matches[0], dtype))
    return tuple(entries) if len(used) == len(floats) else None


def share(launch: Program, scalars: tuple[np.ndarray, ...], values: list[tuple[float, str]],
          entries: Template | None) -> tuple[Program, tuple[np.ndarray, ...], Template | None]:
    """One hoisted input per distinct source instead of one per constant: a foreach op repeats each scalar once
    per tensor of its lists. Sources are the template's entries (an argument index, or a fixed value) or, keyed
    by value, the values themselves; `launch`'s hoisted inputs are its last `len(values)`."""
    if entries is not None:
        sources = [e if e.__class__ is tuple else (repr(v), d) for e, (v, d) in zip(entries, values)]
    else:
        sources = [(repr(v), d) for v, d in values]
    first: dict[Any, int] = {}
    for i, source in enumerate(sources):
        first.setdefault(source, i)
    if len(first) == len(sources):
        return launch, scalars, entries
    builder = Builder()
    n_plain = len(launch.inputs) - len(sources)
    env = {v.id: builder.input(v.shape, v.dtype) for v in launch.inputs[:n_plain]}
    for i in first.values():
        v = launch.inputs[n_plain + i]
        env[v.id] = builder.input(v.shape, v.dtype)
    for i, source in enumerate(sources):
        env[launch.inputs[n_plain + i].id] = env[launch.inputs[n_plain + first[source]].id]
    for op in launch.ops:
        for o, n in zip(op.outputs, builder.emit(op.name, [env[v.id] for v in op.inputs], **dict(op.attrs))):
            env[o.id] = n
    keep = list(first.values())
    program = builder.finish([env[v.id] for v in launch.outputs], launch.name)
    return (program, tuple(scalars[i] for i in keep),
            None if entries is None else tuple(entries[i] for i in keep))


def buffers(entries: Template, floats: list[float]) -> tuple[np.ndarray, ...]:
    """The hoisted inputs for this call's generic floats."""
    scalar_buffer = runtime.scalar_buffer
    return tuple(e if e.__class__ is not tuple else scalar_buffer(floats[e[0]], e[1]) for e in entries)
