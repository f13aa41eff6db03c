"""Lowering of logspace: CPU's kernel (ATen's RangeFactories.cpp logspace_out) bit for bit for real dtypes.

CPU casts start and end to the output type, takes step = double(end - start) / (steps - 1) (the difference in the
output type: a float32 subtraction for float32, the narrow type's rounding for float16/bfloat16, C's int
arithmetic for integers), and writes `pow(base, start + step * i)` below steps // 2 and `pow(base, end - step *
(steps - 1 - i))` from there, each exponent a double multiply and add (that file is built without fused
multiply-adds) and each power C's double `pow`, converted to the output type (float16/bfloat16 through float, an
integer by truncation toward zero). The device's power is not C's `pow` to the last bit (numpy's vectorized
power differs from libm by an ulp here and there), so the values are computed at trace time on the host with
libm's pow (Python's math.pow) and uploaded as a constant: logspace's arguments are all static. Complex outputs
keep the composite form (linspace, then base ** it): CPU's complex kernel is libstdc++'s complex pow."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import torch

from torchtpu.dtypes import checked_scalar
from torchtpu.ops import prims as P
from torchtpu.ops.factory import _linspace_dtype, _scalars, linspace
from torchtpu.ops.registry import OP_TABLE, lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten

_NUMPY_INT = {torch.int64: np.int64, torch.int32: np.int32, torch.int16: np.int16, torch.int8: np.int8,
              torch.uint8: np.uint8}


def c_pow(base: float, exponent: float) -> float:
    """C's pow(base, exponent) in double (libm, as math.pow), with its IEEE results where Python raises: an
    overflow is an infinity (negative for a negative base and an odd integer exponent), a zero base to a negative
    power C's pole, +-inf (-inf for -0.0 and an odd integer exponent: Python raises, tpu gave NaN where CPU gives
    inf, fuzz seed 7, logspace base 0), any other domain error NaN."""
    odd = exponent.is_integer() and abs(exponent) < 2.0**53 and int(exponent) % 2 == 1
    try:
        return math.pow(base, exponent)
    except OverflowError:
        return -math.inf if base < 0 and odd else math.inf
    except ValueError:
        if base == 0 and exponent < 0:
            return -math.inf if math.copysign(1.0, base) < 0 and odd else math.inf
        return math.nan


def _narrow(value: float, dtype: torch.dtype) -> float:
    """`value` as C++ converts a double to `dtype` (float16 and bfloat16 through float), back as a double."""
    if dtype == torch.float64:
        return float(value)
    as_float = np.float32(value)
    if dtype == torch.float32:
        return float(as_float)
    return float(torch.tensor(as_float).to(dtype).item())


def _bound(value: Any, dtype: torch.dtype) -> float | int:
    """ATen's Scalar.to<scalar_t>(): a float rounded to `dtype`, an integer wrapped to its width."""
    if dtype.is_floating_point:
        return _narrow(float(value), dtype)
    return P._wrap_int(int(value), dtype)


def _difference(start: float | int, end: float | int, dtype: torch.dtype) -> float:
    """`end - start` in the output type, as C++ evaluates it, then as a double."""
    if dtype.is_floating_point:
        if dtype == torch.float64:
            return end - start
        if dtype == torch.float32:
            return float(np.float32(end) - np.float32(start))
        return _narrow(float(np.float32(end) - np.float32(start)), dtype)
    diff = int(end) - int(start)  # int8/int16/uint8 promote to int: no wrap there
    return float(P._wrap_int(diff, dtype) if dtype in (torch.int32, torch.int64) else diff)


