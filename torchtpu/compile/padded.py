"""Bounded dynamism: one Program per bucket for a graph with dynamic sizes, exact at every real size.

A call's dynamic sizes are padded up to their buckets (`buckets.bucket`); the graph is traced at the padded
sizes and at the exact sizes, and the two Programs are walked side by side (`analyse`):

* every axis that carries a dynamic size is tagged (drivers/ir_padding.py), and each op's padding rule says how
  the tags flow and which inputs must be masked first: a reduction along a padded axis sees its identity at the
  padded positions (softmax's max sees -inf at padded keys, its sum zero), a contraction or convolution sees
  zeros on both sides; padded rows (queries, tokens) are dropped when the outputs are cut back (`unpad`);
* every value's shape must agree with the exact Program's: a tagged axis has the padded size there and the real
  size in the exact Program; an untagged one the same size in both. A constant or iota created at a padded
  size (a causal mask) is tagged with a dynamic size that explains it (the first, in argument order);
* every attribute must be equal, except shapes (checked above) and scalar constants, which become inputs of
  the padded Program (`1 / token count` of a mean, `x + n`): each call passes the values its own exact trace
  has. Anything else that differs (a slice start, a dense constant, an op the walk cannot map) fails closed:
  that call runs its exact Program.

`emit` writes the padded Program with the masks and with the real sizes (int32) and lifted constants as
trailing scalar inputs. The masks compare an iota along the axis with the real size, so one Program serves every
size in its bucket; each call re-checks its own exact trace against the bucket's plan before using it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from torchtpu.drivers.ir import OPS, Builder, Op, Program, Value, _attrs_key
from torchtpu.drivers.ir_padding import Padded, Tag, Tags

# ops that create values from nothing but a shape: an axis they create at a padded size is the padded axis
_CREATION = frozenset({"constant", "iota", "broadcast_in_dim"})
_SHAPE_ATTRS = {"slice": ("limit",)}  # beyond "shape": attributes that only restate a size the walk checks


@dataclass
class Analysis:
    tags: dict[int, Tags]  # value id -> its padded axes
    masks: dict[int, tuple[tuple[int, tuple[int, ...], str], ...]]  # op index -> (input, axes, fill)
    lifted: dict[int, Any]  # op index of a scalar constant -> its value in the exact Program


@dataclass
class Plan:
    """A bucket's padded Program, ready to launch, and what each call passes besides its tensors."""

    program: Program
    symbols: list[str]  # real-size inputs, in order, after the padded Program's own inputs
    lifted: list[int]  # op indices of lifted constants, in input order after the sizes
    dtypes: list[str]  # the lifted constants' IR dtypes
    analysis: Analysis
    out_tags: list[Tags] = field(default_factory=list)
    traced: Any = None  # the backend's launch record of `program`


def tag_real(tag: Tag, real: dict[str, int]) -> int:
    if isinstance(tag, str):
        return real[tag]
    return int(np.prod([real[s] if s else n for n, s in tag], dtype=np.int64))


def tag_padded(tag: Tag, sizes: dict[str, int]) -> int:
    if isinstance(tag, str):
        return sizes[tag]
    return int(np.prod([n for n, _ in tag], dtype=np.int64))


def _agree(padded: tuple[int, ...], exact: tuple[int, ...], tags: Tags, real: dict[str, int],
           sizes: dict[str, int]) -> bool:
    if len(padded) != len(exact):
        return False
    for a, (p, e) in enumerate(zip(padded, exact)):
        tag = tags.get(a)
        if tag is None:
            if p != e:
                return False
        elif tag_padded(tag, sizes) != p or tag_real(tag, real) != e:
            return False
    return True


last_refusal: list[str] = [""]  # why the last `analyse` returned None (compile_stats reports it)


def analyse(padded: Program, exact: Program, input_tags: list[Tags], real: dict[str, int], sizes: dict[str, int],
            plan: Analysis | None = None) -> Analysis | None:
    """The padded Program's tags and masks and the exact Program's lifted constants, or None when padding could
    change a real output (`last_refusal` then says where). With `plan` (the bucket's analysis), the walk must
    reach the same tags and masks."""
    try:
        return _walk(padded, exact, input_tags, real, sizes, plan)
    except _Refused as exc:
        last_refusal[0] = str(exc)
        return None


class _Refused(Exception):
    pass


