"""Lowerings of data movement that is not a view: flip (and the layouts CPU flips complex32 in), roll,
as_strided_scatter. Views themselves (view, transpose, as_strided, ...) are the C++ shim's (ATen's generic
kernels)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from torchtpu.dtypes import DtypeNotImplementedError
from torchtpu.ops import prims as P
from torchtpu.ops.iterator_order import reorder_dimensions
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _dense_strides(sizes: Sequence[int], strides: Sequence[int]) -> list[int]:
    """empty_like(x, preserve_format)'s strides: x's own where x is non-overlapping and dense, else c10's
    infer_dense_strides (x's dims ordered as TensorIterator orders them, a 0 stride ambiguous)."""
    live = sorted((i for i in range(len(sizes)) if sizes[i] > 1), key=lambda i: strides[i])
    expected, dense = 1, True
    for i in live:
        dense = dense and strides[i] == expected
        expected *= sizes[i]
    if dense:
        return list(strides)
    perm = reorder_dimensions(sizes, [strides])
    out, step = [0] * len(sizes), 1
    for i in perm:
        out[i] = step
        step *= max(sizes[i], 1)
    return out


def complex32_flip_computes(sizes: Sequence[int], strides: Sequence[int], dims: Sequence[int]) -> bool:
    """Whether CPU torch flips a complex32 tensor of this layout: its flip_cpu kernel has no ComplexHalf, but a
    flip with nothing to reverse is a copy, and one whose TensorIterator's innermost dim is contiguous in the
    output, `x` and its 0-strided twin (so not flipped) is cpu_vflip_memcpy's, which copies bytes of any dtype."""
    flipped = [d for d in dims if sizes[d] > 1 and strides[d] != 0]
    if not flipped or math.prod(sizes) <= 1:
        return True
    twin = [0 if d in flipped else s for d, s in enumerate(strides)]
    operands = [_dense_strides(sizes, strides), list(strides), twin]
    inner = next(d for d in reorder_dimensions(sizes, operands) if sizes[d] > 1)
    return inner not in flipped and all(st[inner] == 1 for st in operands)


def _flip_layout(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """flip's complex32 rule (complex32_flip_computes), read from the strides: CPU's refusal where it refuses."""
    self, dims = args[0], args[1] if len(args) > 1 else kwargs["dims"]
    if isinstance(self, torch.Tensor) and self.dtype == torch.complex32:
        d = P.canon_dims(dims, self.ndim)
        if not complex32_flip_computes(tuple(self.shape), tuple(self.stride()), d):
            raise DtypeNotImplementedError("\"flip_cpu\" not implemented for 'ComplexHalf'")
    return args, kwargs


@lower(aten.flip.default, prepare=_flip_layout)
def flip(self: Sym, dims: list[int]) -> Sym:
    d = P.canon_dims(dims, self.ndim)  # ATen's dim_list_to_bitset: no dim named twice
    return P.emit1("reverse", [self], dimensions=d) if d else self


@lower(aten.roll.default)
def roll(self: Sym, shifts: list[int], dims: list[int] = ()) -> Sym:
    if not shifts:  # ATen's roll_common checks
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) != 1 or dims and len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if not dims:
        flat = P.reshape(self, (self.numel(),))
        return P.reshape(roll(flat, shifts, [0]), self.shape)
    x = self
    for shift, dim in zip(shifts, dims):
        d = P.canon_dim(dim, x.ndim)
        n = x.shape[d]
        if n == 0:
            continue
        s = shift % n
        if s:
            x = P.concat([P.slice_dim(x, d, n - s, n), P.slice_dim(x, d, 0, n - s)], d)
    return x


def flat_positions(size: list[int], stride: list[int], offset: int) -> Sym:
    """int64 tensor of `size`: the flat storage position of each element of an as_strided view."""
    pos = P.full(offset, tuple(size), torch.int64)
    for d, st in enumerate(stride):
        if size[d] > 1 and st:
            pos = pos + P.iota(tuple(size), d) * int(st)
    return pos


@lower(aten.as_strided_scatter.default)
def as_strided_scatter(self: Sym, src: Sym, size: list[int], stride: list[int], storage_offset: int | None = None
                       ) -> Sym:
    flat = P.reshape(self, (self.numel(),))
    pos = P.reshape(flat_positions(size, stride, storage_offset or 0), (-1,))
    vals = P.reshape(P.convert(src, self.dtype), (-1,))
    if pos.shape[0] == 0:
        return self
    out = P.emit1("scatter_axis", [flat, pos, vals], dimension=0, reduce="replace")
    return P.reshape(out, self.shape)


def unfold(self: torch.Tensor, dimension: int, size: int, step: int) -> torch.Tensor:
    """Tensor.unfold is a view: new sizes and strides over the same storage (the shim's as_strided); ATen's
    checks in its order (dim range, size >= 0, size <= the dim's size, step > 0)."""
    rank = max(self.ndim, 1)
    if not -rank <= dimension < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got "
                         f"{dimension})")
    d = dimension % rank
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    max_size = self.shape[d] if self.ndim else 1
    if size > max_size:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {max_size} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if self.ndim == 0:
        return self.as_strided((size,), (1,), self.storage_offset())
    sizes, strides = list(self.shape), list(self.stride())
    sizes[d] = (self.shape[d] - size) // step + 1
    strides[d] = self.stride(d) * step
    return self.as_strided((*sizes, size), (*strides, self.stride(d)), self.storage_offset())


def register(kernel: Any) -> None:
    kernel(aten.unfold.default, unfold)
