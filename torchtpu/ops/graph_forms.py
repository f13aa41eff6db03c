"""The values of ops that functional graphs spell differently from eager mode, for compiled graphs only.

After AOTAutograd's functionalization a graph names ops that eager mode reaches another way: dtype conversions
(`_to_copy`; eager copies through `_copy_from`), factories and `*_like` ops (eager: accepted upstream
decompositions onto empty + fill_), functional writes into views (`slice_scatter`; eager writes the view),
`clone` / `contiguous` (values in a graph), and the generic convolution (eager: ATen routes a PrivateUse1
convolution to the lowered `convolution(_backward)_overrideable`). Each is the `graph` role of its op's record
(`@lower(..., graph_only=True)`); views are in compile/views.py.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchtpu.dtypes import check_scalar_fits, checked_scalar, opmath
from torchtpu.ops import conv, out_checks
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym, aten_type_name

aten = torch.ops.aten


@lower(aten.clone.default, aten.lift_fresh_copy.default, aten.contiguous.default, graph_only=True)
def value(x: Sym, *args: Any, **kwargs: Any) -> Sym:
    return x


# Conversions that functional graphs (and upstream decompositions) express as their own ops; in eager mode
# they reach the device through copy_/_copy_from instead.
@lower(aten._to_copy.default, graph_only=True)
def to_copy(x: Sym, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.convert(x, dtype) if dtype is not None else x


@lower(torch.ops.prims.convert_element_type.default, graph_only=True)
def convert_element_type(x: Sym, dtype: torch.dtype) -> Sym:
    return P.convert(x, dtype)


@lower(aten.scalar_tensor.default, graph_only=True)
def scalar_tensor(value: Any, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    check_scalar_fits(value, dtype or torch.get_default_dtype(), "scalar_tensor()", 1)
    return P.const(value, dtype or torch.get_default_dtype())


# Factories that stay as ops in functional graphs; eager mode builds them from empty + fill_.
@lower(aten.full_like.default, graph_only=True)
def full_like(x: Sym, fill_value: Any, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    check_scalar_fits(fill_value, dtype or x.dtype, "full_like()", x.numel())
    return P.full(fill_value, x.shape, dtype or x.dtype)


@lower(aten.zeros_like.default, aten.empty_like.default, graph_only=True)
def zeros_like(x: Sym, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(0, x.shape, dtype or x.dtype)


@lower(aten.ones_like.default, graph_only=True)
def ones_like(x: Sym, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(1, x.shape, dtype or x.dtype)


@lower(aten.new_full.default, graph_only=True)
def new_full(x: Sym, size: list[int], fill_value: Any, *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    check_scalar_fits(fill_value, dtype or x.dtype, "new_full()", math.prod(size))
    return P.full(fill_value, tuple(size), dtype or x.dtype)


@lower(aten.new_zeros.default, aten.new_empty.default, graph_only=True)
def new_zeros(x: Sym, size: list[int], *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(0, tuple(size), dtype or x.dtype)


@lower(aten.new_ones.default, graph_only=True)
def new_ones(x: Sym, size: list[int], *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(1, tuple(size), dtype or x.dtype)


@lower(aten.zeros.default, aten.empty.memory_format, graph_only=True)
def zeros(size: list[int], *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(0, tuple(size), dtype or torch.get_default_dtype())


@lower(aten.ones.default, graph_only=True)
def ones(size: list[int], *, dtype: torch.dtype | None = None, **_: Any) -> Sym:
    return P.full(1, tuple(size), dtype or torch.get_default_dtype())


# Functional forms of writes into views (what AOTAutograd makes of `x[a:b] = y`) and of padding.
@lower(aten.slice_scatter.default, graph_only=True)
def slice_scatter(x: Sym, src: Sym, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Sym:
    out_checks.check_slice_scatter(x, src, dim, start, end, step)
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


@lower(aten.select_scatter.default, graph_only=True)
def select_scatter(x: Sym, src: Sym, dim: int, index: int) -> Sym:
    d = P.canon_dim(dim, x.ndim)
    i = index + x.shape[d] if index < 0 else index
    return slice_scatter(x, P.reshape(src, src.shape[:d] + (1,) + src.shape[d:]), d, i, i + 1, 1)


@lower(aten.constant_pad_nd.default, graph_only=True)
def constant_pad_nd(x: Sym, pad: list[int], value: float = 0) -> Sym:
    low = [0] * x.ndim
    high = [0] * x.ndim
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        low[d], high[d] = pad[2 * i], pad[2 * i + 1]
    return P.emit1("pad", [x], value=value, low=tuple(low), high=tuple(high), interior=(0,) * x.ndim)


@lower(aten.copy.default, graph_only=True)
def copy(x: Sym, src: Sym, non_blocking: bool = False) -> Sym:
    return P.broadcast_to(P.convert(src, x.dtype), x.shape)


# ATen routes a PrivateUse1 convolution to convolution(_backward)_overrideable, the lowered ones; AOTAutograd
# graphs name the generic op (aten.convolution.default is conv.py's lowering's second decorator).
@lower(aten.convolution_backward.default, graph_only=True)
def convolution_backward(grad_output: Sym, input: Sym, weight: Sym, bias_sizes: Any,  # noqa: A002
                         *conv_args: Any) -> tuple[Sym | None, Sym | None, Sym | None]:
    return conv.convolution_backward(grad_output, input, weight, *conv_args)


@lower(torch.ops.prims.fma.default, graph_only=True)
def fma(a: Sym, b: Any, c: Sym) -> Sym:
    """inductor's fma, (a * b) + c: Dynamo spells `self.addcmul_(t1, t2, value=v)` as fma(t1 * t2, v, self), and
    addcdiv_ and add_ with a tensor alpha alike, each copied into self (`c`) after. For an integer self ATen's
    kernel takes the value in self's type (value.to<scalar_t>(), toward zero). The in-place op's checks that the
    spelling drops are made here: its result type must cast to self's (`t1 * t2` of floats, or addcdiv's quotient,
    into an integer self), and a number value is converted to the kernel's type with c10's overflow check (a
    complex value for a real self)."""
    common = P.result_dtype(a, c)[1]
    if not torch.can_cast(common, c.dtype):
        raise RuntimeError(f"result type {aten_type_name(common)} can't be cast to the desired output type "
                           f"{aten_type_name(c.dtype)}")
    if not isinstance(b, Sym) and (common.is_floating_point or common.is_complex or isinstance(b, complex)):
        checked_scalar(b, opmath(common))
    if not isinstance(b, Sym) and not (common.is_floating_point or common.is_complex or common == torch.bool):
        b = P.convert(P.const(b, torch.float64), common)
    return a * b + c
