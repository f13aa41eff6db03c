"""IR op `while` compiled: the element-wise loop as one numba function (a loop over elements, each running its
own trips), for regions made only of the ops in `_BINARY` / `compare` / `constant` over float32, float64 and
bool. The interpreted loop (kernels_control.py) costs a pass of every region op over the live elements per
trip, ~100 us, so a million-trip recurrence (the orthogonal polynomials of degree 2^20,
drivers/ir_lowerings_polynomials.py) took minutes; compiled, a trip is a few scalar instructions.

The arithmetic is the same IEEE float32/float64 operations in the same order as the numpy kernels
(`error_model="numpy"`: x / 0 is inf or NaN, not an exception; no fastmath), so the results are bit-identical.
The interpreter runs the first trips itself (`INTERPRETED_TRIPS`) and hands the elements still looping to the
compiled function, so short loops never pay numba's compile time; compiled functions are kept per region text.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from torchtpu.drivers.ir import Program

INTERPRETED_TRIPS = 64
_BINARY = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
_COMPARE = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}
_DTYPES = {"float32": "np.float32", "float64": "np.float64", "bool": "np.bool_"}
_CACHE: dict[str, Callable[..., None] | None] = {}


def _lines(program: Program, names: dict[int, str], prefix: str) -> list[str] | None:
    """`program`'s ops as assignments to fresh scalars; None if an op or dtype has no compiled form."""
    out = []
    for i, op in enumerate(program.ops):
        if any(v.dtype not in _DTYPES for v in (*op.inputs, *op.outputs)) or len(op.outputs) != 1:
            return None
        args = [names[v.id] for v in op.inputs]
        name = f"{prefix}{i}"
        if op.name in _BINARY:
            expr = f"{args[0]} {_BINARY[op.name]} {args[1]}"
        elif op.name == "compare" and op.attr("direction") in _COMPARE:
            expr = f"{args[0]} {_COMPARE[op.attr('direction')]} {args[1]}"
        elif op.name == "constant" and op.attr("shape") == () and op.outputs[0].dtype != "bool":
            expr = f"{_DTYPES[op.outputs[0].dtype]}({float(op.attr('value'))!r})"
        else:
            return None
        names[op.outputs[0].id] = name
        out.append(f"{name} = {expr}")
    return out


def _source(cond: Program, body: Program) -> str | None:
    n = len(cond.inputs)
    state = [f"s{j}" for j in range(n)]
    cnames = {v.id: s for v, s in zip(cond.inputs, state)}
    bnames = {v.id: s for v, s in zip(body.inputs, state)}
    c, b = _lines(cond, cnames, "c"), _lines(body, bnames, "b")
    if c is None or b is None:
        return None
    pad = "            "
    return "\n".join([
        f"def run({', '.join(f'a{j}' for j in range(n))}, limit):",
        "    for i in range(a0.size):",
        *[f"        s{j} = a{j}[i]" for j in range(n)],
        "        for _ in range(limit):",
        *[pad + line for line in c],
        f"{pad}if not {cnames[cond.outputs[0].id]}:",
        f"{pad}    break",
        *[pad + line for line in b],
        f"{pad}{', '.join(state)} = {', '.join(bnames[v.id] for v in body.outputs)},",
        *[f"        a{j}[i] = s{j}" for j in range(n)],
    ])


def compiled(cond: Program, body: Program) -> Callable[..., None] | None:
    """run(*state, limit): each element of the 1-D state arrays loops in place; None when the regions hold an
    op without a compiled form."""
    src = _source(cond, body)
    if src is None:
        return None
    if src not in _CACHE:
        import numba

        scope: dict = {"np": np}
        exec(compile(src, "<while_compiled>", "exec"), scope)  # noqa: S102 - generated from IR ops above
        _CACHE[src] = numba.njit(error_model="numpy", cache=False)(scope["run"])
    return _CACHE[src]
