"""Lowerings of sorting and selection: sort (stable), topk, kthvalue, median / nanmedian, mode, searchsorted and
bucketize. All go through the IR's `sort` (values and int64 indices along one dimension, NaN sorting last
ascending and first descending, as torch) plus gathers; searchsorted counts with comparisons."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

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
        if k > 1:
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
    if self.ndim == 0:
        if k != 1:
            raise IndexError("kthvalue(): selected number k out of range")
        return self, P.full(0, (), torch.int64)
    d = P.canon_dim(dim, self.ndim)
    if not 1 <= k <= self.shape[d]:
        raise IndexError(f"kthvalue(): selected number k out of range for dimension {d}")
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


@lower(aten.median.default)
def median(self: Sym) -> Sym:
    if self.numel() == 0:
        return P.full(float("nan"), (), self.dtype)
    return _median(P.reshape(self, (self.numel(),)), 0, False, False)[0]


@lower(aten.nanmedian.default)
def nanmedian(self: Sym) -> Sym:
    if self.numel() == 0:
        return P.full(float("nan"), (), self.dtype)
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
    """For each value: the number of boundaries < value (left) or <= value (right), along the last dim."""
    if sorter is not None:
        boundaries = P.emit1("gather_axis", [boundaries, P.convert(sorter, torch.int64)],
                             dimension=boundaries.ndim - 1)
    compute, _ = P.result_dtype(boundaries, values)
    b, v = P.convert(boundaries, compute), P.convert(values, compute)
    m = b.shape[-1]
    if b.ndim == 1:
        vv = P.reshape(v, (*v.shape, 1))
        bb = P.reshape(b, (1,) * v.ndim + (m,))
        shape = (*v.shape, m)
    else:
        vv = P.reshape(v, (*v.shape, 1))
        bb = P.reshape(b, (*b.shape[:-1], 1, m))
        shape = (*v.shape, m)
    vv, bb = P.broadcast_to(vv, shape), P.broadcast_to(bb, shape)
    below = P.compare("LE" if right else "LT", bb, vv)
    if compute.is_floating_point:  # NaN boundaries sort last: a NaN value goes after every non-NaN boundary
        below = P.emit1("or", [below, P.emit1("and", [P.compare("NE", vv, vv), P.compare("EQ", bb, bb)])])
    count = P.reduce(P.convert(below, torch.int64), "sum", (len(shape) - 1,))
    return P.convert(count, torch.int32 if out_int32 else torch.int64)


@lower(aten.searchsorted.Tensor)
def searchsorted(sorted_sequence: Sym, self: Sym, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Sym | None = None) -> Sym:
    return _search(sorted_sequence, self, right or side == "right", out_int32, sorter)


@lower(aten.searchsorted.Scalar)
def searchsorted_scalar(sorted_sequence: Sym, self: Any, *, out_int32: bool = False, right: bool = False,
                        side: str | None = None, sorter: Sym | None = None) -> Sym:
    _, dtype = P.result_dtype(sorted_sequence, self)
    value = P.full(self, (), dtype) if not isinstance(self, Sym) else self
    if sorted_sequence.ndim > 1:
        value = P.full(self, (*sorted_sequence.shape[:-1], 1), dtype)
        out = _search(sorted_sequence, value, right or side == "right", out_int32, sorter)
        return P.reshape(out, sorted_sequence.shape[:-1] + (1,))
    return _search(sorted_sequence, value, right or side == "right", out_int32, sorter)


@lower(aten.bucketize.Tensor)
def bucketize(self: Sym, boundaries: Sym, *, out_int32: bool = False, right: bool = False) -> Sym:
    return _search(boundaries, self, right, out_int32)


@lower(aten.bucketize.Scalar)
def bucketize_scalar(self: Any, boundaries: Sym, *, out_int32: bool = False, right: bool = False) -> Sym:
    _, dtype = P.result_dtype(boundaries, self)
    return _search(boundaries, P.full(self, (), dtype), right, out_int32)
