"""The sim driver's value rules for data movement, reductions, sorting, indexing and the MXU ops."""

from __future__ import annotations

import math

import numpy as np
from torchtpu.drivers.ir import Op
from torchtpu.drivers.sim import axis_index_loops, index_add_rows, scatter_steps
from torchtpu.drivers.sim.kernels import NP_DTYPES, kernel, load, store
from torchtpu.sim import mxu

# kernels taking `array=`, the chip's MXU width (from the executable)
MXU_ARRAY_KERNELS = frozenset({"dot_general", "ragged_dot"})


_BCAST_PLANS: dict[tuple, tuple] = {}


def _broadcast_plan(shape: tuple, dims: tuple, in_shape: tuple) -> tuple:
    """(transpose order or None, reshaped input shape) for broadcast_in_dim; fixed per (shape, dims, in_shape)."""
    key = (shape, dims, in_shape)
    plan = _BCAST_PLANS.get(key)
    if plan is None:
        expanded = [1] * len(shape)
        for d, od in zip(in_shape, dims):
            expanded[od] = d
        order = sorted(range(len(dims)), key=dims.__getitem__)  # stable, like np.argsort(kind="stable")
        transpose = tuple(order) if len(dims) > 1 and order != list(range(len(dims))) else None
        plan = (transpose, tuple(expanded))
        if len(_BCAST_PLANS) >= 4096:
            _BCAST_PLANS.clear()
        _BCAST_PLANS[key] = plan
    return plan


