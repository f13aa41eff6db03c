"""Lowerings of sorting and selection: sort (stable), topk, kthvalue, median / nanmedian, mode, searchsorted and
bucketize. All go through the IR's `sort` (values and int64 indices along one dimension, NaN sorting last
ascending and first descending, as torch) plus gathers; searchsorted counts with comparisons."""

from __future__ import annotations

import math
from typing import Any

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym, aten_type_name

aten = torch.ops.aten


def sort_dim(x: Sym, dim: int, descending: bool = False) -> tuple[Sym, Sym]:
    if x.ndim == 0:
        return x, P.full(0, (), torch.int64)
    d = P.canon_dim(dim, x.ndim)
    if x.shape[d] <= 1:
        return x, P.full(0, x.shape, torch.int64)
    values, indices = P.emit("sort", [x], dimension=d, descending=bool(descending), stable=True)
    return values, indices


@lower(aten.sort.default)
def sort(self: Sym, dim: int = -1, descending: bool = False) -> tuple[Sym, Sym]:
    return sort_dim(self, dim, descending)


@lower(aten.sort.stable)
def sort_stable(self: Sym, *, stable: bool | None = None, dim: int = -1, descending: bool = False
                ) -> tuple[Sym, Sym]:
    return sort_dim(self, dim, descending)


def _take(x: Sym, d: int, start: int, stop: int) -> Sym:
    return P.slice_dim(x, d, start, stop)


