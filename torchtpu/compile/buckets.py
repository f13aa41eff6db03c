"""Bounded dynamism for `torch.compile(dynamic=True)`: a dynamic dimension is padded up to a bucket, so a
sequence length that changes every step compiles one program per bucket instead of one per length.

Padding is only used when it cannot change the real part of any output. `padding_is_safe` proves that on the
bucket-shaped Program by tracking which axes of each value carry a padded dimension, with each IR op's padding
rule read from its record (drivers/ir_ops.py; the rules are in drivers/ir_padding.py): element-wise ops,
broadcasts, transposes, reshapes that keep the axis whole, matmuls where it is a free or batch dimension,
reductions over other axes and prefix scans along it are safe; anything that mixes positions along a padded
axis (a reduction, contraction, sort, gather or concatenation along it) is not, and then the graph runs at its
exact shape. Every op's record must name a rule, and `UNSAFE` is the rule of ops never proven safe, so a new IR
op can only cost a recompile, never a wrong result. Policy: `TORCHTPU_SHAPE_BUCKETS=pow2` (default: next power of
two, at least 8), `none`, or a comma-separated list of sizes (a length above the largest runs exactly).
"""

from __future__ import annotations

import math
from typing import Any

from torchtpu import config
from torchtpu.drivers.ir import OPS, Program
from torchtpu.drivers.ir_padding import Tags


def bucket_policy() -> str | list[int]:
    value = config.get("TORCHTPU_SHAPE_BUCKETS")
    return value if isinstance(value, str) else list(value)


def bucket(n: int, policy: str | list[int] | None = None) -> int:
    policy = bucket_policy() if policy is None else policy
    if policy == "none":
        return n
    if policy == "pow2":
        return max(8, 1 << math.ceil(math.log2(max(n, 1))))
    return next((b for b in policy if b >= n), n)


def padding_is_safe(program: Program, input_tags: list[Tags]) -> list[Tags] | None:
    """The padding tags of each program output, or None when padding could change real outputs."""
    env: dict[int, Tags] = {v.id: t for v, t in zip(program.inputs, input_tags)}
    for op in program.ops:
        tags = [env.get(v.id, {}) for v in op.inputs]
        out = OPS[op.name].padding(op, tags) if any(tags) else {}
        if out is None:
            return None
        for o in op.outputs:
            env[o.id] = out
    return [env.get(v.id, {}) for v in program.outputs]



_SIZE_TYPES = frozenset({"int", "SymInt", "int[]", "SymInt[]", "Optional[int]", "Optional[SymInt]", "List[int]",
                         "List[SymInt]"})


def value_symbols(gm: Any) -> set[str]:
    """The shape symbols of the graph's int inputs that some node reads as a value (`x + n`, `x * s0`), not only
    as a size: padding such a symbol would change a result, so it is never padded. An int flows through
    Python arithmetic nodes (`s0 * 2`) to its uses; any use other than a size argument of an ATen op counts."""
    import torch

    def holds(arg: Any, node: Any) -> bool:
        return arg is node or (isinstance(arg, list | tuple) and any(a is node for a in arg))

    def read_as_value(node: Any) -> bool:
        for user in node.users:
            if isinstance(user.target, torch._ops.OpOverload):
                schema = user.target._schema.arguments
                types = [str(schema[i].type) if i < len(schema) else "?" for i, a in enumerate(user.args)
                         if holds(a, node)]
                by_name = {a.name: str(a.type) for a in schema}
                types += [by_name.get(k, "?") for k, a in user.kwargs.items() if holds(a, node)]
                if any(t not in _SIZE_TYPES for t in types):
                    return True
            elif user.op != "call_function" or read_as_value(user):  # sym arithmetic: its own uses decide
                return True
        return False

    out: set[str] = set()
    for node in gm.graph.nodes:
        value = node.meta.get("val") if node.op == "placeholder" else None
        if isinstance(value, torch.SymInt) and getattr(value.node.expr, "is_Symbol", False) and read_as_value(node):
            out.add(str(value.node.expr))
    return out
