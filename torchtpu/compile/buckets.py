"""Bounded dynamism for `torch.compile(dynamic=True)`: a dynamic dimension is padded up to a bucket, so a
sequence length that changes every step compiles one program per bucket instead of one per length.

Padding is only used when it cannot change the real part of any output. `padding_is_safe` tracks which axes
of each value carry a padded dimension, with each IR op's padding rule read from its record (drivers/ir_ops.py;
the rules are in drivers/ir_padding.py): element-wise ops, broadcasts, transposes, reshapes that keep the axis
whole, matmuls, reductions and 'same' convolutions are safe (reductions, contractions and convolutions along a
padded axis once their inputs are masked); a sort, gather, scatter or concatenation along it is not, and then the
graph runs at its exact shape. Every op's record must name a rule, and `UNSAFE` is the rule of ops never proven
safe, so a new IR op can only cost a recompile, never a wrong result.

Policy: `TORCHTPU_SHAPE_BUCKETS=pow2` (default: next power of two, at least 8), `none`, or a
comma-separated list of sizes (a length above the largest runs exactly); a backend made by
`torchtpu.compile.bounded(buckets=...)` takes its own policy, where "max" pads every size to the upper bound
`torch._dynamo.mark_dynamic(x, dim, max=...)` declared for it (one Program for every size). Any policy stops at a
declared bound. `pad_args` pads one call's arguments (a flattened dimension such as batch x sequence factor by
factor); torchtpu/compile/padded.py proves the padded Program exact.
"""

from __future__ import annotations

import math
from typing import Any

from torchtpu import config
from torchtpu.drivers.ir import OPS, Program
from torchtpu.drivers.ir_padding import Padded, Tags


def bucket_policy() -> str | list[int]:
    value = config.get("TORCHTPU_SHAPE_BUCKETS")
    return value if isinstance(value, str) else list(value)


POLICIES = ("pow2", "none", "max")


def bucket(n: int, policy: str | list[int] | tuple[int, ...] | None = None, upper: int | None = None) -> int:
    """The padded size of a dynamic size `n` under `policy`, never above its declared bound `upper`."""
    policy = bucket_policy() if policy is None else policy
    if policy == "none":
        return n
    if policy == "max" and upper is not None:
        return max(upper, n)
    if policy in ("pow2", "max"):
        b = max(8, 1 << math.ceil(math.log2(max(n, 1))))
    elif isinstance(policy, list | tuple):
        b = next((b for b in sorted(policy) if b >= n), n)
    else:
        raise ValueError(f"shape bucket policy {policy!r}; valid: {', '.join(POLICIES)} or a list of sizes")
    return max(n, min(b, upper)) if upper is not None else b


Spec = str | tuple[int | str, ...] | None  # an axis' dynamic size: a symbol, a product of symbols and ints, or static


def spec_of(value: Any) -> Spec:
    """The dynamic size a SymInt stands for: "s0", a product ("s0", "s1", 3), "?" (any other expression) or
    None (static)."""
    import torch

    if not isinstance(value, torch.SymInt):
        return None
    expr = value.node.expr
    if getattr(expr, "is_Symbol", False):
        return str(expr)
    if getattr(expr, "is_Mul", False):
        parts: list[int | str] = []
        for a in expr.args:
            if getattr(a, "is_Symbol", False) and str(a) not in parts:
                parts.append(str(a))
            elif getattr(a, "is_Integer", False):
                parts.append(int(a))
            else:
                return "?"
        return tuple(parts)
    return "?" if getattr(expr, "free_symbols", None) else None


def upper_bound(value: Any) -> int | None:
    """The upper bound Dynamo holds for a SymInt's symbol (`mark_dynamic(..., max=)`), or None."""
    try:
        upper = value.node.shape_env.var_to_range[value.node.expr].upper
        return int(upper) if upper.is_finite else None
    except (AttributeError, KeyError, TypeError):
        return None


