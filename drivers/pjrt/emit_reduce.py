"""Reduction emitters: reduce, argreduce, cumulative scans, sort and reduce_window."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from torchtpu.drivers.ir import FLOAT_DTYPES, Op
from torchtpu.drivers.pjrt.emit_core import NP_DTYPES, Emitter, V, _ints, _out, emits


# -- reductions --
def _identity(kind: str, dtype: str) -> object:
    if kind in ("sum", "or"):
        return 0
    if kind in ("prod", "and"):
        return 1
    if dtype in FLOAT_DTYPES:
        return -math.inf if kind == "max" else math.inf
    if dtype == "bool":
        return kind == "min"
    info = np.iinfo(NP_DTYPES[dtype])
    return info.min if kind == "max" else info.max


_COMBINE = {"sum": "stablehlo.add", "prod": "stablehlo.multiply", "max": "stablehlo.maximum",
            "min": "stablehlo.minimum", "and": "stablehlo.and", "or": "stablehlo.or"}
_BOOL_KIND = {"sum": "or", "max": "or", "or": "or", "prod": "and", "min": "and", "and": "and"}


def _combiner(e: Emitter, kind: str) -> Callable[[list[V]], list[V]]:
    return lambda a: [e.binary(_COMBINE[kind], a[0], a[1])]


@emits("reduce")
def _emit_reduce(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    kind = op.attr("kind")
    dims = list(op.attr("dimensions"))
    shape, dtype = _out(op)
    if kind in ("and", "or") and x.dtype != "bool":
        x = e.convert(x, "bool")
    x = e.widen(x)
    if x.dtype == "bool":
        kind = _BOOL_KIND[kind]
    if not dims:
        return [e.convert(x, dtype)]
    (y,) = e.reduce([x], [e.const(_identity(kind, x.dtype), (), x.dtype)], dims, _combiner(e, kind))
    return [e.convert(y, dtype)]


@emits("argreduce")
def _emit_argreduce(e: Emitter, op: Op, args: list[V]) -> list[V]:
    """The first index of the max (min); NaN counts as the largest (smallest) value, as numpy's argmax does."""
    (x,) = args
    dim = op.attr("dimension")
    better = "GT" if op.attr("kind") == "max" else "LT"
    if x.shape[dim] == 0:
        e.check("IndexError", "argmax/argmin of an empty dimension", e.const(True, (), "bool"))
    x = e.widen(x)
    idx = e.iota(x.shape, dim)
    is_float = x.dtype in FLOAT_DTYPES

    def body(a: list[V]) -> list[V]:
        va, vb, ia, ib = a[0], a[2], a[1], a[3]
        if is_float:
            nan_a, nan_b = e.compare("NE", va, va), e.compare("NE", vb, vb)
            both_num = e.binary("stablehlo.and", e.unary("stablehlo.not", nan_a), e.unary("stablehlo.not", nan_b))
            a_better = e.binary("stablehlo.or", e.binary("stablehlo.and", nan_a, e.unary("stablehlo.not", nan_b)),
                                e.binary("stablehlo.and", both_num, e.compare(better, va, vb)))
            tie = e.binary("stablehlo.or", e.binary("stablehlo.and", nan_a, nan_b),
                           e.binary("stablehlo.and", both_num, e.compare("EQ", va, vb)))
        else:
            a_better, tie = e.compare(better, va, vb), e.compare("EQ", va, vb)
        take_a = e.binary("stablehlo.or", a_better, e.binary("stablehlo.and", tie, e.compare("LT", ia, ib)))
        return [e.select(take_a, va, vb), e.select(take_a, ia, ib)]

    init_v = e.const(_identity("max" if better == "GT" else "min", x.dtype), (), x.dtype)
    init_i = e.const(np.iinfo(np.int64).max, (), "int64")
    region = e.region([x.dtype, "int64"] * 2, body)  # block arguments: (value_a, index_a, value_b, index_b)
    out_shape = [d for i, d in enumerate(x.shape) if i != dim]
    _, index = e.op_multi("stablehlo.reduce", [x, idx, init_v, init_i], [(out_shape, x.dtype), (out_shape, "int64")],
                          f"dimensions = {_ints([dim])}", region)
    return [index]


@emits("cumulative")
def _emit_cumulative(e: Emitter, op: Op, args: list[V]) -> list[V]:
    """An inclusive scan by doubling (Hillis-Steele): log2(n) shifted combines, each a pad and one op."""
    (x,) = args
    kind = op.attr("kind")
    dim = op.attr("dimension")
    shape, dtype = _out(op)
    y = e.widen(x)
    if y.dtype == "bool":
        kind = _BOOL_KIND[kind]
    n = y.shape[dim]
    ident = e.const(_identity(kind, y.dtype), (), y.dtype)
    k = 1
    while k < n:
        low = [0] * len(shape)
        high = [0] * len(shape)
        low[dim], high[dim] = k, -k
        shifted = e.pad(y, ident, low, high)
        y = e.binary(_COMBINE[kind], y, shifted)
        k *= 2
    return [e.convert(y, dtype)]


@emits("sort")
def _emit_sort(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    dim = op.attr("dimension")
    desc = bool(op.attr("descending"))
    idx = e.iota(x.shape, dim)
    is_float = x.dtype in FLOAT_DTYPES

    def body(a: list[V]) -> list[V]:
        va, vb = a[0], a[1]
        if not is_float:
            return [e.compare("GT" if desc else "LT", va, vb)]
        nan_a, nan_b = e.compare("NE", va, va), e.compare("NE", vb, vb)
        if desc:  # NaN first, then larger values
            return [e.binary("stablehlo.or", e.binary("stablehlo.and", nan_a, e.unary("stablehlo.not", nan_b)),
                             e.compare("GT", va, vb))]
        return [e.binary("stablehlo.or", e.binary("stablehlo.and", e.unary("stablehlo.not", nan_a), nan_b),
                         e.compare("LT", va, vb))]

    region = e.region([x.dtype, x.dtype, "int64", "int64"], body)
    values, index = e.op_multi("stablehlo.sort", [x, idx], [(x.shape, x.dtype), (x.shape, "int64")],
                               f"dimension = {dim} : i64, is_stable = true", region)
    return [values, index]


@emits("reduce_window")
def _emit_reduce_window(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    kind = op.attr("kind")
    shape, dtype = _out(op)
    xw = e.widen(x)
    pads = op.attr("padding")
    if any(lo or hi for lo, hi in pads):  # the sim pads with `init` and reduces over it, padding included
        xw = e.pad(xw, e.const(op.attr("init"), (), xw.dtype), [p[0] for p in pads], [p[1] for p in pads])
    ident = e.const(_identity(kind, xw.dtype), (), xw.dtype)
    region = e.region([xw.dtype, xw.dtype], _combiner(e, kind))
    y = e.op("stablehlo.reduce_window", [xw, ident], shape, xw.dtype,
             f"window_dimensions = {_ints(op.attr('window'))}, window_strides = {_ints(op.attr('strides'))}", region)
    return [e.convert(y, dtype)]
