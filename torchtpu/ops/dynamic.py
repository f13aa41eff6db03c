"""Ops whose output shape depends on the data: nonzero, masked_select, unique, unique_consecutive.

Each runs on the device in two programs, as a TPU must: the first computes the output size (a count), which is
read back (one sync), the second compacts the selected rows into a buffer of exactly that size (a cumulative sum
gives each selected row its slot; a scatter writes it). `nonzero_static` and `masked_scatter` have static shapes
and are plain lowerings.
"""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.execution import eager
from torchtpu.ops import host_index
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.sorting import sort_dim
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _slots(mask: Sym, size: int) -> Sym:
    """For a (n,) bool mask: the output row of each selected element, `size` (a spill row) for the others."""
    pos = P.emit1("cumulative", [P.convert(mask, torch.int64)], kind="sum", dimension=0) - 1
    pos = P.emit1("minimum", [pos, P.full(size, pos.shape, torch.int64)])
    return P.where(mask, pos, P.full(size, pos.shape, torch.int64))


def compact(mask: Sym, rows: Sym, size: int, fill: Any = 0) -> Sym:
    """The rows (n, *k) where mask (n,) is set, in order, in a (size, *k) buffer (unused rows = fill)."""
    n = mask.shape[0]
    out = P.full(fill, (size + 1, *rows.shape[1:]), rows.dtype)
    if n == 0:
        return P.slice_dim(out, 0, 0, size)
    slots = _slots(mask, size)
    index = P.broadcast_to(P.reshape(slots, (n,) + (1,) * (rows.ndim - 1)), rows.shape)
    out = P.emit1("scatter_axis", [out, index, rows], dimension=0, reduce="replace")
    return P.slice_dim(out, 0, 0, size)


def _coords(shape: tuple[int, ...]) -> Sym:
    """(n, ndim) int64: the coordinates of each element of `shape` in row-major order."""
    n = 1
    for s in shape:
        n *= s
    flat = P.iota((n,), 0)
    cols, stride = [], n
    for s in shape:
        stride //= max(s, 1)
        c = P.emit1("remainder", [P.emit1("divide", [flat, P.full(max(stride, 1), (n,), torch.int64)]),
                                  P.full(max(s, 1), (n,), torch.int64)])
        cols.append(P.reshape(c, (n, 1)))
    return P.concat(cols, 1) if cols else P.full(0, (n, 0), torch.int64)


def _nonzero_rows(self: Sym, *, size: int, fill: int = 0) -> Sym:
    mask = P.reshape(P.compare("NE", self, 0), (self.numel(),))
    if self.ndim == 0:
        return P.full(0, (size, 0), torch.int64)
    return compact(mask, _coords(self.shape), size, fill)


def _count(self: Sym) -> Sym:
    return P.reduce(P.convert(P.compare("NE", self, 0), torch.int64), "sum", tuple(range(self.ndim)))


def nonzero(self: torch.Tensor) -> torch.Tensor:
    count = int(eager.run("aten::nonzero.count", _count, (self,), {}).item())
    return eager.run("aten::nonzero", _nonzero_rows, (self,), {"size": count})


@lower(aten.nonzero_static.default)
def nonzero_static(self: Sym, *, size: int, fill_value: int = -1) -> Sym:
    return _nonzero_rows(self, size=size, fill=fill_value)


def _broadcast_pair(self: Sym, mask: Sym) -> tuple[Sym, Sym]:
    shape = P.broadcast_shapes(self.shape, mask.shape)
    return P.broadcast_to(self, shape), P.broadcast_to(P.convert(mask, torch.bool), shape)


def _masked_count(self: Sym, mask: Sym) -> Sym:
    _, m = _broadcast_pair(self, mask)
    return _count(m)


def _masked_rows(self: Sym, mask: Sym, *, size: int) -> Sym:
    x, m = _broadcast_pair(self, mask)
    return compact(P.reshape(m, (m.numel(),)), P.reshape(x, (x.numel(),)), size)