def order_products(specs: list[Any]) -> list[Any]:
    """Products' factors in layout order (outer first): symbols in the order their first own axis appears among
    the inputs (batch before sequence), integers innermost. A product of a symbol never seen on its own stays
    a product the caller cannot size; analysis fails closed on a wrong guess (tags and sizes must agree)."""
    order: dict[str, int] = {}
    for s in specs:
        for x in (s if isinstance(s, list) else [s]):
            if isinstance(x, str) and x != "?":
                order.setdefault(x, len(order))

    def ordered(x: Spec) -> Spec:
        if not isinstance(x, tuple):
            return x
        syms = sorted((f for f in x if isinstance(f, str)), key=lambda f: order.get(f, len(order)))
        return tuple(syms) + tuple(f for f in x if isinstance(f, int))

    return [[ordered(x) for x in s] if isinstance(s, list) else ordered(s) for s in specs]


def pad_args(args: list[Any], specs: list[Any], policy: str | list[int] | None, bounds: dict[str, int]
             ) -> tuple[list[Any], list[Tags], dict[str, int], dict[str, int]] | None:
    """The arguments padded to their buckets, each tensor's dynamic axes (axis -> tag, every dynamic axis even
    where its size is already its bucket's), the real sizes and the bucket sizes; None when a size cannot be
    read (a product of symbols none of the arguments carries alone)."""
    import torch

    real: dict[str, int] = {}
    for value, spec in zip(args, specs):
        if isinstance(value, torch.Tensor) and isinstance(spec, list):
            for size, s in zip(value.shape, spec):
                if isinstance(s, str):
                    real[s] = size
        elif isinstance(spec, str) and isinstance(value, int):
            real[spec] = value
    for spec in specs:
        for x in (spec if isinstance(spec, list) else [spec]):
            if x == "?" or isinstance(x, tuple) and any(isinstance(f, str) and f not in real for f in x):
                return None
    sizes = {s: bucket(n, policy, bounds.get(s)) for s, n in real.items()}
    padded: list[Any] = []
    tags: list[Tags] = []
    for value, spec in zip(args, specs):
        t: Tags = {}
        if isinstance(value, torch.Tensor) and isinstance(spec, list):
            real_f: list[int] = []
            padded_f: list[int] = []
            shape: list[int] = []
            for axis, (size, s) in enumerate(zip(value.shape, spec)):
                factors = [size] if s is None else [s] if isinstance(s, str) else list(s)
                r = [real[f] if isinstance(f, str) else f for f in factors]
                p = [sizes[f] if isinstance(f, str) else f for f in factors]
                real_f += r
                padded_f += p
                shape.append(int(math.prod(p)))
                if isinstance(s, str):
                    t[axis] = s
                elif isinstance(s, tuple):
                    t[axis] = tuple((n, f if isinstance(f, str) else None) for n, f in zip(p, factors))
            if real_f != padded_f:
                pads: list[int] = []
                for r, p in reversed(list(zip(real_f, padded_f))):
                    pads += [0, p - r]
                value = torch.nn.functional.pad(value.reshape(real_f), pads).reshape(shape)
        elif isinstance(spec, str) and isinstance(value, int):
            value = sizes[spec]
        elif isinstance(spec, tuple) and isinstance(value, int):
            value = int(math.prod(sizes[f] if isinstance(f, str) else f for f in spec))
        padded.append(value)
        tags.append(t)
    return padded, tags, real, sizes


def padding_is_safe(program: Program, input_tags: list[Tags]) -> list[Tags] | None:
    """The padding tags of each program output, or None when no rule proves padding harmless (with masks where
    a rule asks for them; padded.analyse also checks the Program against the exact one)."""
    env: dict[int, Tags] = {v.id: t for v, t in zip(program.inputs, input_tags)}
    for op in program.ops:
        tags = [env.get(v.id, {}) for v in op.inputs]
        out = OPS[op.name].padding(op, tags) if any(tags) else {}
        if out is None:
            return None
        for o in op.outputs:
            env[o.id] = out.tags if isinstance(out, Padded) else out
    return [env.get(v.id, {}) for v in program.outputs]