@lower(aten.topk.default)
def topk(self: Sym, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple[Sym, Sym]:  # noqa: A002
    if self.ndim == 0:
        if not 0 <= k <= 1:
            raise RuntimeError("selected index k out of range")
        return self, P.full(0, (), torch.int64)
    d = P.canon_dim(dim, self.ndim)
    if not 0 <= k <= self.shape[d]:
        raise RuntimeError("selected index k out of range")
    values, indices = sort_dim(self, d, descending=largest)
    return _take(values, d, 0, k), _take(indices, d, 0, k)


def _select(values: Sym, indices: Sym, d: int, pos: Sym | int, keepdim: bool) -> tuple[Sym, Sym]:
    """The element at position `pos` (a static int or an int64 tensor of the reduced shape) along d."""
    if isinstance(pos, int):
        v, i = _take(values, d, pos, pos + 1), _take(indices, d, pos, pos + 1)
    else:
        idx = P.reshape(pos, tuple(1 if j == d else n for j, n in enumerate(values.shape)))
        v = P.emit1("gather_axis", [values, idx], dimension=d)
        i = P.emit1("gather_axis", [indices, idx], dimension=d)
    if not keepdim:
        shape = tuple(n for j, n in enumerate(values.shape) if j != d)
        v, i = P.reshape(v, shape), P.reshape(i, shape)
    return v, i


@lower(aten.kthvalue.default)
def kthvalue(self: Sym, k: int, dim: int = -1, keepdim: bool = False) -> tuple[Sym, Sym]:
    d = P.canon_dim(dim, self.ndim)  # kthvalue_out_impl_cpu: the dim, an empty reduction, then k (RuntimeError)
    if self.ndim and self.shape[d] == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= (self.shape[d] if self.ndim else 1):
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if self.ndim == 0:
        return self, P.full(0, (), torch.int64)
    values, indices = sort_dim(self, d)
    return _select(values, indices, d, k - 1, keepdim)


def _median(x: Sym, d: int, keepdim: bool, ignore_nan: bool) -> tuple[Sym, Sym]:
    n = x.shape[d]
    if n == 0:
        raise IndexError("median() cannot compute median for a dimension of size zero")
    values, indices = sort_dim(x, d)
    if not x.dtype.is_floating_point:
        return _select(values, indices, d, (n - 1) // 2, keepdim)
    nans = P.reduce(P.convert(P.compare("NE", x, x), torch.int64), "sum", (d,))
    if ignore_nan:  # the lower median of the non-NaN values (NaN only when the whole row is NaN)
        valid = P.full(n, nans.shape, torch.int64) - nans
        pos = P.emit1("floor_divide", [P.emit1("maximum", [valid - 1, P.zeros_like(valid)]),
                                       P.full(2, nans.shape, torch.int64)])
    else:  # NaN propagates: the first NaN (sorted last) is picked
        pos = P.where(P.compare("GT", nans, 0), P.full(n, nans.shape, torch.int64) - nans,
                      P.full((n - 1) // 2, nans.shape, torch.int64))
    return _select(values, indices, d, pos, keepdim)


def _empty_median(dtype: torch.dtype) -> Sym:
    """CPU's result for an empty input: NaN converted to the dtype (x86's conversion: the "integer indefinite"
    INT_MIN for int32 and int64, its low bits, 0, for the narrower integer types)."""
    if dtype.is_floating_point or dtype.is_complex:
        return P.full(float("nan"), (), dtype)
    return P.full({torch.int32: -2**31, torch.int64: -2**63}.get(dtype, 0), (), dtype)


@lower(aten.median.default)
def median(self: Sym) -> Sym:
    if self.numel() == 0:
        return _empty_median(self.dtype)
    return _median(P.reshape(self, (self.numel(),)), 0, False, False)[0]


@lower(aten.nanmedian.default)
def nanmedian(self: Sym) -> Sym:
    if self.numel() == 0:
        return _empty_median(self.dtype)
    return _median(P.reshape(self, (self.numel(),)), 0, False, True)[0]


def _median_dim(self: Sym, dim: int, keepdim: bool, ignore_nan: bool) -> tuple[Sym, Sym]:
    if self.ndim == 0:
        return self, P.full(0, (), torch.int64)
    return _median(self, P.canon_dim(dim, self.ndim), keepdim, ignore_nan)


@lower(aten.median.dim)
def median_dim(self: Sym, dim: int, keepdim: bool = False) -> tuple[Sym, Sym]:
    return _median_dim(self, dim, keepdim, False)


@lower(aten.nanmedian.dim)
def nanmedian_dim(self: Sym, dim: int, keepdim: bool = False) -> tuple[Sym, Sym]:
    return _median_dim(self, dim, keepdim, True)


@lower(aten.mode.default)
def mode(self: Sym, dim: int = -1, keepdim: bool = False) -> tuple[Sym, Sym]:
    """The most frequent value (the smallest among equally frequent ones) and the index of its last occurrence,
    as ATen's CPU kernel: counts from an (n, n) equality table along the dimension."""
    if self.ndim == 0:
        return self, P.full(0, (), torch.int64)
    d = P.canon_dim(dim, self.ndim)
    if self.shape[d] == 0:  # zero_numel_check_dims (tpu computed: fuzz seeds 2, 3)
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    if self.numel() == 0:  # another dim empty: ATen returns the empty result before its dtype dispatch (complex too)
        shape = tuple(1 if i == d else n for i, n in enumerate(self.shape) if keepdim or i != d)
        return P.full(0, shape, self.dtype), P.full(0, shape, torch.int64)
    x = P.transpose(self, [i for i in range(self.ndim) if i != d] + [d])
    n = x.shape[-1]
    rows = x.shape[:-1]
    a = P.broadcast_to(P.reshape(x, (*rows, n, 1)), (*rows, n, n))
    b = P.broadcast_to(P.reshape(x, (*rows, 1, n)), (*rows, n, n))
    eq = P.compare("EQ", a, b)
    if self.dtype.is_floating_point:  # NaNs count as equal to each other
        eq = P.emit1("or", [eq, P.emit1("and", [P.compare("NE", a, a), P.compare("NE", b, b)])])
    counts = P.reduce(P.convert(eq, torch.int64), "sum", (x.ndim,))  # (*rows, n)
    best = P.reduce(counts, "max", (x.ndim - 1,), keepdim=True)
    is_best = P.compare("EQ", counts, P.broadcast_to(best, counts.shape))
    if self.dtype.is_floating_point:
        big = P.full(float("inf"), x.shape, x.dtype)
    elif self.dtype == torch.bool:
        big = P.full(float("inf"), x.shape, torch.float32)
    else:  # keyed in its own dtype: float32 rounds large integers (int64 extremes) together
        big = P.full(torch.iinfo(self.dtype).max, x.shape, x.dtype)
    keyed = P.where(is_best, P.convert(x, big.dtype), big)
    value = P.reduce(keyed, "min", (x.ndim - 1,), keepdim=True)
    if self.dtype.is_floating_point:  # a NaN mode: min() would not see it
        nan_best = P.reduce(P.emit1("and", [is_best, P.compare("NE", x, x)]), "or", (x.ndim - 1,), keepdim=True)
        value = P.where(P.emit1("and", [nan_best, P.compare("EQ", value, float("inf"))]),
                        P.full(float("nan"), value.shape, value.dtype), value)
        hit = P.emit1("or", [P.compare("EQ", x, P.broadcast_to(value, x.shape)),
                             P.emit1("and", [P.compare("NE", x, x),
                                             P.broadcast_to(P.compare("NE", value, value), x.shape)])])
    else:
        hit = P.compare("EQ", P.convert(x, big.dtype), P.broadcast_to(value, x.shape))
    pos = P.reduce(P.where(hit, P.iota(x.shape, x.ndim - 1), P.full(-1, x.shape, torch.int64)), "max",
                   (x.ndim - 1,))
    values = P.convert(P.reshape(value, rows), self.dtype)
    if keepdim:
        shape = tuple(1 if i == d else s for i, s in enumerate(self.shape))
        return P.reshape(values, shape), P.reshape(pos, shape)
    return values, pos


def _search(boundaries: Sym, values: Sym, right: bool, out_int32: bool, sorter: Sym | None = None) -> Sym:
    """ATen's cus_lower_bound / cus_upper_bound (native/cpu/BucketizationUtils.h) along the last dim, unrolled:
    start, end = 0, m; while start < end: mid = start + (end - start) // 2, start = mid + 1 where not
    (boundary[mid] >= value) (> for right), else end = mid. The same comparisons as CPU, so unsorted
    boundaries and NaNs give CPU's answer too, not only sorted ones."""
    if sorter is not None:
        boundaries = P.emit1("gather_axis", [boundaries, P.convert(sorter, torch.int64)],
                             dimension=boundaries.ndim - 1)
    compute, common = P.result_dtype(boundaries, values)
    if (common.is_complex or common == torch.bool) and math.prod(values.shape) > 0:
        # the kernel's dispatch (all types but bool and complex), after the empty input's early return
        raise NotImplementedError(f"\"searchsorted_out_cpu\" not implemented for '{aten_type_name(common)}'")
    b, v = P.convert(boundaries, compute), P.convert(values, compute)
    m = b.shape[-1]
    out = torch.int32 if out_int32 else torch.int64
    start = P.full(0, v.shape, torch.int64)
    if m == 0:
        return P.convert(start, out)
    end = P.full(m, v.shape, torch.int64)
    flat = b.ndim == 1
    for _ in range(m.bit_length()):  # the interval [start, end) of at most m + 1 positions halves each step
        open_ = P.compare("LT", start, end)
        mid = start + P.emit1("shift_right_arithmetic", [end - start, P.full(1, v.shape, torch.int64)])
        safe = P.where(open_, mid, P.zeros_like(mid))
        if flat:
            mid_val = P.reshape(P.emit1("index_select", [b, P.reshape(safe, (-1,))], dimension=0), v.shape)
        else:
            mid_val = P.emit1("gather_axis", [b, safe], dimension=b.ndim - 1)
        go_right = P.emit1("not", [P.compare("GT" if right else "GE", mid_val, v)])
        start = P.where(P.emit1("and", [open_, go_right]), mid + 1, start)
        end = P.where(P.emit1("and", [open_, P.emit1("not", [go_right])]), mid, end)
    return P.convert(start, out)


def _check_search(boundaries: Sym, values: Any, out_int32: bool, right: bool, side: str | None,
                  sorter: Sym | None) -> None:
    """searchsorted_pre_check (native/BucketizationUtils.h), in ATen's order and words; the sorter's value range
    is not checked (it would need the data)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
    if sorter is not None:
        if tuple(sorter.shape) != tuple(boundaries.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {list(boundaries.shape)}and got sorter tensor {list(sorter.shape)}")
        if sorter.dtype != torch.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{aten_type_name(sorter.dtype)}")
    vshape = tuple(values.shape) if isinstance(values, Sym) else ()
    vnumel = 1
    for d in vshape:
        vnumel *= d
    if not (len(vshape) > 0 or (vnumel == 1 and boundaries.ndim == 1)):
        raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension "
                           f"is 1, but we got boundaries tensor dim({boundaries.ndim}) and input value's "
                           f"dim({len(vshape)}) numel({vnumel})")
    if boundaries.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if boundaries.ndim != 1 and not (boundaries.ndim == len(vshape)
                                     and tuple(boundaries.shape[:-1]) == vshape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(boundaries.shape)} and input value tensor {list(vshape)}")


@lower(aten.searchsorted.Tensor)
def searchsorted(sorted_sequence: Sym, self: Sym, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Sym | None = None) -> Sym:
    _check_search(sorted_sequence, self, out_int32, right, side, sorter)
    return _search(sorted_sequence, self, right or side == "right", out_int32, sorter)


@lower(aten.searchsorted.Scalar)
def searchsorted_scalar(sorted_sequence: Sym, self: Any, *, out_int32: bool = False, right: bool = False,
                        side: str | None = None, sorter: Sym | None = None) -> Sym:
    _check_search(sorted_sequence, self, out_int32, right, side, sorter)
    _, dtype = P.result_dtype(sorted_sequence, self)
    value = P.full(self, (), dtype) if not isinstance(self, Sym) else self
    return _search(sorted_sequence, value, right or side == "right", out_int32, sorter)


@lower(aten.bucketize.Tensor)
def bucketize(self: Sym, boundaries: Sym, *, out_int32: bool = False, right: bool = False) -> Sym:
    return _search(boundaries, self, right, out_int32)


@lower(aten.bucketize.Scalar)
def bucketize_scalar(self: Any, boundaries: Sym, *, out_int32: bool = False, right: bool = False) -> Sym:
    _, dtype = P.result_dtype(boundaries, self)
    return _search(boundaries, P.full(self, (), dtype), right, out_int32)
