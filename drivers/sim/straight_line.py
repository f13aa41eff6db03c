"""An executable's steps as one generated Python function of straight-line code over local variables.

Interpreting a plan step by step costs a list comprehension, list indexing and a try block per step, which on
the small arrays of eager ops and model graphs is a large share of a launch. `compile_steps` writes the same
calls out once per executable: each step's result becomes a local variable, operands are read from locals,
and only the slots needed after the steps (the program's outputs, the final step's operands) are written back
into the value list. The calls, their order and their operands are exactly the interpreter's, so values are
the same; a step that raises is found again by the interpreter, which names it (see driver.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

StraightLine = Callable[[list], None]


def compile_steps(steps: Sequence[Any], needed: Sequence[int], name: str = "plan") -> StraightLine:
    """`run(env)`: runs `steps` (the driver's steps: `fast`, `kernel`, `op`, `inputs`, `outputs`) over the
    value list `env` and stores the slots in `needed` back into it."""
    namespace: dict[str, Any] = {}
    loads: list[str] = []
    body: list[str] = []
    local: set[int] = set()

    def ref(slot: int) -> str:
        if slot not in local:
            loads.append(f"    s{slot} = env[{slot}]")
            local.add(slot)
        return f"s{slot}"

    for n, step in enumerate(steps):
        operands = ", ".join(ref(i) for i in step.inputs)
        if step.fast is not None:
            namespace[f"f{n}"] = step.fast
            body.append(f"    s{step.out} = f{n}({operands})")
            local.add(step.out)
            continue
        namespace[f"k{n}"], namespace[f"o{n}"] = step.kernel, step.op
        body.append(f"    r = k{n}(o{n}, [{operands}])")
        for j, slot in enumerate(step.outputs):
            body.append(f"    s{slot} = r[{j}]")
            local.add(slot)
    stores = [f"    env[{slot}] = {ref(slot)}" for slot in dict.fromkeys(needed)]
    source = "\n".join(["def run(env):", *loads, *body, *stores, "    return None", ""])
    exec(compile(source, f"<sim plan {name}>", "exec"), namespace)  # noqa: S102 - generated from the plan
    return namespace["run"]
