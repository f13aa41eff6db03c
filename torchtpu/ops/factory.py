"""Lowerings of factories and random ops: arange, full, linspace, and the RNG-driven uniform_, normal_,
bernoulli (randint, randn and rand reach these through their composite implementations; random_ is in
ops/random_ints.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from torchtpu.dtypes import check_scalar_fits, checked_scalar
from torchtpu.ops import prims as P
from torchtpu.ops import sampler_checks
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym, aten_type_name

aten = torch.ops.aten


def _dtype(dtype: torch.dtype | None, *values: Any) -> torch.dtype:
    if dtype is not None:
        return dtype
    if any(isinstance(v, float) for v in values):
        return torch.get_default_dtype()
    return torch.int64


def _default_complex() -> torch.dtype:
    """The complex dtype of the default float dtype (ATen's default complex dtype)."""
    return torch.complex128 if torch.get_default_dtype() == torch.float64 else torch.complex64


def _full_dtype(fill_value: Any) -> torch.dtype:
    """ATen's infer_full_dtype: bool, int64, the default float dtype, or its complex counterpart for a complex
    fill value (torch.full((), 1j) is complex64)."""
    if isinstance(fill_value, bool):
        return torch.bool
    if isinstance(fill_value, complex):
        return _default_complex()
    return _dtype(None, fill_value)


def _c_stream(v: Any) -> str:
    """A bound as ATen's message prints it (C++'s stream: %g for a double)."""
    return f"{v:g}" if isinstance(v, float) else str(v)


def _check_range(start: Any, end: Any, step: Any) -> None:
    """ATen's arange checks, in its order: a nonzero step, finite bounds, the step's sign."""
    if not (step > 0 or step < 0):  # a NaN step too
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {_c_stream(start)} -> {_c_stream(end)}")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")