def _to_integer(values: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """x86's truncating double -> integer conversion (cvttsd2si: 64-bit for int64, 32-bit for the narrower types,
    whose low bits C++ then keeps); NaN and out-of-range values give the conversion's "integer indefinite"
    (the most negative value of its width)."""
    width = 64 if dtype == torch.int64 else 32
    low = -(2 ** (width - 1))
    finite = np.isfinite(values) & (values >= low) & (values < -low)
    wide = np.where(finite, np.trunc(np.where(finite, values, 0.0)), 0.0).astype(np.int64)
    wide = np.where(finite, wide, low)
    return wide.astype(_NUMPY_INT[dtype]).astype(np.int64)  # the low bits, as C++'s narrowing keeps them


def host_values(start: Any, end: Any, steps: int, base: float, dtype: torch.dtype) -> np.ndarray:
    """CPU's logspace values for a real `dtype`, steps >= 2, as float64 (floating dtypes) or int64."""
    s, e = _bound(start, dtype), _bound(end, dtype)
    step = _difference(s, e, dtype) / (steps - 1)
    half = steps // 2
    i = np.arange(steps, dtype=np.float64)  # numpy multiplies and adds with a rounding each, as that file
    exponents = np.where(i < half, float(s) + step * i, float(e) - step * (steps - 1 - i))
    try:  # libm's pow through math.pow; where one raises (an overflow, a domain error) c_pow's IEEE results
        values = np.fromiter(map(math.pow, itertools.repeat(float(base)), exponents.tolist()), np.float64, steps)
    except (OverflowError, ValueError):
        values = np.fromiter((c_pow(float(base), x) for x in exponents.tolist()), np.float64, steps)
    if dtype.is_floating_point:
        return values
    return _to_integer(values, dtype)


_C_TYPE = {torch.int64: "int64_t", torch.int32: "int", torch.int16: "int16_t", torch.int8: "int8_t",
           torch.uint8: "uint8_t", torch.float32: "float"}


def _fill_value(value: float, dtype: torch.dtype) -> np.ndarray:
    """ATen's fill_ of a double Scalar: checked against the range of an integer or float32 output (float16 and
    bfloat16 take an infinity, float64 anything)."""
    if dtype in _NUMPY_INT:
        info = torch.iinfo(dtype)
        overflows = not info.min <= value <= info.max  # NaN too (c10's overflows<int>)
    else:
        overflows = dtype == torch.float32 and math.isfinite(value) and abs(value) > torch.finfo(dtype).max
    if overflows:
        raise RuntimeError(f"value cannot be converted to type {_C_TYPE[dtype]} without overflow")
    values = np.array([value], dtype=np.float64)
    return values if dtype.is_floating_point else _to_integer(values, dtype)


def _result(values: np.ndarray, dtype: torch.dtype) -> Sym:
    """The host values as a device constant of `dtype` (a double narrowed as C++ does: float16/bfloat16 via
    float)."""
    if dtype in (torch.float16, torch.bfloat16):
        return P.convert(P.dense(values.astype(np.float32), torch.float32), dtype)
    if dtype == torch.float32:
        return P.dense(values.astype(np.float32), torch.float32)
    return P.dense(values, dtype)


@lower(aten.logspace.default, static=("start", "end", "base"))
def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: torch.dtype | None = None,
             layout: Any = None, device: Any = None, pin_memory: Any = None) -> Sym:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    out = _linspace_dtype(start, end, dtype, "torch.logspace()")
    if out == torch.bool and steps <= 1:  # no dispatch: an empty result, or pow(base, start) filled (nonzero: True)
        return P.full(steps == 1 and c_pow(float(base), float(start)) != 0, (steps,), out)
    if out == torch.bool or not (out.is_floating_point or out.is_complex or out in _NUMPY_INT):
        raise NotImplementedError(f'"logspace_cpu" not implemented for \'{str(out).removeprefix("torch.").title()}\'')
    if steps == 0:
        return P.full(0, (0,), out)
    if steps > 1:  # the kernel's start.to<scalar_t>() and end's (c10's checked_convert; steps 1 fills instead)
        checked_scalar(start, out)
        checked_scalar(end, out)
    if out.is_complex:
        ramp = linspace(start, end, steps, dtype=out)
        return P.convert(OP_TABLE[aten.pow.Scalar](float(base), ramp), out)
    if steps == 1:  # ATen fills pow(base, double(start)) without casting start first
        return _result(_fill_value(c_pow(float(base), float(start)), out), out)
    return _result(host_values(start, end, steps, base, out), out)


@lower(aten.logspace.Tensor_Tensor, aten.logspace.Tensor_Scalar, aten.logspace.Scalar_Tensor,
       prepare=lambda a, k: _scalars(a, k, "logspace"), static=("start", "end", "base"))
def logspace_tensor(start: Any, end: Any, steps: int, base: float = 10.0, **kwargs: Any) -> Sym:
    return logspace(start, end, steps, base, **kwargs)
