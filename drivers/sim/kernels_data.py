"""The sim driver's value rules for data movement, reductions, sorting, indexing and the MXU ops."""

from __future__ import annotations

import numpy as np
from torchtpu.drivers.ir import Op
from torchtpu.drivers.sim.kernels import NP_DTYPES, kernel, load, store
from torchtpu.sim import mxu

MXU_ARRAY = 128  # the simulated chip's systolic array width; SimDriver sets it (256 on v6e/v7x)


@kernel("broadcast_in_dim")
def _broadcast(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    shape = op.attr("shape")
    dims = op.attr("broadcast_dimensions")
    expanded = [1] * len(shape)
    for d, od in zip(x.shape, dims):
        expanded[od] = d
    order = np.argsort(dims, kind="stable")
    x = np.transpose(x, order) if len(dims) > 1 and list(order) != list(range(len(dims))) else x
    return [np.broadcast_to(x.reshape(expanded), shape)]


@kernel("reshape")
def _reshape(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    return [np.reshape(args[0], op.attr("shape"))]


@kernel("transpose")
def _transpose(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    return [np.transpose(args[0], op.attr("permutation"))]


@kernel("slice")
def _slice(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    index = tuple(slice(lo, hi, s) for lo, hi, s in zip(op.attr("start"), op.attr("limit"), op.attr("strides")))
    return [args[0][index]]


@kernel("reverse")
def _reverse(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    return [np.flip(args[0], op.attr("dimensions"))]


@kernel("concatenate")
def _concatenate(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    return [np.concatenate(args, axis=op.attr("dimension"))]


@kernel("pad")
def _pad(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    value = store(np.asarray(op.attr("value"), np.float32 if x.dtype.kind in "fV" else x.dtype),
                  op.outputs[0].dtype)
    low, high, interior = op.attr("low"), op.attr("high"), op.attr("interior")
    if any(interior):
        spread = np.full([d + max(d - 1, 0) * it for d, it in zip(x.shape, interior)], value, x.dtype)
        spread[tuple(slice(None, None, it + 1) for it in interior)] = x
        x = spread
    x = np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)], constant_values=value)
    crop = tuple(slice(max(-lo, 0), x.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(zip(low, high)))
    return [x[crop]]


_REDUCERS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "and": np.all, "or": np.any}


@kernel("reduce")
def _reduce(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = load(args[0])
    kind = op.attr("kind")
    dims = tuple(op.attr("dimensions"))
    out_t = op.outputs[0]
    if kind in ("max", "min") and 0 in [x.shape[d] for d in dims]:
        raise ValueError(f"reduce {kind} over an empty dimension has no identity")
    with np.errstate(all="ignore"):
        y = _REDUCERS[kind](x, axis=dims)
    return [store(np.asarray(y), out_t.dtype)]


@kernel("argreduce")
def _argreduce(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = load(args[0])
    dim = op.attr("dimension")
    if x.shape[dim] == 0:
        raise IndexError("argmax/argmin of an empty dimension")
    fn = np.argmax if op.attr("kind") == "max" else np.argmin
    return [np.asarray(fn(x, axis=dim), dtype=np.int64)]


_CUMULATIVE = {"sum": np.cumsum, "prod": np.cumprod, "max": np.maximum.accumulate, "min": np.minimum.accumulate}


@kernel("cumulative")
def _cumulative(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = load(args[0])
    kind = op.attr("kind")
    dim = op.attr("dimension")
    fn = _CUMULATIVE[kind]
    with np.errstate(all="ignore"):
        if kind in ("max", "min") and x.dtype.kind == "f":
            # NaN propagates forward, as in torch.cummax
            nan_seen = np.logical_or.accumulate(np.isnan(x), axis=dim)
            y = np.where(nan_seen, np.float32(np.nan), fn(x, axis=dim))
        else:
            y = fn(x, axis=dim, dtype=x.dtype) if kind in ("sum", "prod") else fn(x, axis=dim)
    return [store(np.asarray(y), op.outputs[0].dtype)]


@kernel("sort")
def _sort(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    xf = load(x)
    dim = op.attr("dimension")
    if op.attr("descending"):
        flipped = np.flip(xf, dim)
        order = np.flip(np.argsort(flipped, axis=dim, kind="stable"), dim)
        order = x.shape[dim] - 1 - order
    else:
        order = np.argsort(xf, axis=dim, kind="stable")
    return [np.take_along_axis(x, order, dim), order.astype(np.int64)]


def _check_index(index: np.ndarray, size: int, what: str) -> np.ndarray:
    if index.size and (index.min() < -size or index.max() >= size):
        bad = index[(index < -size) | (index >= size)].flat[0]
        raise IndexError(f"{what}: index {bad} is out of bounds for dimension with size {size}")
    return np.where(index < 0, index + size, index)


@kernel("gather_axis")
def _gather_axis(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, index = args
    dim = op.attr("dimension")
    index = _check_index(index, x.shape[dim], "gather")
    return [np.take_along_axis(x, index, dim)]


@kernel("index_select")
def _index_select(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, index = args
    dim = op.attr("dimension")
    index = _check_index(index, x.shape[dim], "index_select")
    return [np.take(x, index, axis=dim)]


def _full_index(index: np.ndarray, dim: int) -> tuple[np.ndarray, ...]:
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


_UFUNC_AT = {"add": np.add, "multiply": np.multiply, "amax": np.maximum, "amin": np.minimum}


@kernel("scatter_axis")
def _scatter_axis(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, index, src = args
    dim = op.attr("dimension")
    reduce = op.attr("reduce")
    index = _check_index(index, x.shape[dim], "scatter")
    out = load(x).copy()
    idx = _full_index(index, dim)
    if reduce == "replace":
        out[idx] = load(src)
    else:
        _UFUNC_AT[reduce].at(out, idx, load(src))
    return [store(out, op.outputs[0].dtype)]


@kernel("index_add")
def _index_add(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, index, src = args
    dim = op.attr("dimension")
    index = _check_index(index, x.shape[dim], "index_add")
    out = np.moveaxis(load(x).copy(), dim, 0)
    np.add.at(out, index, np.moveaxis(load(src), dim, 0))
    return [store(np.moveaxis(out, 0, dim), op.outputs[0].dtype)]


def _mxu_dtype(x: np.ndarray) -> np.ndarray:
    if x.dtype in (np.float32, NP_DTYPES["bfloat16"], np.int8):
        return x
    return x.astype(np.float32)


@kernel("dot_general")
def _dot_general(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    lhs, rhs = args
    lb, rb = op.attr("lhs_batch"), op.attr("rhs_batch")
    lc, rc = op.attr("lhs_contract"), op.attr("rhs_contract")
    lfree = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    batch = [lhs.shape[d] for d in lb]
    m = int(np.prod([lhs.shape[d] for d in lfree], dtype=np.int64))
    n = int(np.prod([rhs.shape[d] for d in rfree], dtype=np.int64))
    k = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    b = int(np.prod(batch, dtype=np.int64))
    a3 = np.transpose(lhs, (*lb, *lfree, *lc)).reshape(b, m, k)
    b3 = np.transpose(rhs, (*rb, *rc, *rfree)).reshape(b, k, n)
    out_t = op.outputs[0]
    if lhs.dtype.kind in "iub" or out_t.dtype in ("int64", "int32"):
        y = np.matmul(a3.astype(np.int64), b3.astype(np.int64))  # integer matmul: exact, on the VPU
    else:
        y = mxu.matmul(_mxu_dtype(a3), _mxu_dtype(b3), precision=op.attr("precision"), out_dtype=np.float32,
                       array=MXU_ARRAY)
    return [store(y.reshape(out_t.shape), out_t.dtype)]


@kernel("convolution")
def _convolution(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    lhs, rhs = (_mxu_dtype(a) for a in args)
    out_t = op.outputs[0]
    y = mxu.conv(lhs, rhs, window_strides=op.attr("window_strides"), padding=op.attr("padding"),
                 lhs_dilation=op.attr("lhs_dilation"), rhs_dilation=op.attr("rhs_dilation"),
                 feature_group_count=op.attr("feature_group_count"), precision=op.attr("precision"),
                 out_dtype=np.float32)
    return [store(y, out_t.dtype)]


@kernel("reduce_window")
def _reduce_window(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = load(args[0])
    kind = op.attr("kind")
    pads = op.attr("padding")
    padded = np.pad(x, pads, constant_values=op.attr("init"))
    windows = np.lib.stride_tricks.sliding_window_view(padded, op.attr("window"))
    windows = windows[tuple(slice(None, None, s) for s in op.attr("strides"))]
    axes = tuple(range(x.ndim, 2 * x.ndim))
    y = {"sum": np.sum, "max": np.max, "min": np.min}[kind](windows, axis=axes)
    return [store(np.asarray(y), op.outputs[0].dtype)]
