"""random_(from, to) and random_(to): ATen's bounds (DistributionTemplates.h: `update_from`/`update_to` for
floating dtypes, `check_from_to_in_range` with its errors and precision warnings, the full-range case) and exact
integers: each value is from + (r mod range) with r a 64-bit word made of three 23-bit draws (the simulator's
and the PJRT driver's uniform floats both hold 23 exact random bits), so every value lies in [from, to) for any
dtype and range, as CPU's kernel; the draws differ from CPU's generator (as CUDA's do)."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import torch

from torchtpu import dtypes
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# std::numeric_limits<scalar_t>::digits (mantissa bits with the implicit one)
_DIGITS = {torch.float16: 11, torch.bfloat16: 8, torch.float32: 24, torch.float64: 53}
# the C++ type names ATen's messages print (caffe2::TypeMeta)
_CPP_NAMES = {torch.int8: "signed char", torch.uint8: "unsigned char", torch.int16: "short int", torch.int32: "int",
              torch.int64: "long int", torch.float16: "c10::Half", torch.bfloat16: "c10::BFloat16",
              torch.float32: "float", torch.float64: "double", torch.bool: "bool"}
# random_full_64_bits_range_kernel's dtypes (from = int64 min, to = None)
_FULL_RANGE = (torch.int64, torch.float64, torch.float32, torch.bfloat16)


def _as_int64(value: int, dtype: torch.dtype) -> int:
    """static_cast<int64_t>(static_cast<scalar_t>(value)): a result past int64's range is what x86 gives (min)."""
    f = torch.tensor(value, dtype=torch.int64).to(dtype).item()
    return int(f) if -(2.0**63) <= f < 2.0**63 else INT64_MIN


def _update_from(frm: int, dtype: torch.dtype) -> int:
    plus_1 = _as_int64(frm + 1, dtype)
    if plus_1 < frm:
        n = max(abs(frm + 1).bit_length() - 1, 0)
        frm = plus_1 + (1 << (n - _DIGITS[dtype] + 1))
    return frm


def _update_to(to: int, dtype: torch.dtype) -> int:
    minus_1 = _as_int64(to - 1, dtype)
    if minus_1 >= to:
        n = max(abs(to - 1).bit_length() - 1, 0)
        to = minus_1 - (1 << (n - _DIGITS[dtype] + 1))
    return to


def _user_warning(message: str) -> None:
    from torchtpu.execution.user_frames import PACKAGE_DIRS

    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(PACKAGE_DIRS):
        frame = frame.f_back
    warnings.warn_explicit(message, UserWarning, frame.f_code.co_filename, frame.f_lineno,
                           module=frame.f_globals.get("__name__"),
                           registry=frame.f_globals.setdefault("__warningregistry__", {}))


def _check_in_range(frm: int, to_inc: int, dtype: torch.dtype, warn: bool) -> None:
    name = _CPP_NAMES[dtype]
    if dtype.is_floating_point:
        lo, hi = float(torch.finfo(dtype).min), float(torch.finfo(dtype).max)
    else:
        info = torch.iinfo(dtype) if dtype != torch.bool else None
        lo, hi = (info.min, info.max) if info is not None else (0, 1)
    for value, what in ((frm, "from"), (to_inc, "to - 1")):
        if not lo <= value <= hi:
            raise RuntimeError(f"{what} is out of bounds for {name}")
    if dtype.is_floating_point and warn:
        digits = _DIGITS[dtype]
        for value, what in ((frm, "from"), (to_inc, "to - 1")):
            if value < -(1 << digits) or value > (1 << digits):
                _user_warning(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                              f"{name} can support discrete uniform distribution only within this range. This "
                              "warning will become an error in version 1.7 release, please fix the code in advance")


