"""Graph-mode lowerings of ATen view ops (and of the dtype conversions and convolutions that graphs spell as
other ops than eager mode reaches). In eager mode views alias storage (ATen's own implementations in the C++
shim); in a compiled graph, after AOTAutograd's functionalization, a view is just a value, so it lowers to
reshape / transpose / broadcast / slice. These are used only by the compile backend."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from torchtpu.dtypes import check_scalar_fits
from torchtpu.ops import prims as P
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten
VIEW_LOWERINGS: dict[Any, Callable[..., Sym]] = {}


def _view(*ops: Any) -> Callable[[Callable[..., Sym]], Callable[..., Sym]]:
    def register(fn: Callable[..., Sym]) -> Callable[..., Sym]:
        for op in ops:
            VIEW_LOWERINGS[op] = fn
        return fn

    return register


@_view(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten._reshape_alias.default,
       aten.view_copy.default)
def view(x: Sym, size: list[int], stride: Any = None) -> Sym:
    return P.reshape(x, [int(s) for s in size])


@_view(aten.alias.default, aten.clone.default, aten.detach.default, aten.lift_fresh_copy.default,
       aten.contiguous.default)
def identity(x: Sym, *args: Any, **kwargs: Any) -> Sym:
    return x


@_view(aten.permute.default)
def permute(x: Sym, dims: list[int]) -> Sym:
    return P.transpose(x, [P.canon_dim(d, x.ndim) for d in dims])


@_view(aten.t.default, aten.numpy_T.default)
def t(x: Sym) -> Sym:
    return P.transpose(x, list(reversed(range(x.ndim))))


@_view(aten.transpose.int)
def transpose(x: Sym, dim0: int, dim1: int) -> Sym:
    return P.swap(x, dim0, dim1)


@_view(aten.expand.default)
def expand(x: Sym, size: list[int], *, implicit: bool = False) -> Sym:
    size = list(size)
    offset = len(size) - x.ndim
    full = [x.shape[i - offset] if s == -1 else int(s) for i, s in enumerate(size)]
    return P.broadcast_to(x, full)


@_view(aten.unsqueeze.default)
def unsqueeze(x: Sym, dim: int) -> Sym:
    d = dim % (x.ndim + 1)
    return P.reshape(x, x.shape[:d] + (1,) + x.shape[d:])


@_view(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def squeeze(x: Sym, dim: Any = None) -> Sym:
    dims = P.canon_dims(dim, x.ndim) if dim is not None else tuple(range(x.ndim))
    return P.reshape(x, tuple(s for i, s in enumerate(x.shape) if not (i in dims and s == 1)))


@_view(aten.slice.Tensor)
def slice_(x: Sym, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Sym:
    d = P.canon_dim(dim, x.ndim)
    size = x.shape[d]
    lo = 0 if start is None else (start + size if start < 0 else start)
    hi = size if end is None else (end + size if end < 0 else end)
    lo, hi = max(0, min(lo, size)), max(0, min(hi, size))
    return P.slice_dim(x, d, lo, max(lo, hi), step)


@_view(aten.select.int)
def select(x: Sym, dim: int, index: int) -> Sym:
    d = P.canon_dim(dim, x.ndim)
    i = index + x.shape[d] if index < 0 else index
    part = P.slice_dim(x, d, i, i + 1)
    return P.reshape(part, x.shape[:d] + x.shape[d + 1:])


@_view(aten.split.Tensor, aten.split_with_sizes.default)
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


@_view(aten.unbind.int)
def unbind(x: Sym, dim: int = 0) -> list[Sym]:
    d = P.canon_dim(dim, x.ndim)
    return [select(x, d, i) for i in range(x.shape[d])]


@_view(aten.diagonal.default)
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


@_view(aten.unfold.default)
def unfold(x: Sym, dimension: int, size: int, step: int) -> Sym:
    d = P.canon_dim(dimension, x.ndim) if x.ndim else 0
    count = (x.shape[d] - size) // step + 1
    windows = [P.slice_dim(x, d, i * step, i * step + size) for i in range(count)]
    moved = [P.transpose(w, [i for i in range(x.ndim) if i != d] + [d]) for w in windows]
    stacked = P.concat([P.reshape(m, m.shape[:d] + (1,) + m.shape[d:]) for m in moved], d)
    return stacked


@_view(aten.as_strided.default)
def as_strided(x: Sym, size: list[int], stride: list[int], storage_offset: int | None = None) -> Sym:
    flat = P.reshape(x, (x.numel(),))
    index = P.full(storage_offset or 0, tuple(size), torch.int64)
    for dim, st in enumerate(stride):
        if st and size[dim] > 1:
            index = index + P.iota(tuple(size), dim) * st
    return P.reshape(P.emit1("index_select", [flat, P.reshape(index, (-1,))], dimension=0), tuple(size))


# Conversions that functional graphs (and upstream decompositions) express as their own ops; in eager mode
# they reach the device through copy_/_copy_from instead.
@_view(aten._to_copy.default)
def to_copy(x: Sym, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.convert(x, dtype) if dtype is not None else x


@_view(torch.ops.prims.convert_element_type.default)
def convert_element_type(x: Sym, dtype: torch.dtype) -> Sym:
    return P.convert(x, dtype)


@_view(aten.scalar_tensor.default)
def scalar_tensor(value: Any, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    check_scalar_fits(value, dtype or torch.get_default_dtype(), "scalar_tensor()", 1)
    return P.const(value, dtype or torch.get_default_dtype())


# Factories that stay as ops in functional graphs; eager mode builds them from empty + fill_.
@_view(aten.full_like.default)
def full_like(x: Sym, fill_value: Any, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    check_scalar_fits(fill_value, dtype or x.dtype, "full_like()", x.numel())
    return P.full(fill_value, x.shape, dtype or x.dtype)


@_view(aten.zeros_like.default, aten.empty_like.default)
def zeros_like(x: Sym, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(0, x.shape, dtype or x.dtype)


@_view(aten.ones_like.default)
def ones_like(x: Sym, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(1, x.shape, dtype or x.dtype)


@_view(aten.new_full.default)
def new_full(x: Sym, size: list[int], fill_value: Any, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    check_scalar_fits(fill_value, dtype or x.dtype, "new_full()", math.prod(size))
    return P.full(fill_value, tuple(size), dtype or x.dtype)


@_view(aten.new_zeros.default, aten.new_empty.default)
def new_zeros(x: Sym, size: list[int], *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(0, tuple(size), dtype or x.dtype)


@_view(aten.new_ones.default)
def new_ones(x: Sym, size: list[int], *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(1, tuple(size), dtype or x.dtype)


@_view(aten.zeros.default, aten.empty.memory_format)
def zeros(size: list[int], *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(0, tuple(size), dtype or torch.get_default_dtype())


@_view(aten.ones.default)
def ones(size: list[int], *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(1, tuple(size), dtype or torch.get_default_dtype())


# Functional forms of writes into views (what AOTAutograd makes of `x[a:b] = y`) and of padding.
@_view(aten.slice_scatter.default)
def slice_scatter(x: Sym, src: Sym, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Sym:
    d = P.canon_dim(dim, x.ndim)
    size = x.shape[d]
    lo = 0 if start is None else (start + size if start < 0 else start)
    lo = max(0, min(lo, size))
    count = src.shape[d]
    if count == 0:
        return x
    high = size - (lo + (count - 1) * step + 1)
    low_pad = [0] * x.ndim
    high_pad = [0] * x.ndim
    interior = [0] * x.ndim
    low_pad[d], high_pad[d], interior[d] = lo, high, step - 1
    spread = P.emit1("pad", [P.convert(src, x.dtype)], value=0, low=tuple(low_pad), high=tuple(high_pad),
                     interior=tuple(interior))
    positions = P.iota(x.shape, d)
    inside = P.emit1("and", [P.compare("GE", positions, lo), P.compare("LE", positions, lo + (count - 1) * step)])
    if step > 1:
        on_step = P.compare("EQ", P.binary("remainder", positions - lo, step), 0)
        inside = P.emit1("and", [inside, on_step])
    return P.emit1("select", [inside, spread, x])


@_view(aten.select_scatter.default)
def select_scatter(x: Sym, src: Sym, dim: int, index: int) -> Sym:
    d = P.canon_dim(dim, x.ndim)
    i = index + x.shape[d] if index < 0 else index
    return slice_scatter(x, unsqueeze(src, d), d, i, i + 1, 1)


@_view(aten.constant_pad_nd.default)
def constant_pad_nd(x: Sym, pad: list[int], value: float = 0) -> Sym:
    low = [0] * x.ndim
    high = [0] * x.ndim
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        low[d], high[d] = pad[2 * i], pad[2 * i + 1]
    return P.emit1("pad", [x], value=value, low=tuple(low), high=tuple(high), interior=(0,) * x.ndim)


@_view(aten.copy.default)
def copy(x: Sym, src: Sym, non_blocking: bool = False) -> Sym:
    return P.broadcast_to(P.convert(src, x.dtype), x.shape)


# Graph spellings of ops that eager mode reaches through another overload: ATen routes a PrivateUse1
# convolution to convolution(_backward)_overrideable, the lowered ones; AOTAutograd graphs name the generic op.
@_view(aten.convolution.default)
def convolution(input: Sym, weight: Sym, bias: Sym | None, *conv_args: Any) -> Sym:  # noqa: A002
    from torchtpu.ops.registry import OP_TABLE

    return OP_TABLE[aten.convolution_overrideable.default](input, weight, bias, *conv_args)


@_view(aten.convolution_backward.default)
def convolution_backward(grad_output: Sym, input: Sym, weight: Sym, bias_sizes: Any,  # noqa: A002
                         *conv_args: Any) -> tuple[Sym | None, Sym | None, Sym | None]:
    from torchtpu.ops.registry import OP_TABLE

    return OP_TABLE[aten.convolution_backward_overrideable.default](grad_output, input, weight, *conv_args)
