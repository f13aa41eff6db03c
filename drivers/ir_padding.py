"""The padding rules an IR op's record names: which axes of an op's outputs carry a padded dynamic dimension,
given its inputs' (torchtpu/compile/buckets.py pads a dynamic dimension up to a bucket and proves with these
rules that padding cannot change the real part of any output).

A rule may instead return `Padded(tags, masks)`: the op is exact once the named inputs' padded positions along
the named axes hold a fill (`FILLS`: a reduction's identity, zero for a contraction); the rewrite in
torchtpu/compile/padded.py emits those masks (`select(position < real length, x, fill)`, the real lengths being
inputs of the padded program), so a reduction, contraction or convolution along a padded axis stays exact.

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
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Op

Tag = str | tuple[tuple[int, str | None], ...]
Tags = dict[int, Tag]
FILLS = ("zero", "one", "lowest", "highest")  # lowest/highest: -inf/+inf, an integer type's min/max, False/True


@dataclass(frozen=True)
class Padded:
    """Output tags, valid once each (input index, axes, fill) of `masks` is applied to the op's inputs."""

    tags: Tags
    masks: tuple[tuple[int, tuple[int, ...], str], ...]


PaddingRule = Callable[["Op", list[Tags]], "Tags | Padded | None"]
# each reduction's identity: padded positions filled with it leave the reduction of the real ones unchanged
IDENTITY = {"sum": "zero", "prod": "one", "max": "lowest", "min": "highest", "and": "highest", "or": "lowest"}


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


def PAD(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    """Safe where the padded axes get no edge or interior padding of their own (padding other axes, as a stack
    of gradients does, leaves positions along them unchanged)."""
    for a in tags[0]:
        if op.attr("low")[a] or op.attr("high")[a] or op.attr("interior")[a]:
            return None
    return dict(tags[0])


def REDUCE(op: Op, tags: list[Tags]) -> Tags | Padded | None:  # noqa: N802
    """Over unpadded axes as is; over padded ones once their padded positions hold the reduction's identity."""
    dims = op.attr("dimensions")
    out = {a - sum(1 for d in dims if d < a): t for a, t in tags[0].items() if a not in dims}
    along = tuple(sorted(set(tags[0]) & set(dims)))
    if not along:
        return out
    if op.inputs[0].dtype.startswith("complex") and op.attr("kind") in ("max", "min"):
        return None
    return Padded(out, ((0, along, IDENTITY[op.attr("kind")]),))


def CUMULATIVE(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    """A prefix scan along a padded axis leaves the real prefix unchanged (not along a flattened one)."""
    return dict(tags[0]) if not isinstance(tags[0].get(op.attr("dimension")), tuple) else None


def ALONG_UNPADDED(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    """sort: safe when the axis it works along is not padded."""
    d = op.attr("dimension")
    if d in tags[0]:
        return None
    drop = op.outputs[0].ndim < op.inputs[0].ndim
    return {a - (1 if drop and a > d else 0): t for a, t in tags[0].items()}


def ARGREDUCE(op: Op, tags: list[Tags]) -> Tags | Padded | None:  # noqa: N802
    """argmax/argmin: along a padded axis once padded positions hold the value that never wins (-inf for max);
    ties and all-equal rows pick the first index, a real one."""
    d = op.attr("dimension")
    out = {a - (1 if a > d else 0): t for a, t in tags[0].items() if a != d}
    if d not in tags[0]:
        return out
    if isinstance(tags[0][d], tuple) or op.inputs[0].dtype.startswith("complex"):
        return None
    return Padded(out, ((0, (d,), "lowest" if op.attr("kind") == "max" else "highest"),))


def CONCATENATE(op: Op, tags: list[Tags]) -> Tags | None:  # noqa: N802
    merged = ELEMENTWISE(op, tags)
    return None if merged is None or op.attr("dimension") in merged else merged


def _contracted(tags: list[Tags], lc: tuple[int, ...], rc: tuple[int, ...]
                ) -> tuple[tuple[int, tuple[int, ...], str], ...] | None:
    """Masks for contracted axes: both operands' padded positions zeroed (not one side only: 0 x inf is NaN);
    None when the two sides' tags of a contracted pair differ."""
    lmask, rmask = [], []
    for a, b in zip(lc, rc):
        if tags[0].get(a) != tags[1].get(b):
            return None
        if a in tags[0]:
            lmask.append(a)
            rmask.append(b)
    masks = []
    if lmask:
        masks = [(0, tuple(lmask), "zero"), (1, tuple(rmask), "zero")]
    return tuple(masks)


def DOT_GENERAL(op: Op, tags: list[Tags]) -> Tags | Padded | None:  # noqa: N802
    """Padded free and batch dimensions carry over; padded contracted ones are zeroed on both sides."""
    lb, rb = op.attr("lhs_batch"), op.attr("rhs_batch")
    lc, rc = op.attr("lhs_contract"), op.attr("rhs_contract")
    masks = _contracted(tags, lc, rc)
    if masks is None:
        return None
    tags = [{a: t for a, t in tags[0].items() if a not in lc}, {a: t for a, t in tags[1].items() if a not in rc}]
    lhs, rhs = op.inputs
    lfree = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    out: Tags = {}
    for a, t in tags[0].items():
        out[lb.index(a) if a in lb else len(lb) + lfree.index(a)] = t
    for a, t in tags[1].items():
        if not _join(out, rb.index(a) if a in rb else len(lb) + len(lfree) + rfree.index(a), t):
            return None
    return Padded(out, masks) if masks else out


def CONVOLUTION(op: Op, tags: list[Tags]) -> Tags | Padded | None:  # noqa: N802
    """NC* x OI* -> NO*. A padded batch carries over; a padded input feature is contracted (zeroed on both
    sides, one group only). A padded spatial axis of the input alone, at stride 1 without input dilation and with
    padding that keeps its size (lo + hi = the dilated kernel's extent - 1, a 'same' or causal convolution),
    carries over once its padded positions are zero: each real output reads real inputs and positions past the
    real length, which the exact run reads as the convolution's own zero padding. Padded on both sides (a weight
    gradient: the output's spatial size is the kernel's, unpadded), both are zeroed."""
    lhs, rhs = op.inputs
    lt, rt = tags
    if 0 in rt or (1 in lt) != (1 in rt):
        return None
    out: Tags = {}
    masks = []
    if 0 in lt:
        out[0] = lt[0]
    if 1 in lt:
        if lt[1] != rt[1] or op.attr("feature_group_count") != 1:
            return None
        masks += [(0, (1,), "zero"), (1, (1,), "zero")]
    for i, (lo, hi) in enumerate(op.attr("padding")):
        a = 2 + i
        if a not in lt and a not in rt:
            continue
        if (a not in lt or isinstance(lt[a], tuple) or op.attr("window_strides")[i] != 1
                or op.attr("lhs_dilation")[i] != 1 or lo < 0 or hi < 0):
            return None
        if a in rt:
            if rt[a] != lt[a]:
                return None
            masks += [(0, (a,), "zero"), (1, (a,), "zero")]
        elif lo + hi == (rhs.shape[a] - 1) * op.attr("rhs_dilation")[i]:
            masks.append((0, (a,), "zero"))
            out[a] = lt[a]
        else:
            return None
    return Padded(out, tuple(masks)) if masks else out


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