def bounds(dtype: torch.dtype, frm: int, to: int | None, warn: bool = False,
           op: str = "aten::random_.from") -> tuple[int, int]:
    """(from, range) of random_(from, to) on `dtype` as ATen's random_from_to_impl computes them (range up to
    2**64: the full int64 range); raises ATen's errors, and with `warn` its precision warnings. A dtype the device
    stores as bytes only (uint16/32/64) is refused as every op refuses it (torchtpu.dtypes, naming `op`)."""
    if dtype in dtypes.STORAGE_ONLY:
        dtypes.check_compute(dtype, op)
    if dtype not in _CPP_NAMES:
        raise RuntimeError("random_from_to_impl handles only integral, floating-point and boolean types")
    if to is not None:
        if frm >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={frm} >= to={to}")
        if dtype.is_floating_point:
            frm, to = _update_from(frm, dtype), _update_to(to, dtype)
            if frm >= to:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but "
                                   f"got from={frm} >= to={to}")
        _check_in_range(frm, to - 1, dtype, warn)
        return frm, to - frm
    if frm == INT64_MIN:
        if dtype in (torch.float16, torch.bool):  # ATen's dispatch macro has no case for them
            name = "Half" if dtype == torch.float16 else "Bool"
            raise NotImplementedError(f'"random_full_64_bits_range_kernel" not implemented for \'{name}\'')
        if dtype not in _FULL_RANGE:
            raise RuntimeError("random_full_64_bits_range_kernel handles only int64, double, float and bfloat16, got "
                               f"{dtype}")
        return frm, 2**64
    if dtype.is_floating_point:
        to_inc = min(1 << _DIGITS[dtype], INT64_MAX)
        frm = _update_from(frm, dtype)
        if frm >= to_inc:
            raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to "
                               f"dtype, but got from={frm} > to_inc={to_inc}")
    else:
        to_inc = 1 if dtype == torch.bool else torch.iinfo(dtype).max
    _check_in_range(frm, to_inc, dtype, warn)
    return frm, to_inc - frm + 1


def _checked_from(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """random_.from's prepare step: ATen's checks and warnings on every call (the trace is cached); the
    arguments are left as they are."""
    values = {**dict(zip(("self", "from", "to"), args)), **kwargs}
    bounds(values["self"].dtype, values["from"], values.get("to"), warn=True, op="aten::random_.from")
    return args, kwargs


def _checked_to(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    values = {**dict(zip(("self", "to"), args)), **kwargs}
    bounds(values["self"].dtype, 0, values["to"], warn=True, op="aten::random_.to")
    return args, kwargs


def _wrap(v: int) -> int:
    """`v` (mod 2**64) as a signed int64."""
    v &= 2**64 - 1
    return v - 2**64 if v >= 2**63 else v


def _draw_int64(shape: tuple[int, ...], rng: Sym) -> Sym:
    """A uniform 64-bit word per element (int64, wrapping): three 23-bit draws shifted into place."""
    u = P.emit1("rng", [rng], shape=(3, *shape), dtype="float32", distribution="uniform")
    bits = P.convert(P.emit1("floor", [u * float(1 << 23)]), torch.int64)
    parts = [P.reshape(P.slice_dim(bits, 0, i, i + 1), shape) for i in range(3)]
    word = parts[2]
    for part, shift in ((parts[1], 23), (parts[0], 46)):
        word = P.emit1("xor", [word, P.emit1("shift_left", [part, P.full(shift, shape, torch.int64)])])
    return word


def _values(self: Sym, frm: int, span: int, rng: Sym) -> Sym:
    shape = self.shape
    word = _draw_int64(shape, rng)
    if span == 2**64:
        v = word
    elif span > 2**63:  # r mod span for r < 2**64 < 2 * span: r or r - span, compared as unsigned
        sign = P.full(INT64_MIN, shape, torch.int64)
        below = P.compare("LT", P.emit1("xor", [word, sign]), P.full(_wrap(span) ^ INT64_MIN, shape, torch.int64))
        v = P.where(below, word, word - P.full(_wrap(span), shape, torch.int64))
    else:
        v = P.emit1("and", [word, P.full(INT64_MAX, shape, torch.int64)])
        if span < 2**63:
            v = P.emit1("remainder", [v, P.full(span, shape, torch.int64)])
    v = v + P.full(frm, shape, torch.int64)  # wraps back into [from, to) where span > 2**63
    return P.convert(v, self.dtype)


@lower(getattr(aten.random_, "from"), random=True, prepare=_checked_from)
def random_from(self: Sym, from_: int, to: int | None, *, generator: Any = None, rng: Sym) -> Sym:
    frm, span = bounds(self.dtype, from_, to)
    return _values(self, frm, span, rng)


@lower(aten.random_.to, random=True, prepare=_checked_to)
def random_to(self: Sym, to: int, *, generator: Any = None, rng: Sym) -> Sym:
    frm, span = bounds(self.dtype, 0, to)
    return _values(self, frm, span, rng)
