"""Lowerings of factories and random ops: arange, full, linspace, and the RNG-driven uniform_, normal_,
bernoulli (randint, randn and rand reach these through their composite implementations; random_ is in
ops/random_ints.py)."""

from __future__ import annotations

import math
from typing import Any

import torch

from torchtpu.dtypes import check_scalar_fits
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _dtype(dtype: torch.dtype | None, *values: Any) -> torch.dtype:
    if dtype is not None:
        return dtype
    if any(isinstance(v, float) for v in values):
        return torch.get_default_dtype()
    return torch.int64


@lower(aten.arange.start_step, static=("start", "end", "step"))
def arange(start: Any, end: Any, step: Any = 1, *, dtype: torch.dtype | None = None, layout: Any = None,
           device: Any = None, pin_memory: Any = None) -> Sym:
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    out = _dtype(dtype, start, end, step)
    if not out.is_floating_point:  # ATen converts the bounds to the integer type first
        start, end, step = int(start), int(end), int(step)
        if step == 0:
            raise RuntimeError("step must be nonzero")
        sgn = (step > 0) - (step < 0)
        num = end - start + step - sgn
        n = max(0, abs(num) // abs(step) * (1 if (num >= 0) == (step > 0) else -1))
    else:
        n = max(0, math.ceil((end - start) / step))
    ramp = P.iota((n,), 0, torch.int64 if not out.is_floating_point else torch.float32)
    if out.is_floating_point:
        return P.convert(ramp * float(step) + float(start), out)
    return P.convert(ramp * int(step) + int(start), out)


@lower(aten.full.default, static=("fill_value",))
def full(size: list[int], fill_value: Any, *, dtype: torch.dtype | None = None, layout: Any = None,
         device: Any = None, pin_memory: Any = None) -> Sym:
    out = dtype or (torch.bool if isinstance(fill_value, bool) else _dtype(None, fill_value))
    check_scalar_fits(fill_value, out, "full()")
    return P.full(fill_value, tuple(size), out)


@lower(aten.linspace.default, static=("start", "end"))
def linspace(start: Any, end: Any, steps: int, *, dtype: torch.dtype | None = None, layout: Any = None,
             device: Any = None, pin_memory: Any = None) -> Sym:
    out = dtype or torch.get_default_dtype()
    if steps == 1:
        return P.full(start, (1,), out)
    # integer outputs: ATen converts the bounds to the integer type and steps in double
    compute = torch.float32 if out.is_floating_point else torch.float64
    if not out.is_floating_point:
        start, end = int(start), int(end)
    half = steps // 2
    ramp = P.iota((steps,), 0, compute)
    if out in (torch.bfloat16, torch.float16):  # ATen steps in the narrow type, rounding after each operation
        r = lambda v: P.convert(P.convert(v, out), torch.float32)  # noqa: E731
        lo_c, hi_c = r(P.const(float(start), torch.float32)), r(P.const(float(end), torch.float32))
        step_c = r(r(hi_c - lo_c) / r(P.const(float(steps - 1), torch.float32)))
        lo = r(P.broadcast_to(lo_c, ramp.shape) + r(P.broadcast_to(step_c, ramp.shape) * r(ramp)))
        back = r(P.full(float(steps - 1), ramp.shape, torch.float32) - ramp)
        hi = r(P.broadcast_to(hi_c, ramp.shape) - r(P.broadcast_to(step_c, ramp.shape) * back))
        return P.convert(P.where(P.compare("LT", ramp, float(half)), lo, hi), out)
    step = (end - start) / (steps - 1)
    lo = ramp * step + float(start)
    hi = float(end) - (float(steps - 1) - ramp) * step  # symmetric, as torch computes it
    y = P.where(P.compare("LT", ramp, float(half)), lo, hi)
    return P.convert(y, out) if out.is_floating_point else P.convert(P.emit1("trunc", [y]), out)


def _scalars(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """The Tensor overloads of linspace/logspace take 0-dim bounds: read them (a sync) and use the Scalar form."""
    return tuple(a.item() if isinstance(a, torch.Tensor) else a for a in args), kwargs


@lower(aten.linspace.Tensor_Tensor, aten.linspace.Tensor_Scalar, aten.linspace.Scalar_Tensor, prepare=_scalars,
       static=("start", "end"))
def linspace_tensor(start: Any, end: Any, steps: int, **kwargs: Any) -> Sym:
    return linspace(start, end, steps, **kwargs)


def _uniform(shape: tuple[int, ...], rng: Sym) -> Sym:
    return P.emit1("rng", [rng], shape=shape, dtype="float32", distribution="uniform")


@lower(aten.uniform_.default, random=True, static=("from", "to"))
def uniform_(self: Sym, from_: float = 0.0, to: float = 1.0, *, generator: Any = None, rng: Sym) -> Sym:
    u = _uniform(self.shape, rng)
    return P.convert(u * float(to - from_) + float(from_), self.dtype)


@lower(aten.normal_.default, random=True, static=("mean", "std"))
def normal_(self: Sym, mean: float = 0.0, std: float = 1.0, *, generator: Any = None, rng: Sym) -> Sym:
    z = P.emit1("rng", [rng], shape=self.shape, dtype="float32", distribution="normal")
    return P.convert(z * float(std) + float(mean), self.dtype)


@lower(aten.bernoulli_.float, random=True, static=("p",))
def bernoulli_(self: Sym, p: float = 0.5, *, generator: Any = None, rng: Sym) -> Sym:
    return P.convert(P.compare("LT", _uniform(self.shape, rng), float(p)), self.dtype)


@lower(aten.bernoulli_.Tensor, random=True)
def bernoulli_tensor_(self: Sym, p: Sym, *, generator: Any = None, rng: Sym) -> Sym:
    prob = P.broadcast_to(P.convert(p, torch.float32), self.shape)
    return P.convert(P.compare("LT", _uniform(self.shape, rng), prob), self.dtype)


@lower(aten.bernoulli.default, random=True)
def bernoulli(self: Sym, *, generator: Any = None, rng: Sym) -> Sym:
    return P.convert(P.compare("LT", _uniform(self.shape, rng), P.convert(self, torch.float32)), self.dtype)


@lower(aten.exponential_.default, random=True, static=("lambd",))
def exponential_(self: Sym, lambd: float = 1.0, *, generator: Any = None, rng: Sym) -> Sym:
    u = _uniform(self.shape, rng)
    return P.convert(-P.emit1("log_plus_one", [-u]) / float(lambd), self.dtype)


@lower(aten.eye.default, aten.eye.m)
def eye(n: int, m: int | None = None, *, dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
        pin_memory: Any = None) -> Sym:
    m = n if m is None else m
    diag = P.compare("EQ", P.iota((n, m), 0), P.iota((n, m), 1))
    return P.convert(diag, dtype or torch.get_default_dtype())


@lower(aten._efficientzerotensor.default)
def efficient_zero_tensor(size: list[int], *, dtype: torch.dtype | None = None, layout: Any = None,
                          device: Any = None, pin_memory: Any = None) -> Sym:
    """A materialized zero tensor (the ZeroTensor key's laziness is a memory optimization ATen makes on CPU)."""
    return P.full(0, tuple(size), dtype or torch.get_default_dtype())


def _tri_indices(row: int, col: int, offset: int, lower_: bool, dtype: torch.dtype | None) -> Sym:
    import numpy as np

    r, c = np.tril_indices(row, offset, col) if lower_ else np.triu_indices(row, offset, col)
    if r.size == 0:
        return P.full(0, (2, 0), dtype or torch.int64)
    return P.dense(np.stack([r, c]), dtype or torch.int64)


@lower(aten.tril_indices.default)
def tril_indices(row: int, col: int, offset: int = 0, *, dtype: torch.dtype | None = None, layout: Any = None,
                 device: Any = None, pin_memory: Any = None) -> Sym:
    return _tri_indices(row, col, offset, True, dtype)


@lower(aten.triu_indices.default)
def triu_indices(row: int, col: int, offset: int = 0, *, dtype: torch.dtype | None = None, layout: Any = None,
                 device: Any = None, pin_memory: Any = None) -> Sym:
    return _tri_indices(row, col, offset, False, dtype)