def masked_select(self: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if mask.dtype != torch.bool:  # ATen's masked_select_out_impl_cpu (CUDA's kernel checks the same)
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    mask = host_index.to_device_of(self, mask)
    count = int(eager.run("aten::masked_select.count", _masked_count, (self, mask), {}).item())
    return eager.run("aten::masked_select", _masked_rows, (self, mask), {"size": count})


@lower(aten.masked_scatter.default, prepare=host_index.MASK_AT_1)
def masked_scatter(self: Sym, mask: Sym, source: Sym) -> Sym:
    x, m = _broadcast_pair(self, mask)
    flat_m = P.reshape(m, (m.numel(),))
    if flat_m.shape[0] == 0:
        return x
    pos = P.emit1("cumulative", [P.convert(flat_m, torch.int64)], kind="sum", dimension=0) - 1
    # the k-th selected element reads source's k-th: more ones in the mask than source elements is CPU's error
    # (checked when the program runs; unselected positions are -1, the ignored value)
    pos = P.check_index(P.where(flat_m, pos, P.full(-1, pos.shape, torch.int64)), source.numel(),
                        "masked_scatter: Number of elements of source < number of ones in mask",
                        error="RuntimeError", ignore=-1)
    if source.numel() == 0:  # nothing to read: the check alone decides (x is returned where it passes)
        return P.reshape(P.where(P.compare("LT", pos, P.zeros_like(pos)), P.reshape(x, (x.numel(),)),
                                 P.reshape(x, (x.numel(),))), x.shape)
    pos = P.emit1("maximum", [pos, P.zeros_like(pos)])
    picked = P.emit1("index_select", [P.reshape(P.convert(source, self.dtype), (source.numel(),)), pos],
                     dimension=0)
    return P.reshape(P.where(flat_m, picked, P.reshape(x, (x.numel(),))), x.shape)


def _groups(self: Sym, sort: bool) -> tuple[Sym, Sym, Sym]:
    """(values in order, their original positions, bool mask of the first element of each group)."""
    flat = P.reshape(self, (self.numel(),))
    n = flat.shape[0]
    if sort:
        values, perm = sort_dim(flat, 0)
    else:
        values, perm = flat, P.iota((n,), 0)
    if n == 0:
        return values, perm, P.full(True, (0,), torch.bool)
    differs = P.compare("NE", P.slice_dim(values, 0, 1, n), P.slice_dim(values, 0, 0, n - 1))
    first = P.concat([P.full(True, (1,), torch.bool), differs], 0)
    return values, perm, first


def _groups_dim(self: Sym, dim: int, sort: bool) -> tuple[Sym, Sym, Sym]:
    """`_groups` over the slices along `dim` (rows of (d, m)), sorted lexicographically (stable radix passes)."""
    d = P.canon_dim(dim, self.ndim)
    moved = P.transpose(self, [d] + [i for i in range(self.ndim) if i != d])
    n = moved.shape[0]
    rows = P.reshape(moved, (n, moved.numel() // max(n, 1)))
    perm = P.iota((n,), 0)
    if sort and n > 1:
        for col in reversed(range(rows.shape[1])):
            key = P.emit1("index_select", [P.reshape(P.slice_dim(rows, 1, col, col + 1), (n,)), perm], dimension=0)
            _, order = sort_dim(key, 0)
            perm = P.emit1("index_select", [perm, order], dimension=0)
        rows = P.emit1("index_select", [rows, perm], dimension=0)
    if n == 0:
        return rows, perm, P.full(True, (0,), torch.bool)
    differs = P.compare("NE", P.slice_dim(rows, 0, 1, n), P.slice_dim(rows, 0, 0, n - 1))
    differs = P.reduce(differs, "or", (1,)) if rows.shape[1] else P.full(False, (n - 1,), torch.bool)
    return rows, perm, P.concat([P.full(True, (1,), torch.bool), differs], 0)


def _unique_count(self: Sym, *, sort: bool, dim: int | None = None) -> Sym:
    first = _groups(self, sort)[2] if dim is None else _groups_dim(self, dim, sort)[2]
    return P.reduce(P.convert(first, torch.int64), "sum", (0,))


def _unique_rows(self: Sym, *, size: int, sort: bool, inverse: bool, counts: bool, dim: int | None = None
                 ) -> tuple[Sym, Sym, Sym]:
    if dim is None:
        values, perm, first = _groups(self, sort)
        out = compact(first, values, size)
    else:
        values, perm, first = _groups_dim(self, dim, sort)
        d = P.canon_dim(dim, self.ndim)
        rest = [s for i, s in enumerate(self.shape) if i != d]
        out = P.reshape(compact(first, values, size), (size, *rest))
        out = P.transpose(out, list(range(1, d + 1)) + [0] + list(range(d + 1, self.ndim)))
    n = values.shape[0]
    inv = cnt = P.full(0, (0,), torch.int64)
    if n and (inverse or counts):
        group = P.emit1("cumulative", [P.convert(first, torch.int64)], kind="sum", dimension=0) - 1
        if inverse:
            inv = P.emit1("scatter_axis", [P.full(0, (n,), torch.int64), perm, group], dimension=0,
                          reduce="replace")
            inv = P.reshape(inv, self.shape) if dim is None else inv
        if counts:
            cnt = P.emit1("index_add", [P.full(0, (size,), torch.int64), group, P.full(1, (n,), torch.int64)],
                          dimension=0)
    elif inverse:
        inv = P.full(0, self.shape if dim is None else (n,), torch.int64)
    return out, inv, cnt


def _unique_dim_count(self: Sym, *, dim: int) -> Sym:
    """(number of unique slices along `dim`, 1 if any element is NaN else 0): one read for both."""
    nan = P.reduce(P.reshape(P.compare("NE", self, self), (self.numel(),)), "or", (0,))
    count = _unique_count(self, sort=True, dim=dim)
    return P.concat([P.reshape(count, (1,)), P.reshape(P.convert(nan, torch.int64), (1,))], 0)


def _unique(self: torch.Tensor, sort: bool, inverse: bool, counts: bool, dim: int | None = None
            ) -> tuple[torch.Tensor, ...]:
    if dim is not None and self.ndim == 0:  # maybe_wrap_dim's error for a 0-dim input
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if dim is not None and not self.numel():  # ATen's checks of an empty input, in its order and words
        if self.shape[P.canon_dim(dim, self.ndim)] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        if list(self.shape).count(0) != 1:
            raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot be applied ")
    if dim is not None and self.numel():
        inverse = counts = True  # ATen's kernels over slices always return both (empty only for an empty input)
    if sort and dim is not None and self.is_floating_point() and self.numel():
        size, nan = eager.run("aten::unique_dim.count", _unique_dim_count, (self,), {"dim": dim}).tolist()
        if nan:
            # ATen sorts the slices with a `<` comparator that NaN makes no strict weak order; the order std::sort
            # then leaves (which slices stay apart, where NaN slices land) is its algorithm's, so CPU's kernel
            # computes this case; the results are copied back to the device.
            out = torch.unique(self.cpu(), sorted=True, return_inverse=True, return_counts=True, dim=dim)
            return tuple(t.to(self.device) for t in out)
        return eager.run("aten::unique", _unique_rows, (self,),
                         {"size": size, "sort": sort, "inverse": inverse, "counts": counts, "dim": dim})
    size = int(eager.run("aten::unique.count", _unique_count, (self,), {"sort": sort, "dim": dim}).item())
    return eager.run("aten::unique", _unique_rows, (self,),
                     {"size": size, "sort": sort, "inverse": inverse, "counts": counts, "dim": dim})


def unique2(self: torch.Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
            return_counts: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return tuple(_unique(self, True, return_inverse, return_counts))


def unique_(self: torch.Tensor, sorted: bool = True, return_inverse: bool = False  # noqa: A002
            ) -> tuple[torch.Tensor, torch.Tensor]:
    out, inv, _ = _unique(self, True, return_inverse, False)
    return out, inv


def unique_consecutive(self: torch.Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if dim == 0 and self.ndim == 1:  # ATen's flat kernel (only the outputs asked for); dim=-1 takes the slices'
        dim = None
    return tuple(_unique(self, False, return_inverse, return_counts, dim))


def unique_dim(self: torch.Tensor, dim: int, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
               return_counts: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return tuple(_unique(self, True, return_inverse, return_counts, dim))


def register(kernel: Any) -> None:
    kernel(aten.nonzero.default, nonzero, data_dependent=True)
    kernel(aten.masked_select.default, masked_select, data_dependent=True)
    kernel(aten._unique2.default, unique2, data_dependent=True)
    kernel(aten._unique.default, unique_, data_dependent=True)
    kernel(aten.unique_consecutive.default, unique_consecutive, data_dependent=True)
    kernel(aten.unique_dim.default, unique_dim, data_dependent=True)
