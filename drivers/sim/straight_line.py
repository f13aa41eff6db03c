"""An executable's steps as one generated Python function of straight-line code over local variables.

Interpreting a plan step by step costs a list comprehension, list indexing and a try block per step, which on
the small arrays of eager ops and model graphs is a large share of a launch. `compile_steps` writes the same
calls out once per executable: each step's result becomes a local variable, operands are read from locals,
and only the slots needed after the steps (the program's outputs) are written back into the value list; the
operands of a final step the driver runs itself are returned. The calls, their order and their operands are
exactly the interpreter's, so values are the same; a step that raises is found again by the interpreter, which
names it (see driver.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

StraightLine = Callable[[list], tuple]


def compile_steps(steps: Sequence[Any], needed: Sequence[int], name: str = "plan",
                  returns: Sequence[int] = (), direct: dict[int, Any] | None = None) -> StraightLine:
    """`run(env)`: runs `steps` (the driver's steps: `fast`, `kernel`, `op`, `inputs`, `outputs`) over the
    value list `env`, stores the slots in `needed` back into it and returns the values of the slots in `returns`
    as a tuple. With `direct` (step position -> output index; those steps are ufuncs), `run(env, outs)` computes
    those steps into `outs[index]` (`out=`, direct_outputs.py); a fused step's entry is one output index (or
    None) per result, passed to its kernel as the buffers to write (fusion.py); an `IntoView` entry
    (direct_outputs.py) writes into that output viewed at the step's shape."""
    namespace: dict[str, Any] = {}
    loads: list[str] = []
    body: list[str] = []
    local: set[int] = set()

    def ref(slot: int) -> str:
        if slot not in local:
            loads.append(f"    s{slot} = env[{slot}]")
            local.add(slot)
        return f"s{slot}"

    at: list[int] = []  # the step each line of the body comes from
    kept = set(needed) | set(returns)
    last_read = {slot: n for n, step in enumerate(steps) for slot in step.inputs}
    for n, step in enumerate(steps):
        operands = ", ".join(ref(i) for i in step.inputs)
        if step.fast is not None:
            namespace[f"f{n}"] = step.fast
            into = f", out=outs[{direct[n]}]" if direct and n in direct else ""
            view = direct.get(n) if direct else None
            if hasattr(view, "source"):  # direct_outputs.IntoView
                into = f", out={view.source(f'outs[{view.index}]')}"
            body.append(f"    s{step.out} = f{n}({operands}{into})")
            at.append(n)
            local.add(step.out)
            _release(step, n, last_read, kept, body, at)
            continue
        namespace[f"k{n}"], namespace[f"o{n}"] = step.kernel, step.op
        into = direct.get(n) if direct else None  # a fused step's results written into outputs (fusion.py)
        if isinstance(into, tuple):
            buffers = ", ".join("None" if k is None else f"outs[{k}]" for k in into)
            body.append(f"    r = k{n}(o{n}, [{operands}], ({buffers},))")
        else:
            body.append(f"    r = k{n}(o{n}, [{operands}])")
        at.append(n)
        for j, slot in enumerate(step.outputs):
            body.append(f"    s{slot} = r[{j}]")
            at.append(n)
            local.add(slot)
        body.append("    del r")
        at.append(n)
        _release(step, n, last_read, kept, body, at)
    stores = [f"    env[{slot}] = {ref(slot)}" for slot in dict.fromkeys(needed)]
    result = "".join(f"{ref(slot)}, " for slot in returns)
    head = f"def run(env{', outs' if direct else ''}):"
    source = "\n".join([head, *loads, *body, *stores, f"    return ({result})", ""])
    # Named as a file in this folder: torch.compile's frame hook skips this package's files (compile/backend.py),
    # and would otherwise try to trace every launch that runs between two graphs of a compiled function.
    filename = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"<sim plan {name}>")
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - generated from the plan
    run = namespace["run"]
    run.step_at_line = {2 + len(loads) + i: n for i, n in enumerate(at)}  # line number -> step position
    return run


def _release(step: Any, n: int, last_read: dict[int, int], kept: set[int], body: list[str], at: list[int]) -> None:
    """Drops the locals no later step reads, so that numpy frees an intermediate as soon as it is dead and the
    next step's array reuses its (cache-warm, already mapped) memory, as eager ops do: a plan holding every
    intermediate to the end ran the same ufuncs 2-3x slower at hidden 256 x 512 tokens (fresh pages each)."""
    dead = [slot for slot in dict.fromkeys((*step.inputs, *step.outputs))
            if slot not in kept and last_read.get(slot, -1) <= n]
    if dead:
        body.append(f"    del {', '.join(f's{slot}' for slot in dead)}")
        at.append(n)


def failed_step(run: StraightLine, exc: BaseException) -> int | None:
    """The position of the step of `run` (compile_steps) that raised `exc`, or None if it did not raise there."""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        if tb.tb_frame.f_code is run.__code__:
            found = run.step_at_line.get(tb.tb_lineno)
        tb = tb.tb_next
    return found
