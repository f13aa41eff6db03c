"""Graph-mode lowerings of ATen view ops. In eager mode views alias storage (ATen's own implementations in the
C++ shim, or a host kernel such as ops/shape.py's unfold); in a compiled graph, after AOTAutograd's
functionalization, a view is just a value, so it lowers to reshape / transpose / broadcast / slice. Each is the
`graph` role of its op's record (`@lower(..., graph_only=True)`, ops/registry.py); the ops that functional
graphs spell differently from eager mode and that are not views are in ops/graph_forms.py."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops import complex as complex_ops
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


@lower(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten._reshape_alias.default,
       aten.view_copy.default, graph_only=True)
def view(x: Sym, size: list[int], stride: Any = None) -> Sym:
    return P.reshape(x, [int(s) for s in size])


@lower(aten.alias.default, aten.detach.default, graph_only=True)
def alias(x: Sym) -> Sym:
    return x


@lower(aten.permute.default, graph_only=True)
def permute(x: Sym, dims: list[int]) -> Sym:
    return P.transpose(x, [P.canon_dim(d, x.ndim) for d in dims])


@lower(aten.t.default, aten.numpy_T.default, graph_only=True)
def t(x: Sym) -> Sym:
    return P.transpose(x, list(reversed(range(x.ndim))))


@lower(aten.transpose.int, graph_only=True)
def transpose(x: Sym, dim0: int, dim1: int) -> Sym:
    return P.swap(x, dim0, dim1)


@lower(aten.expand.default, graph_only=True)
def expand(x: Sym, size: list[int], *, implicit: bool = False) -> Sym:
    size = list(size)
    offset = len(size) - x.ndim
    full = [x.shape[i - offset] if s == -1 else int(s) for i, s in enumerate(size)]
    return P.broadcast_to(x, full)


@lower(aten.unsqueeze.default, graph_only=True)
def unsqueeze(x: Sym, dim: int) -> Sym:
    d = dim % (x.ndim + 1)
    return P.reshape(x, x.shape[:d] + (1,) + x.shape[d:])


@lower(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, graph_only=True)
def squeeze(x: Sym, dim: Any = None) -> Sym:
    dims = P.canon_dims(dim, x.ndim) if dim is not None else tuple(range(x.ndim))
    return P.reshape(x, tuple(s for i, s in enumerate(x.shape) if not (i in dims and s == 1)))


@lower(aten.slice.Tensor, graph_only=True)
def slice_(x: Sym, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Sym:
    d = P.canon_dim(dim, x.ndim)
    size = x.shape[d]
    lo = 0 if start is None else (start + size if start < 0 else start)
    hi = size if end is None else (end + size if end < 0 else end)
    lo, hi = max(0, min(lo, size)), max(0, min(hi, size))
    return P.slice_dim(x, d, lo, max(lo, hi), step)


@lower(aten.select.int, graph_only=True)
def select(x: Sym, dim: int, index: int) -> Sym:
    d = P.canon_dim(dim, x.ndim)
    i = index + x.shape[d] if index < 0 else index
    part = P.slice_dim(x, d, i, i + 1)
    return P.reshape(part, x.shape[:d] + x.shape[d + 1:])


@lower(aten.split.Tensor, aten.split_with_sizes.default, graph_only=True)
def split(x: Sym, split_size: Any, dim: int = 0) -> list[Sym]:
    d = P.canon_dim(dim, x.ndim)
    size = x.shape[d]
    sizes = list(split_size) if isinstance(split_size, list | tuple) else \
        [min(split_size, size - i) for i in range(0, size, split_size)]
    out, start = [], 0
    for s in sizes:
        out.append(P.slice_dim(x, d, start, start + s))
        start += s
    return out


@lower(aten.unbind.int, graph_only=True)
def unbind(x: Sym, dim: int = 0) -> list[Sym]:
    d = P.canon_dim(dim, x.ndim)
    return [select(x, d, i) for i in range(x.shape[d])]


@lower(aten.diagonal.default, graph_only=True)
def diagonal(x: Sym, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Sym:
    d1, d2 = P.canon_dim(dim1, x.ndim), P.canon_dim(dim2, x.ndim)
    rest = [i for i in range(x.ndim) if i not in (d1, d2)]
    y = P.transpose(x, rest + [d1, d2])
    n1, n2 = y.shape[-2], y.shape[-1]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    rows = P.iota((length,), 0) + max(-offset, 0)
    cols = P.iota((length,), 0) + max(offset, 0)
    flat = P.reshape(y, y.shape[:-2] + (n1 * n2,))
    lin = rows * n2 + cols
    return P.emit1("index_select", [flat, lin], dimension=flat.ndim - 1)


@lower(aten.unfold.default, graph_only=True)
def unfold(x: Sym, dimension: int, size: int, step: int) -> Sym:
    d = P.canon_dim(dimension, x.ndim) if x.ndim else 0
    count = (x.shape[d] - size) // step + 1
    windows = [P.slice_dim(x, d, i * step, i * step + size) for i in range(count)]
    moved = [P.transpose(w, [i for i in range(x.ndim) if i != d] + [d]) for w in windows]
    stacked = P.concat([P.reshape(m, m.shape[:d] + (1,) + m.shape[d:]) for m in moved], d)
    return stacked


@lower(aten.as_strided.default, graph_only=True)
def as_strided(x: Sym, size: list[int], stride: list[int], storage_offset: int | None = None) -> Sym:
    flat = P.reshape(x, (x.numel(),))
    index = P.full(storage_offset or 0, tuple(size), torch.int64)
    for dim, st in enumerate(stride):
        if st and size[dim] > 1:
            index = index + P.iota(tuple(size), dim) * st
    return P.reshape(P.emit1("index_select", [flat, P.reshape(index, (-1,))], dimension=0), tuple(size))


@lower(aten.view_as_real.default, graph_only=True)
def view_as_real(x: Sym) -> Sym:
    parts = [P.reshape(part(x), x.shape + (1,)) for part in (complex_ops.real, complex_ops.imag)]
    return P.concat(parts, x.ndim)


@lower(aten.view_as_complex.default, graph_only=True)
def view_as_complex(x: Sym) -> Sym:
    return complex_ops.make_complex(select(x, x.ndim - 1, 0), select(x, x.ndim - 1, 1))