def _walk(padded: Program, exact: Program, input_tags: list[Tags], real: dict[str, int], sizes: dict[str, int],
          plan: Analysis | None) -> Analysis:
    if (len(padded.ops) != len(exact.ops) or len(padded.inputs) != len(exact.inputs)
            or len(padded.outputs) != len(exact.outputs)):
        raise _Refused("the padded and exact graphs lower to different programs")
    tags: dict[int, Tags] = {}
    for pv, ev, t in zip(padded.inputs, exact.inputs, input_tags):
        if pv.dtype != ev.dtype or not _agree(pv.shape, ev.shape, t, real, sizes):
            raise _Refused(f"input {pv} vs {ev} with dynamic axes {t}")
        tags[pv.id] = t
    masks: dict[int, tuple[tuple[int, tuple[int, ...], str], ...]] = {}
    lifted: dict[int, Any] = {}
    for i, (op, eop) in enumerate(zip(padded.ops, exact.ops)):
        if op.name != eop.name or len(op.inputs) != len(eop.inputs) or len(op.outputs) != len(eop.outputs) \
                or op.attr_dict.keys() != eop.attr_dict.keys():
            raise _Refused(f"op {i}: {op.name} in the padded program, {eop.name} in the exact one")
        pa, ea = op.attr_dict, eop.attr_dict
        for k in pa:
            if k == "shape" or k in _SHAPE_ATTRS.get(op.name, ()):
                continue
            scalar = op.name == "constant" and k == "value" and not isinstance(pa[k], tuple)
            if scalar and (i in plan.lifted if plan is not None else _attrs_key(pa[k]) != _attrs_key(ea[k])):
                lifted[i] = ea[k]
            elif _attrs_key(pa[k]) != _attrs_key(ea[k]):
                raise _Refused(f"op {i} ({op.name}): its {k} depends on the dynamic size")
        in_tags = [tags.get(v.id, {}) for v in op.inputs]
        out: Tags = {}
        if any(in_tags):
            rule = OPS[op.name].padding(op, in_tags)
            if rule is None:
                raise _Refused(f"op {i} ({op.name}): no padding rule proves dynamic axes {in_tags} exact")
            if isinstance(rule, Padded):
                masks[i] = rule.masks
                out = rule.tags
            else:
                out = rule
        for o, eo in zip(op.outputs, eop.outputs):
            t = dict(out)
            hint = plan.tags.get(o.id, {}) if plan is not None else {}
            for a, (p, e) in enumerate(zip(o.shape, eo.shape)):
                if a in t or op.name not in _CREATION:
                    continue
                if a in hint:
                    t[a] = hint[a]
                elif p != e:
                    found = [t for t in _known(tags, real, _along(op, a)) if tag_real(t, real) == e
                             and tag_padded(t, sizes) == p]
                    if not found:
                        raise _Refused(f"op {i} ({op.name}): axis {a} of size {e} is {p} padded")
                    t[a] = found[0]  # of equal candidates any is exact here; later calls recheck (`plan`)
            if o.dtype != eo.dtype or not _agree(o.shape, eo.shape, t, real, sizes):
                raise _Refused(f"op {i} ({op.name}): {o.type} padded, {eo.type} exact, dynamic axes {t}")
            if t:
                tags[o.id] = t
    if plan is not None and (tags != plan.tags or masks != plan.masks):
        raise _Refused("this size's dynamic axes differ from its bucket's")
    return Analysis(tags, masks, lifted)


def _along(op: Op, axis: int) -> bool:
    """Whether a creation op's values vary along `axis` (an iota counting along it, a broadcast operand's axis)."""
    if op.name == "iota":
        return op.attr("dimension") == axis
    if op.name == "broadcast_in_dim":
        dims = op.attr("broadcast_dimensions")
        return axis in dims and op.inputs[0].shape[dims.index(axis)] != 1
    return isinstance(op.attr("value"), tuple)


def _known(tags: dict[int, Tags], real: dict[str, int], along: bool) -> list[Tag]:
    """The tags an axis created at a padded size may take: a dynamic size, or (where the values do not vary
    along the axis, so the flattening order cannot matter) a flattened one already in the program."""
    found: list[Tag] = list(real)
    if not along:
        for t in tags.values():
            found += [x for x in t.values() if isinstance(x, tuple) and x not in found]
    return found


