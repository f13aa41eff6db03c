"""Data-movement and indexing emitters: broadcast, reshape, transpose, slice, reverse, concatenate, pad,
gather and scatter."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from torchtpu.drivers.ir import Op
from torchtpu.drivers.pjrt.emit_core import Emitter, V, _ints, _list, _out, emits, numel
from torchtpu.drivers.pjrt.emit_reduce import _BOOL_KIND, _combiner


# -- data movement --
@emits("broadcast_in_dim")
def _emit_broadcast(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    dims = list(op.attr("broadcast_dimensions"))
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = e.transpose(x, order)  # XLA wants increasing broadcast dimensions; the IR allows any order
    return [e.broadcast(x, op.attr("shape"), sorted(dims))]


@emits("reshape")
def _emit_reshape(e: Emitter, op: Op, args: list[V]) -> list[V]:
    return [e.reshape(args[0], op.attr("shape"))]


@emits("transpose")
def _emit_transpose(e: Emitter, op: Op, args: list[V]) -> list[V]:
    return [e.transpose(args[0], op.attr("permutation"))]


@emits("slice")
def _emit_slice(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    shape, dtype = _out(op)
    start = [min(max(s, 0), d) for s, d in zip(op.attr("start"), x.shape)]
    limit = [max(min(hi, d), s) for hi, s, d in zip(op.attr("limit"), start, x.shape)]
    return [e.op("stablehlo.slice", [x], shape, dtype, f"start_indices = {_ints(start)}, limit_indices = "
                 f"{_ints(limit)}, strides = {_ints(op.attr('strides'))}")]


@emits("reverse")
def _emit_reverse(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    dims = [d for d in op.attr("dimensions")]
    if not dims:
        return [x]
    return [e.op("stablehlo.reverse", [x], x.shape, x.dtype, f"dimensions = {_ints(dims)}")]


@emits("concatenate")
def _emit_concatenate(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    if len(args) == 1:
        return [args[0]]
    return [e.op("stablehlo.concatenate", args, shape, dtype, f"dimension = {op.attr('dimension')} : i64")]


@emits("pad")
def _emit_pad(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    value = e.const(op.attr("value"), (), x.dtype)
    return [e.pad(x, value, op.attr("low"), op.attr("high"), op.attr("interior"))]


# -- indexing --
def _wrap_index(e: Emitter, index: V, size: int, what: str = "index") -> V:
    """Negative indices count from the end; out-of-range ones are a checked IndexError (XLA would clamp)."""
    index = e.convert(index, "int64")
    if e.checking and numel(index.shape):
        bad = e.binary("stablehlo.or", e.compare("LT", index, e.like(-size, index)),
                       e.compare("GE", index, e.like(size, index)))
        detail = e.select(bad, index, e.like(np.iinfo(np.int64).min, index))
        e.check("IndexError", f"{what}: index {{}} is out of bounds for dimension with size {size}", bad, detail)
    neg = e.compare("LT", index, e.like(0, index))
    return e.select(neg, e.binary("stablehlo.add", index, e.like(size, index)), index)


@emits("check_index")
def _emit_check_index(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (index,) = args
    if e.checking and numel(index.shape):
        wide = e.convert(index, "int64")
        bad = e.binary("stablehlo.or", e.compare("LT", wide, e.like(op.attr("low"), wide)),
                       e.compare("GE", wide, e.like(op.attr("size"), wide)))
        if op.attr("ignore") is not None:
            bad = e.binary("stablehlo.and", bad, e.compare("NE", wide, e.like(op.attr("ignore"), wide)))
        detail = e.select(bad, wide, e.like(np.iinfo(np.int64).min, wide))
        e.check(op.attr("error"), op.attr("message"), bad, detail)
    return [index]


def _full_indices(e: Emitter, index: V, dim: int) -> V:
    """For take_along_axis-style ops: [..., r] coordinates whose `dim` component is `index`."""
    r = len(index.shape)
    col = (*index.shape, 1)
    parts = [e.reshape(index, col) if d == dim else e.iota(col, d) for d in range(r)]
    if r == 1:
        return parts[0]
    return e.op("stablehlo.concatenate", parts, (*index.shape, r), "int64", f"dimension = {r} : i64")


def _gather(e: Emitter, x: V, indices: V, out_shape: Sequence[int], offset_dims: Sequence[int],
            collapsed: Sequence[int], start_map: Sequence[int], index_vector_dim: int,
            slice_sizes: Sequence[int]) -> V:
    dn = (f"#stablehlo.gather<offset_dims = {_list(offset_dims)}, collapsed_slice_dims = {_list(collapsed)}, "
          f"start_index_map = {_list(start_map)}, index_vector_dim = {index_vector_dim}>")
    return e.op("stablehlo.gather", [x, indices], out_shape, x.dtype,
                f"dimension_numbers = {dn}, indices_are_sorted = false, slice_sizes = {_ints(slice_sizes)}")


@emits("gather_axis")
def _emit_gather_axis(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x, index = args
    dim = op.attr("dimension")
    r = len(x.shape)
    if 0 in x.shape or 0 in index.shape:  # nothing to read (XLA rejects slices of an empty operand)
        if numel(index.shape) and x.shape[dim] == 0:
            _wrap_index(e, index, 0, "gather")
        return [e.const(0, index.shape, x.dtype)]
    coords = _full_indices(e, _wrap_index(e, index, x.shape[dim], "gather"), dim)
    return [_gather(e, x, coords, index.shape, [], list(range(r)), list(range(r)), r, [1] * r)]


@emits("index_select")
def _emit_index_select(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x, index = args
    dim = op.attr("dimension")
    shape, _ = _out(op)
    r = len(x.shape)
    if 0 in x.shape or 0 in shape:
        if numel(index.shape) and x.shape[dim] == 0:
            _wrap_index(e, index, 0, "index_select")
        return [e.const(0, shape, x.dtype)]
    coords = e.reshape(_wrap_index(e, index, x.shape[dim], "index_select"), (index.shape[0], 1))
    sizes = [1 if i == dim else d for i, d in enumerate(x.shape)]
    return [_gather(e, x, coords, shape, [i for i in range(r) if i != dim], [dim], [dim], 1, sizes)]


_SCATTER_KIND = {"add": "sum", "multiply": "prod", "amax": "max", "amin": "min"}


def _scatter(e: Emitter, x: V, indices: V, updates: V, reduce: str, window_dims: Sequence[int],
             inserted: Sequence[int], to_operand: Sequence[int], index_vector_dim: int) -> V:
    if reduce == "replace":
        region = e.region([x.dtype, x.dtype], lambda a: [a[1]])
    else:
        kind = _SCATTER_KIND[reduce]
        if x.dtype == "bool":
            kind = _BOOL_KIND[kind]
        region = e.region([x.dtype, x.dtype], _combiner(e, kind))
    dn = (f"#stablehlo.scatter<update_window_dims = {_list(window_dims)}, inserted_window_dims = {_list(inserted)}, "
          f"scatter_dims_to_operand_dims = {_list(to_operand)}, index_vector_dim = {index_vector_dim}>")
    return e.op("stablehlo.scatter", [x, indices, updates], x.shape, x.dtype,
                f"indices_are_sorted = false, scatter_dimension_numbers = {dn}, unique_indices = false", region)


@emits("scatter_axis")
def _emit_scatter_axis(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x, index, src = args
    dim = op.attr("dimension")
    r = len(x.shape)
    if 0 in x.shape or 0 in index.shape:
        return [x]
    # rounding "each": the combiner runs in the storage dtype, so every step rounds (CPU's index_reduce)
    xw, sw = (x, src) if op.attr("rounding", "once") == "each" else (e.widen(x), e.widen(src))
    coords = _full_indices(e, _wrap_index(e, index, x.shape[dim], "scatter"), dim)
    y = _scatter(e, xw, coords, sw, op.attr("reduce"), [], list(range(r)), list(range(r)), r)
    return [e.convert(y, x.dtype)]


@emits("index_add")
def _emit_index_add(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x, index, src = args
    dim = op.attr("dimension")
    r = len(x.shape)
    if 0 in x.shape or 0 in src.shape:
        return [x]
    xw, sw = e.widen(x), e.widen(src)
    coords = e.reshape(_wrap_index(e, index, x.shape[dim], "index_add"), (index.shape[0], 1))
    y = _scatter(e, xw, coords, sw, "add", [i for i in range(r) if i != dim], [dim], [dim], 1)
    return [e.convert(y, x.dtype)]
