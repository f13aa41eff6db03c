"""The padding rules an IR op's record names: which axes of an op's outputs carry a padded dynamic dimension,
given its inputs' (torchtpu/compile/buckets.py pads a dynamic dimension up to a bucket and proves with these
rules that padding cannot change the real part of any output).

A value's tags map axis -> tag. A symbol name ("s0") means the axis is that dynamic size padded at its end; a
tuple of (size, symbol | None) factors means the axis is a flattening of those factors (batch x sequence rows of
a matmul, say), each padded factor padded at its own end. A rule returns the outputs' tags, or None when padding
could change a real output: an op that mixes positions along a padded axis (a reduction, contraction, sort,
gather or concatenation along it). `UNSAFE` is the rule of every op for which padding was never proven safe
(scatters, pads, reversals, convolutions, windows, FFTs, linear algebra): the graph then runs at its exact shape.
Rules are called only when some input carries a padded axis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Op

Tag = str | tuple[tuple[int, str | None], ...]
Tags = dict[int, Tag]
PaddingRule = Callable[["Op", list[Tags]], "Tags | None"]


def UNSAFE(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802 - a rule's name, as the records spell it
    """Padding along any axis of any input may change a real output."""
    return None


def ELEMENTWISE(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    """Equal shapes in and out, each output element a function of the inputs' elements at its position."""
    out: Tags = {}
    for t in tags:
        for axis, tag in t.items():
            if not _join(out, axis, tag):
                return None
    return out


def _join(out: Tags, axis: int, tag: Tag) -> bool:
    """Adds `axis: tag` to `out`; False when the axis already carries another tag."""
    if axis in out and out[axis] != tag:
        return False
    out[axis] = tag
    return True


def BROADCAST_IN_DIM(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    dims = op.attr("broadcast_dimensions")
    return {dims[a]: t for a, t in tags[0].items()}


def TRANSPOSE(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    perm = op.attr("permutation")
    return {perm.index(a): t for a, t in tags[0].items()}


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


def reshape_tags(src: tuple[int, ...], dst: tuple[int, ...], tags: Tags) -> Tags | None:
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


def RESHAPE(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    return reshape_tags(op.inputs[0].shape, op.outputs[0].shape, tags[0])


def SLICE(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    """Safe only where the padded axis is kept whole."""
    x = op.inputs[0].shape
    for a in tags[0]:
        if op.attr("start")[a] != 0 or op.attr("strides")[a] != 1 or op.attr("limit")[a] != x[a]:
            return None
    return dict(tags[0])


def REDUCE(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    """Safe over unpadded axes only (padding is not the reduction's identity in general)."""
    dims = op.attr("dimensions")
    if set(tags[0]) & set(dims):
        return None
    return {a - sum(1 for d in dims if d < a): t for a, t in tags[0].items()}


def CUMULATIVE(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    """A prefix scan along a padded axis leaves the real prefix unchanged (not along a flattened one)."""
    return dict(tags[0]) if not isinstance(tags[0].get(op.attr("dimension")), tuple) else None


def ALONG_UNPADDED(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    """argreduce and sort: safe when the axis they work along is not padded."""
    d = op.attr("dimension")
    if d in tags[0]:
        return None
    drop = op.outputs[0].ndim < op.inputs[0].ndim  # argreduce removes its axis
    return {a - (1 if drop and a > d else 0): t for a, t in tags[0].items()}


def CONCATENATE(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    merged = ELEMENTWISE(op, tags)
    return None if merged is None or op.attr("dimension") in merged else merged


def DOT_GENERAL(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    """Safe where padded axes are free or batch dimensions, never contracted ones."""
    lb, rb = op.attr("lhs_batch"), op.attr("rhs_batch")
    lc, rc = op.attr("lhs_contract"), op.attr("rhs_contract")
    if set(tags[0]) & set(lc) or set(tags[1]) & set(rc):
        return None
    lhs, rhs = op.inputs
    lfree = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    out: Tags = {}
    for a, t in tags[0].items():
        out[lb.index(a) if a in lb else len(lb) + lfree.index(a)] = t
    for a, t in tags[1].items():
        if not _join(out, rb.index(a) if a in rb else len(lb) + len(lfree) + rfree.index(a), t):
            return None
    return out


def INDEX_SELECT(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    d = op.attr("dimension")
    if d in tags[0] or len(tags[1]) > 0 and not isinstance(tags[1].get(0), str):
        return None
    out = dict(tags[0])
    if tags[1]:
        out[d] = tags[1][0]
    return out


def GATHER_AXIS(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    if op.attr("dimension") in tags[0]:
        return None
    return ELEMENTWISE(op, tags)