@kernel("broadcast_in_dim")
def _broadcast(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    shape = tuple(op.attr("shape"))
    transpose, expanded = _broadcast_plan(shape, tuple(op.attr("broadcast_dimensions")), x.shape)
    if transpose is not None:
        x = np.transpose(x, transpose)
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
    # np.full and one assignment: np.pad's generic path cost ~30 us a call on the small pads of region views
    padded = np.full([d + max(lo, 0) + max(hi, 0) for d, lo, hi in zip(x.shape, low, high)], value, x.dtype)
    padded[tuple(slice(max(lo, 0), max(lo, 0) + d) for d, lo in zip(x.shape, low))] = x
    if min(low, default=0) >= 0 and min(high, default=0) >= 0:
        return [padded]
    crop = tuple(slice(max(-lo, 0), padded.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(zip(low, high)))
    return [padded[crop]]


_REDUCERS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "and": np.all, "or": np.any}


def _identity(kind: str, dtype: np.dtype) -> object:
    if dtype == np.bool_:
        return kind == "min"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if kind == "max" else info.max
    return -np.inf if kind == "max" else np.inf


@kernel("reduce")
def _reduce(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = load(args[0])
    kind = op.attr("kind")
    dims = tuple(op.attr("dimensions"))
    out_t = op.outputs[0]
    if kind in ("max", "min") and 0 in [x.shape[d] for d in dims]:  # StableHLO's init value: the identity
        y = np.full(tuple(n for i, n in enumerate(x.shape) if i not in dims), _identity(kind, x.dtype), x.dtype)
    else:
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


_CHECK_ERRORS = {"IndexError": IndexError, "RuntimeError": RuntimeError}


@kernel("check_index")
def _check_index_op(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    (index,) = args
    if index.size:
        low, size = op.attr("low"), op.attr("size")
        if np.minimum.reduce(index, axis=None) < low or np.maximum.reduce(index, axis=None) >= size:
            bad = (index < low) | (index >= size)
            ignore = op.attr("ignore")
            if ignore is not None:
                bad &= index != ignore
            if bad.any():
                error = _CHECK_ERRORS[op.attr("error")]
                raise error(op.attr("message").format(int(index[bad].flat[0])))
    return [index]


@kernel("gather_axis")
def _gather_axis(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, index = args
    dim = op.attr("dimension")
    looped = axis_index_loops.gather(x, index, dim)  # None where an index is out of range: raised below
    if looped is not None:
        return [looped]
    return [np.take_along_axis(x, _check_index(index, x.shape[dim], "gather"), dim)]


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
    each = op.attr("rounding", "once") == "each" and scatter_steps.widened(x.dtype)
    if reduce == "add" and not each:  # np.add.at's bits in one loop; None where an index is out of range
        added = axis_index_loops.scatter_add(load(x), index, load(src), dim)
        if added is not None:
            return [store(added, op.outputs[0].dtype)]
    idx = _full_index(_check_index(index, x.shape[dim], "scatter"), dim)
    if each:
        return [scatter_steps.scatter_rounded(x, idx, src, reduce, op.outputs[0].dtype)]
    out = load(x).copy()
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
    added = index_add_rows.index_add(load(x), index, load(src), dim)  # np.add.at's bits, one compiled loop
    if added is not None:
        return [store(added, op.outputs[0].dtype)]
    out = np.moveaxis(load(x).copy(), dim, 0)
    np.add.at(out, index, np.moveaxis(load(src), dim, 0))
    return [store(np.moveaxis(out, 0, dim), op.outputs[0].dtype)]


def mxu_operand(x: np.ndarray) -> np.ndarray:
    """A dot's float operand as the MXU model takes it: float32, bfloat16 and int8 as they are, fp8 as bfloat16
    (exact), anything else (float16) as float32."""
    if x.dtype in (np.float32, NP_DTYPES["bfloat16"], np.int8):
        return x
    if x.dtype in (NP_DTYPES["float8_e4m3fn"], NP_DTYPES["float8_e5m2"]):
        return x.astype(NP_DTYPES["bfloat16"])  # exact: fp8 values are bf16 values, their products exact in f32
    return x.astype(np.float32)


_DOT_PLANS: dict[int, tuple] = {}
_EXACT_F64_K = 2**36  # derived: |int8 or uint8 product| <= 2**16, so K < 2**36 keeps every sum below 2**52


def dot_layout(op: Op, lhs: tuple[int, ...], rhs: tuple[int, ...]) -> tuple:
    """(lhs perm, rhs perm, (b, m, k), (b, k, n)): how a dot_general's operands of these shapes are permuted and
    reshaped into one batched matmul."""
    lb, rb = op.attr("lhs_batch"), op.attr("rhs_batch")
    lc, rc = op.attr("lhs_contract"), op.attr("rhs_contract")
    lfree = [d for d in range(len(lhs)) if d not in lb and d not in lc]
    rfree = [d for d in range(len(rhs)) if d not in rb and d not in rc]
    m = math.prod([lhs[d] for d in lfree])
    n = math.prod([rhs[d] for d in rfree])
    k = math.prod([lhs[d] for d in lc])
    b = math.prod([lhs[d] for d in lb])
    return (*lb, *lfree, *lc), (*rb, *rc, *rfree), (b, m, k), (b, k, n)


def _dot_plan(op: Op, lhs: np.ndarray, rhs: np.ndarray) -> tuple:
    """Per op and operand shapes/dtypes: (lhs perm, rhs perm, (b, m, k), (b, k, n), integer?, precision, out type)."""
    entry = _DOT_PLANS.get(id(op))
    if entry is not None and entry[0] is op and entry[1] == lhs.shape and entry[2] == rhs.shape \
            and entry[3] == lhs.dtype:
        return entry[4]
    out_t = op.outputs[0]
    integer = lhs.dtype.kind in "iub" or out_t.dtype in ("int64", "int32")
    plan = (*dot_layout(op, lhs.shape, rhs.shape), integer, op.attr("precision"), out_t)
    if len(_DOT_PLANS) >= 4096:
        _DOT_PLANS.clear()
    _DOT_PLANS[id(op)] = (op, lhs.shape, rhs.shape, lhs.dtype, plan)
    return plan


@kernel("dot_general")
def _dot_general(op: Op, args: list[np.ndarray], array: int = mxu.DEFAULT_ARRAY) -> list[np.ndarray]:
    lhs, rhs = args
    lperm, rperm, a_shape, b_shape, integer, precision, out_t = _dot_plan(op, lhs, rhs)
    a3 = lhs.transpose(lperm).reshape(a_shape)
    b3 = rhs.transpose(rperm).reshape(b_shape)
    if integer and lhs.itemsize == rhs.itemsize == 1 and a_shape[2] < _EXACT_F64_K:
        # int8/uint8: every partial sum is an integer below 2**53, so float64 BLAS (any order, FMA or not) is
        # exact and fast; the int64 result then wraps to int32 as the MXU's int32 accumulator does
        y = np.matmul(a3.astype(np.float64), b3.astype(np.float64)).astype(np.int64)
    elif integer:
        y = np.matmul(a3.astype(np.int64), b3.astype(np.int64))  # integer matmul: exact, on the VPU
    elif lhs.dtype == np.float64 or rhs.dtype == np.float64:  # float64 is exact (host numpy), never the MXU
        y = np.matmul(a3.astype(np.float64), b3.astype(np.float64))
    else:
        y = mxu.matmul(mxu_operand(a3), mxu_operand(b3), precision=precision, out_dtype=np.float32,
                       array=array)
    return [store(y.reshape(out_t.shape), out_t.dtype)]


@kernel("convolution")
def _convolution(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    f64 = any(a.dtype == np.float64 for a in args)  # float64 is exact (host numpy), never the MXU, as dot_general
    lhs, rhs = (a.astype(np.float64) if f64 else mxu_operand(a) for a in args)
    out_t = op.outputs[0]
    y = mxu.conv(lhs, rhs, window_strides=op.attr("window_strides"), padding=op.attr("padding"),
                 lhs_dilation=op.attr("lhs_dilation"), rhs_dilation=op.attr("rhs_dilation"),
                 feature_group_count=op.attr("feature_group_count"), precision=op.attr("precision"),
                 out_dtype=np.float64 if f64 else np.float32)
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


# --- linear algebra: numpy's LAPACK in the operand's precision (lu, qr, eigh and svd are lowerings,
# drivers/ir_lowerings_linalg.py) ----------------------------------------------------------------------------------

def _per_matrix(fn, x: np.ndarray, *outs_like: tuple[tuple[int, ...], np.dtype]) -> list[np.ndarray]:
    """Runs fn on the whole batch; if LAPACK rejects one matrix, per matrix with NaN for the failures."""
    try:
        res = fn(x)
        return list(res) if isinstance(res, tuple) else [res]
    except np.linalg.LinAlgError:
        batch = x.shape[:-2]
        outs = [np.full(shape, np.nan, dtype) if np.dtype(dtype).kind in "fc" else np.zeros(shape, dtype)
                for shape, dtype in outs_like]
        for idx in np.ndindex(*batch):
            try:
                res = fn(x[idx])
            except np.linalg.LinAlgError:
                continue
            for o, r in zip(outs, res if isinstance(res, tuple) else (res,)):
                o[idx] = r
        return outs


def _wide_linalg(x: np.ndarray) -> np.ndarray:
    x = load(x)
    return x if x.dtype in (np.float32, np.float64, np.complex64, np.complex128) else x.astype(np.float32)


def _partial_cholesky(a: np.ndarray) -> np.ndarray:
    """LAPACK potrf's failure point kept: where the leading minor of order k + 1 is the first not
    positive-definite, the factor of the order-k minor in the leading block and NaN everywhere else."""
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        pass
    good, bad = 0, a.shape[-1]  # leading minors are positive-definite up to some order: bisect for it
    while bad - good > 1:
        mid = (good + bad) // 2
        try:
            np.linalg.cholesky(a[:mid, :mid])
            good = mid
        except np.linalg.LinAlgError:
            bad = mid
    out = np.full(a.shape, np.nan, a.dtype)
    if good:
        out[:good, :good] = np.linalg.cholesky(a[:good, :good])
    return out


@kernel("cholesky")
def _cholesky(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = _wide_linalg(args[0])
    if not op.attr("lower"):  # potrf 'U' reads the upper triangle: U = L^H for L the factor of A^H's lower one
        x = np.conj(np.swapaxes(x, -1, -2))
    try:
        low = np.linalg.cholesky(x)
    except np.linalg.LinAlgError:
        low = np.stack([_partial_cholesky(m) for m in x.reshape(-1, *x.shape[-2:])]).reshape(x.shape)
    out = low if op.attr("lower") else np.conj(np.swapaxes(low, -1, -2))
    return [np.ascontiguousarray(out).astype(x.dtype)]


@kernel("triangular_solve")
def _triangular_solve(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    a, b = (_wide_linalg(v) for v in args)
    t = np.tril(a) if op.attr("lower") else np.triu(a)
    if op.attr("unit_diagonal"):
        n = t.shape[-1]
        t = t.copy()
        t[..., np.arange(n), np.arange(n)] = 1
    mode = op.attr("transpose_a")
    if mode != "NO_TRANSPOSE":
        t = np.swapaxes(t, -1, -2)
        if mode == "ADJOINT":
            t = np.conj(t)
    lower = bool(op.attr("lower")) != (mode != "NO_TRANSPOSE")  # which triangle op(A) keeps
    if not op.attr("left_side"):  # X op(A) = B  <=>  op(A)^T X^T = B^T
        t, b, lower = np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), not lower
    with np.errstate(all="ignore"):
        x = _substitute(t, b, lower)
    if not op.attr("left_side"):
        x = np.swapaxes(x, -1, -2)
    return [np.ascontiguousarray(x).astype(args[1].dtype if args[1].dtype.kind in "fc" else x.dtype)]


def _substitute(t: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """T X = B for a triangular T by substitution, as BLAS trsm: each unknown scaled by its diagonal entry's
    reciprocal (as optimized trsm kernels pack it; half the last-bit differences from CPU of a division), then
    taken from the rows still to solve, so a zero on the diagonal gives inf, or NaN for 0 / 0, where CPU's trsm
    does (a pivoting solve fails there)."""
    x = np.array(np.broadcast_to(b, np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:]),
                 dtype=np.result_type(t, b))
    n = t.shape[-1]
    for k in range(n) if lower else range(n - 1, -1, -1):
        x[..., k, :] = x[..., k, :] * (1 / t[..., k, k, None])
        rest = slice(k + 1, n) if lower else slice(0, k)
        x[..., rest, :] -= x[..., k, None, :] * t[..., rest, k, None]
    return x


@kernel("eig")
def _eig(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x = _wide_linalg(args[0])
    whole = NP_DTYPES[op.outputs[0].dtype]
    w, v = _per_matrix(np.linalg.eig, x, (x.shape[:-1], whole), (x.shape, whole))
    return [np.asarray(w, whole), np.asarray(v, whole)]


# registers the control-flow, paged attention and grouped matmul kernels
from torchtpu.drivers.sim import kernels_attention, kernels_control, kernels_ragged_dot  # noqa: E402,F401