@lower(aten.arange.start_step, static=("start", "end", "step"))
def arange(start: Any, end: Any, step: Any = 1, *, dtype: torch.dtype | None = None, layout: Any = None,
           device: Any = None, pin_memory: Any = None) -> Sym:
    out = _dtype(dtype, start, end, step)
    if out == torch.bool or out.is_complex:  # ATen dispatches over the real types only
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{aten_type_name(out)}\'')
    _check_range(start, end, step)
    if out == torch.int64:  # ATen's size for int64 alone: integer arithmetic on the truncated bounds
        start, end, step = int(start), int(end), int(step)
        if step == 0:  # the kernel's TORCH_CHECK_VALUE on the truncated step (a ValueError)
            raise ValueError("step must be nonzero")
        sgn = (step > 0) - (step < 0)
        num = end - start + step - sgn
        n = max(0, abs(num) // abs(step) * (1 if (num >= 0) == (step > 0) else -1))
    elif not out.is_floating_point:  # other integer types: the size from the bounds as doubles, the values from
        n = max(0, math.ceil((float(end) - float(start)) / float(step)))  # the truncated bounds (int64 accumulator)
        start, step = int(start), int(step)  # a step truncated to 0 repeats start (fuzz seed 70: int16, -0.931)
    else:
        size = math.ceil((end - start) / step)
        if size > 2**63 - 1:
            raise RuntimeError("invalid size, possible overflow?")
        n = max(0, size)
    ramp = P.iota((n,), 0, torch.int64 if not out.is_floating_point else torch.float32)
    if out.is_floating_point:
        return P.convert(ramp * float(step) + float(start), out)
    return P.convert(ramp * int(step) + int(start), out)


@lower(aten.full.default, static=("fill_value",))
def full(size: list[int], fill_value: Any, *, dtype: torch.dtype | None = None, layout: Any = None,
         device: Any = None, pin_memory: Any = None) -> Sym:
    out = dtype or _full_dtype(fill_value)
    check_scalar_fits(fill_value, out, "full()")
    return P.full(fill_value, tuple(size), out)


def _split(a: float) -> tuple[float, float]:
    """Veltkamp's split of a double into a 26-bit high part and the rest (Dekker 1971, "A floating-point technique
    for extending the available precision", the 2**27 + 1 factor for 53-bit significands)."""
    c = 134217729.0 * a
    hi = c - (c - a)
    return hi, a - hi


def _fma64(c: float, a: float, k: Sym) -> Sym:
    """c + a * k rounded once, in float64 (k: integers below 2**26, a float64 ramp): CPU's `start + step * idx`,
    which the compiler contracts to one fused multiply-add. Dekker's exact product (k needs no split below 2**26)
    and Knuth's TwoSum of c and the product; the three parts summed smallest first. Where that is not finite (an
    infinite bound or step: the error terms are inf - inf), the fused result is IEEE's c + a * k itself."""
    a_hi, a_lo = _split(a)
    p = k * a
    err = (k * a_hi - p) + k * a_lo
    s = p + c
    bb = s - c
    t = (P.full(c, s.shape, torch.float64) - (s - bb)) + (p - bb)
    exact = s + (t + err)
    return P.where(P.emit1("is_finite", [exact]), exact, s)


def _ramp(start: float, end: float, step: float, steps: int) -> Sym:
    """ATen's linspace in float64 (RangeFactoriesKernel.cpp): start + step * i below steps // 2, end - step *
    (steps - 1 - i) from there, each a fused multiply-add."""
    i = P.iota((steps,), 0, torch.float64)
    lo = _fma64(start, step, i)
    hi = _fma64(end, -step, P.full(float(steps - 1), (steps,), torch.float64) - i)
    return P.where(P.compare("LT", i, float(steps // 2)), lo, hi)


def _linspace_dtype(start: Any, end: Any, dtype: torch.dtype | None, name: str) -> torch.dtype:
    """ATen's linspace_logspace_infer_options: a complex bound makes the default complex dtype, which a real
    `dtype=` cannot hold."""
    if isinstance(start, complex) or isinstance(end, complex):
        inferred = _default_complex()
        if dtype is not None and not dtype.is_complex:
            raise RuntimeError(f"{name}: inferred dtype {aten_type_name(inferred)} can't be safely cast to passed "
                               f"dtype {aten_type_name(dtype)}")
        return dtype or inferred
    return dtype or torch.get_default_dtype()


def _real_linspace(start: float, end: float, steps: int, out: torch.dtype) -> Sym:
    """One real component of linspace, steps >= 2, as CPU computes it in `out`'s type."""
    if out in (torch.bfloat16, torch.float16):  # ATen steps in the narrow type, rounding after each operation
        ramp = P.iota((steps,), 0, torch.float32)
        r = lambda v: P.convert(P.convert(v, out), torch.float32)  # noqa: E731
        lo_c, hi_c = r(P.const(float(start), torch.float32)), r(P.const(float(end), torch.float32))
        step_c = r(r(hi_c - lo_c) / r(P.const(float(steps - 1), torch.float32)))
        lo = r(P.broadcast_to(lo_c, ramp.shape) + r(P.broadcast_to(step_c, ramp.shape) * r(ramp)))
        back = r(P.full(float(steps - 1), ramp.shape, torch.float32) - ramp)
        hi = r(P.broadcast_to(hi_c, ramp.shape) - r(P.broadcast_to(step_c, ramp.shape) * back))
        return P.convert(P.where(P.compare("LT", ramp, float(steps // 2)), lo, hi), out)
    if out.is_floating_point:  # start, end and step in the output type; the ramp's fma rounded once to it
        cast = np.float32 if out == torch.float32 else np.float64
        s, e = cast(start), cast(end)
        step = (e - s) / cast(steps - 1)
        return P.convert(_ramp(float(s), float(e), float(step), steps), out)
    # integer outputs: the bounds in the integer type, the step and the ramp in double, truncated
    s, e = P._wrap_int(int(checked_scalar(start, out)), out), P._wrap_int(int(checked_scalar(end, out)), out)
    return P.convert(P.emit1("trunc", [_ramp(float(s), float(e), (float(e) - float(s)) / (steps - 1), steps)]), out)


@lower(aten.linspace.default, static=("start", "end"))
def linspace(start: Any, end: Any, steps: int, *, dtype: torch.dtype | None = None, layout: Any = None,
             device: Any = None, pin_memory: Any = None) -> Sym:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    out = _linspace_dtype(start, end, dtype, "torch.linspace()")
    if steps <= 1:
        return P.full(start if steps else 0, (steps,), out)
    if out.is_complex:
        part = torch.float32 if out == torch.complex64 else torch.float64
        start, end = complex(start), complex(end)
        re = _real_linspace(start.real, end.real, steps, part)
        im = _real_linspace(start.imag, end.imag, steps, part)
        return P.convert(P.emit1("complex", [re, im]), out)
    return _real_linspace(start, end, steps, out)


def _scalars(args: tuple, kwargs: dict[str, Any], name: str = "linspace") -> tuple[tuple, dict[str, Any]]:
    """The Tensor overloads of linspace/logspace take 0-dim bounds (ATen's check, in its words): read them (a sync)
    and use the Scalar form."""
    given = [(which, a.dim()) for which, a in zip(("start", "end"), args[:2]) if isinstance(a, torch.Tensor)]
    if any(d != 0 for _, d in given):
        got = " and ".join(f"{which} with {d} dimension(s)" for which, d in given)
        raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got {got}.")
    return tuple(a.item() if isinstance(a, torch.Tensor) else a for a in args), kwargs


@lower(aten.linspace.Tensor_Tensor, aten.linspace.Tensor_Scalar, aten.linspace.Scalar_Tensor, prepare=_scalars,
       static=("start", "end"))
def linspace_tensor(start: Any, end: Any, steps: int, **kwargs: Any) -> Sym:
    return linspace(start, end, steps, **kwargs)


def _uniform(shape: tuple[int, ...], rng: Sym) -> Sym:
    return P.emit1("rng", [rng], shape=shape, dtype="float32", distribution="uniform")


_C_NAMES = {torch.float16: "c10::Half", torch.bfloat16: "c10::BFloat16", torch.float32: "float",
            torch.float64: "double"}


def _check_uniform_bounds(dtype: torch.dtype, from_: float, to: float) -> None:
    """ATen's uniform_impl_ checks (DistributionTemplates.h): both bounds within the dtype, from <= to, and to - from
    (in double) within its max; doubles printed as C++'s stream does (%g)."""
    if not dtype.is_floating_point:  # ATen dispatches the check over floating types only
        name = aten_type_name(dtype)
        raise NotImplementedError(f'"check_uniform_bounds" not implemented for \'{name}\'')
    info = torch.finfo(dtype)
    for value, name in ((from_, "from"), (to, "to")):
        if not info.min <= value <= info.max:
            raise RuntimeError(f"{name} is out of bounds for {_C_NAMES.get(dtype, str(dtype))}")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_:g} > to={to:g}")
    if float(to) - float(from_) > info.max:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{aten_type_name(dtype)}>::max(), but "
                           f"found to={to:g} and from={from_:g} which result in to-from to exceed the limit")


_PART = {torch.complex64: torch.float32, torch.complex32: torch.float16}  # a complex draw's real view


def _wide(v: Sym) -> Sym:
    """A complex draw's parts as the IR's `complex` takes them (complex32's float16 parts in float32, exact)."""
    return P.convert(v, torch.float32) if v.dtype == torch.float16 else v


@lower(aten.uniform_.default, random=True, static=("from", "to"))
def uniform_(self: Sym, from_: float = 0.0, to: float = 1.0, *, generator: Any = None, rng: Sym) -> Sym:
    if self.dtype.is_complex:  # ATen draws the real view: both parts, the bounds checked in the part's dtype
        part = _PART.get(self.dtype, torch.float64)
        shape = (*self.shape, 2)
        v = _wide(_uniform_of(shape, part, from_, to, rng))
        re = P.reshape(P.slice_dim(v, len(shape) - 1, 0, 1), self.shape)
        im = P.reshape(P.slice_dim(v, len(shape) - 1, 1, 2), self.shape)
        return P.convert(P.emit1("complex", [re, im]), self.dtype)
    return _uniform_of(self.shape, self.dtype, from_, to, rng)


def _uniform_of(shape: tuple[int, ...], dtype: torch.dtype, from_: float, to: float, rng: Sym) -> Sym:
    _check_uniform_bounds(dtype, float(from_), float(to))
    u = _uniform(shape, rng)
    if dtype == torch.float64:  # the range may exceed float32's (CPU draws in double)
        return P.convert(u, torch.float64) * (float(to) - float(from_)) + float(from_)
    return P.convert(u * float(to - from_) + float(from_), dtype)


@lower(aten.normal_.default, random=True, static=("mean", "std"))
def normal_(self: Sym, mean: float = 0.0, std: float = 1.0, *, generator: Any = None, rng: Sym) -> Sym:
    if not std >= 0.0:  # a NaN std too
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    if self.numel() == 0:  # no element, no kernel dispatch (CPU fills an empty uint8 tensor without refusing)
        return self
    if not (self.dtype.is_floating_point or self.dtype.is_complex):  # ATen dispatches over floating types only
        raise NotImplementedError(f'"normal_kernel_cpu" not implemented for \'{aten_type_name(self.dtype)}\'')
    if self.dtype.is_complex:  # ATen draws the real view: both parts with std / sqrt(2), each shifted by mean
        part = _PART.get(self.dtype, torch.float64)
        shape = (*self.shape, 2)
        z = P.emit1("rng", [rng], shape=shape, dtype="float32", distribution="normal")
        v = _wide(P.convert(z * float(std / math.sqrt(2.0)) + float(mean), part))
        re = P.reshape(P.slice_dim(v, len(shape) - 1, 0, 1), self.shape)
        im = P.reshape(P.slice_dim(v, len(shape) - 1, 1, 2), self.shape)
        return P.convert(P.emit1("complex", [re, im]), self.dtype)
    z = P.emit1("rng", [rng], shape=self.shape, dtype="float32", distribution="normal")
    return P.convert(z * float(std) + float(mean), self.dtype)


@lower(aten.bernoulli_.float, random=True, static=("p",))
def bernoulli_(self: Sym, p: float = 0.5, *, generator: Any = None, rng: Sym) -> Sym:
    sampler_checks.check_bernoulli(p)
    return P.convert(P.compare("LT", _uniform(self.shape, rng), float(p)), self.dtype)


@lower(aten.bernoulli_.Tensor, random=True)
def bernoulli_tensor_(self: Sym, p: Sym, *, generator: Any = None, rng: Sym) -> Sym:
    prob = sampler_checks.checked_bernoulli_probs(P.broadcast_to(P.convert(p, torch.float32), self.shape))
    return P.convert(P.compare("LT", _uniform(self.shape, rng), prob), self.dtype)


@lower(aten.bernoulli.default, random=True)
def bernoulli(self: Sym, *, generator: Any = None, rng: Sym) -> Sym:
    prob = sampler_checks.checked_bernoulli_probs(P.convert(self, torch.float32))
    return P.convert(P.compare("LT", _uniform(self.shape, rng), prob), self.dtype)


@lower(aten.exponential_.default, random=True, static=("lambd",))
def exponential_(self: Sym, lambd: float = 1.0, *, generator: Any = None, rng: Sym) -> Sym:
    sampler_checks.check_exponential(lambd)
    u = _uniform(self.shape, rng)
    return P.convert(-P.emit1("log_plus_one", [-u]) / float(lambd), self.dtype)


@lower(aten.eye.default, aten.eye.m)
def eye(n: int, m: int | None = None, *, dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
        pin_memory: Any = None) -> Sym:
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    m = n if m is None else m
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
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
