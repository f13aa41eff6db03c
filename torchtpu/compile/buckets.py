"""Bounded dynamism for `torch.compile(dynamic=True)`: a dynamic dimension is padded up to a bucket, so a
sequence length that changes every step compiles one program per bucket instead of one per length.

Padding is only used when it cannot change the real part of any output. `padding_is_safe` proves that on the
bucket-shaped Program by tracking which axes of each value carry a padded dimension: element-wise ops,
broadcasts, transposes, reshapes that keep the axis whole, matmuls where it is a free or batch dimension,
reductions over other axes and prefix scans along it are safe; anything that mixes positions along a padded
axis (a reduction, contraction, sort, gather or concatenation along it) is not, and then the graph runs at its
exact shape. An op this analysis has no rule for is unsafe (fails closed), so a new IR op can only cost a
recompile, never a wrong result. Policy: `TORCHTPU_SHAPE_BUCKETS=pow2` (default: next power of two, at least 8),
`none`, or a comma-separated list of sizes (a length above the largest runs exactly).
"""

from __future__ import annotations

import math
import os

from torchtpu.drivers.ir import OPS, Op, Program


def bucket_policy() -> str | list[int]:
    value = os.environ.get("TORCHTPU_SHAPE_BUCKETS", "pow2").strip().lower()
    if value in ("pow2", "none"):
        return value
    try:
        sizes = sorted(int(v) for v in value.split(","))
    except ValueError:
        raise ValueError(f"TORCHTPU_SHAPE_BUCKETS={value!r}; valid: pow2, none, or sizes like 128,256,512") from None
    return sizes


def bucket(n: int, policy: str | list[int] | None = None) -> int:
    policy = bucket_policy() if policy is None else policy
    if policy == "none":
        return n
    if policy == "pow2":
        return max(8, 1 << math.ceil(math.log2(max(n, 1))))
    return next((b for b in policy if b >= n), n)


# A value's padding: axis -> tag. A symbol name ("s0") means the axis is that dynamic size padded at its end;
# a tuple of (size, symbol | None) factors means the axis is a flattening of those factors (batch x sequence
# rows of a matmul, say), each padded factor padded at its own end. Outputs are unpadded from these tags.
Tag = str | tuple[tuple[int, str | None], ...]
Tags = dict[int, Tag]


def _factors(size: int, tag: Tag | None) -> list[tuple[int, str | None]]:
    if tag is None:
        return [(size, None)]
    if isinstance(tag, str):
        return [(size, tag)]
    return list(tag)


def _group_tag(group: list[tuple[int, str | None]]) -> Tag | None:
    if not any(sym for _, sym in group):
        return None
    if len(group) == 1:
        return group[0][1]
    return tuple(group)


def _reshape_tags(src: tuple[int, ...], dst: tuple[int, ...], tags: Tags) -> Tags | None:
    """Padded factors must stay whole: every output dim is a product of consecutive input factors around them."""
    factors: list[tuple[int, str | None]] = []
    for axis, size in enumerate(src):
        factors += _factors(size, tags.get(axis))
    factors = [f for f in factors if f[0] != 1]
    out: Tags = {}
    i = 0
    for axis, size in enumerate(dst):
        if size == 1:
            continue
        group: list[tuple[int, str | None]] = []
        acc = 1
        while acc < size and i < len(factors):
            f_size, padded = factors[i]
            if acc * f_size > size or size % (acc * f_size):
                if padded:
                    return None
                # an unpadded factor split across output dims: take the part that fits, keep the rest
                part = size // acc
                if f_size % part:
                    return None
                group.append((part, None))
                factors[i] = (f_size // part, None)
                acc *= part
                break
            group.append(factors[i])
            acc *= f_size
            i += 1
        if acc != size:
            return None
        tag = _group_tag(group)
        if tag is not None:
            out[axis] = tag
    return out


def _elementwise(tags: list[Tags]) -> Tags | None:
    out: Tags = {}
    for t in tags:
        for axis, tag in t.items():
            if axis in out and out[axis] != tag:
                return None
            out[axis] = tag
    return out


def _op_tags(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: C901 - one case per op family
    name = op.name
    if not any(tags):
        return {}
    first = tags[0]
    if name == "broadcast_in_dim":
        dims = op.attr("broadcast_dimensions")
        return {dims[a]: t for a, t in first.items()}
    if name == "transpose":
        perm = op.attr("permutation")
        return {perm.index(a): t for a, t in first.items()}
    if name == "reshape":
        return _reshape_tags(op.inputs[0].shape, op.outputs[0].shape, first)
    if name == "slice":
        x = op.inputs[0].shape
        for a in first:
            if op.attr("start")[a] != 0 or op.attr("strides")[a] != 1 or op.attr("limit")[a] != x[a]:
                return None
        return dict(first)
    if name == "reduce":
        dims = op.attr("dimensions")
        if set(first) & set(dims):
            return None
        return {a - sum(1 for d in dims if d < a): t for a, t in first.items()}
    if name == "cumulative":
        d = op.attr("dimension")
        return dict(first) if not isinstance(first.get(d), tuple) else None
    if name in ("argreduce", "sort"):
        d = op.attr("dimension")
        if d in first:
            return None
        return {a - (1 if name == "argreduce" and a > d else 0): t for a, t in first.items()}
    if name == "concatenate":
        merged = _elementwise(tags)
        return None if merged is None or op.attr("dimension") in merged else merged
    if name == "dot_general":
        lb, rb = op.attr("lhs_batch"), op.attr("rhs_batch")
        lc, rc = op.attr("lhs_contract"), op.attr("rhs_contract")
        if set(first) & set(lc) or set(tags[1]) & set(rc):
            return None
        lhs, rhs = op.inputs
        lfree = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
        rfree = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
        out: Tags = {}
        for a, t in first.items():
            out[lb.index(a) if a in lb else len(lb) + lfree.index(a)] = t
        for a, t in tags[1].items():
            axis = rb.index(a) if a in rb else len(lb) + len(lfree) + rfree.index(a)
            if axis in out and out[axis] != t:
                return None
            out[axis] = t
        return out
    if name == "index_select":
        d = op.attr("dimension")
        if d in first or len(tags[1]) > 0 and not isinstance(tags[1].get(0), str):
            return None
        out = dict(first)
        if tags[1]:
            out[d] = tags[1][0]
        return out
    if name == "gather_axis":
        if op.attr("dimension") in first:
            return None
        return _elementwise(tags)
    if OPS[name].kind == "elementwise":  # equal shapes: convert, compare, select, clamp, real/imag, ...
        return _elementwise(tags)
    return None  # scatters, pads, reversals, convolutions, windows, FFTs, linalg and any op without a rule here


def padding_is_safe(program: Program, input_tags: list[Tags]) -> list[Tags] | None:
    """The padding tags of each program output, or None when padding could change real outputs."""
    env: dict[int, Tags] = {v.id: t for v, t in zip(program.inputs, input_tags)}
    for op in program.ops:
        out = _op_tags(op, [env.get(v.id, {}) for v in op.inputs])
        if out is None:
            return None
        for o in op.outputs:
            env[o.id] = out
    return [env.get(v.id, {}) for v in program.outputs]