def emit(padded: Program, analysis: Analysis, symbols: list[str]) -> Plan:
    """The padded Program with its masks, taking the real sizes and the lifted constants as trailing inputs."""
    b = Builder()
    env: dict[int, Value] = {v.id: b.input(v.shape, v.dtype) for v in padded.inputs}
    lengths = {s: b.input((), "int32") for s in symbols}
    lifted = sorted(analysis.lifted)
    dtypes = [padded.ops[i].attr("dtype") for i in lifted]
    scalars = {i: b.input((), d) for i, d in zip(lifted, dtypes)}
    predicates: dict[tuple, Value] = {}
    for i, op in enumerate(padded.ops):
        if i in scalars:
            shape = tuple(op.attr("shape"))
            v = scalars[i]
            env[op.outputs[0].id] = v if not shape else b.emit("broadcast_in_dim", [v], shape=shape,
                                                                  broadcast_dimensions=())[0]
            continue
        ins = [env[v.id] for v in op.inputs]
        for k, axes, fill in analysis.masks.get(i, ()):
            on = {a: analysis.tags[op.inputs[k].id][a] for a in axes}
            ins[k] = _masked(b, ins[k], on, fill, lengths, predicates)
        outs = tuple(b._value(o.type) for o in op.outputs)
        b.ops.append(Op(op.name, tuple(ins), op.attrs, outs))
        for o, n in zip(op.outputs, outs):
            env[o.id] = n
    program = b.finish([env[v.id] for v in padded.outputs], name=padded.name)
    out_tags = [analysis.tags.get(v.id, {}) for v in padded.outputs]
    return Plan(program, list(symbols), lifted, dtypes, analysis, out_tags)


def _fill(kind: str, dtype: str) -> Any:
    if kind in ("zero", "one"):
        return (0 if kind == "zero" else 1) if dtype != "bool" else kind == "one"
    if dtype == "bool":
        return kind == "highest"
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return int(info.min if kind == "lowest" else info.max)
    return float("-inf") if kind == "lowest" else float("inf")


def _masked(b: Builder, x: Value, on: dict[int, Tag], fill: str, lengths: dict[str, Value],
            predicates: dict[tuple, Value]) -> Value:
    """select(every padded factor's position < its real size, x, fill)."""
    key = (x.shape, tuple(sorted(on.items())))
    pred = predicates.get(key)
    if pred is None:
        shape = x.shape

        def const(v: int) -> Value:
            return b.emit("constant", [], value=v, shape=shape, dtype="int32")[0]

        for a, tag in sorted(on.items()):
            factors = [(shape[a], tag)] if isinstance(tag, str) else list(tag)
            index = b.emit("iota", [], shape=shape, dtype="int32", dimension=a)[0]
            stride = 1
            for n, sym in reversed(factors):
                if sym is not None:
                    pos = index if stride == 1 else b.emit("floor_divide", [index, const(stride)])[0]
                    if stride * n != shape[a]:
                        pos = b.emit("remainder", [pos, const(n)])[0]
                    size = b.emit("broadcast_in_dim", [lengths[sym]], shape=shape, broadcast_dimensions=())[0]
                    ok = b.emit("compare", [pos, size], direction="LT")[0]
                    pred = ok if pred is None else b.emit("and", [pred, ok])[0]
                stride *= n
        predicates[key] = pred
    filled = b.emit("constant", [], value=_fill(fill, x.dtype), shape=x.shape, dtype=x.dtype)[0]
    return b.emit("select", [pred, x, filled])[0]


def unpad(result: list[Any], output_map: list[tuple[str, int]], exact_outputs: list[Value],
          exact_map: list[tuple[str, int]], tags: list[Tags], real: dict[str, int]) -> list[Any]:
    """Cuts each padded output back to its real size: narrow end-padded axes; for a flattened axis, split it
    into its factors, narrow the padded ones and flatten again."""
    out = list(result)
    for i, ((kind, index), (_, exact_index)) in enumerate(zip(output_map, exact_map)):
        if kind == "int":
            out[i] = exact_index
            continue
        if kind != "value" or out[i] is None:
            continue
        tensor = out[i]
        for axis, tag in sorted(tags[index].items()):
            if isinstance(tag, str):
                tensor = tensor.narrow(axis, 0, real[tag])
            else:
                split = tensor.reshape(*tensor.shape[:axis], *[n for n, _ in tag], *tensor.shape[axis + 1:])
                for j, (_, sym) in enumerate(tag):
                    if sym is not None:
                        split = split.narrow(axis + j, 0, real[sym])
                tensor = split.reshape(*tensor.shape[:axis], -1, *tensor.shape[axis + 1:])
        want = exact_outputs[exact_index].shape
        if tuple(tensor.shape) != tuple(want):
            raise RuntimeError(f"compiled graph output {i}: unpadded to {tuple(tensor.shape)}, expected {want}")
        out[i] = tensor
    return out
