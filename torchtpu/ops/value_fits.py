"""c10's checked Scalar conversion (c10::overflows, as dtypes.scalar_overflows for a Python scalar) for a 0-d value
tensor that a kernel reads with `value.item()` and stores into a tensor of another dtype (masked_fill_ with a value
tensor): data-dependent, so checked when the program runs (operand_checks.data_check), with CPU's words
"value cannot be converted to type uint8_t without overflow".
"""

from __future__ import annotations

import torch

from torchtpu import dtypes
from torchtpu.ops import operand_checks
from torchtpu.ops import prims as P
from torchtpu.ops.tracing import Sym


def _or(a: Sym | None, b: Sym) -> Sym:
    return b if a is None else P.emit1("or", [a, b])


def _real_overflows(v: Sym, dtype: torch.dtype) -> Sym | None:
    """Where the real value `v` (as item() reads it: int64, or a float kept in its own type) overflows `dtype`;
    None where it never can."""
    if dtype.is_floating_point or dtype.is_complex:
        part = {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype, dtype)
        if part == torch.float64 or v.dtype == torch.bool:
            return None
        big = torch.finfo(part).max
        if not v.dtype.is_floating_point:  # an integer: only float16's range is narrower than int64's
            return P.compare("GT", P.emit1("abs", [P.convert(v, torch.float64)]), big) if big < 2.0 ** 63 else None
        if torch.finfo(v.dtype).max <= big:
            return None
        a = P.emit1("abs", [P.convert(v, torch.float64)])
        return P.emit1("and", [P.compare("LT", a, float("inf")), P.compare("GT", a, big)])
    if dtype == torch.bool or v.dtype == torch.bool:
        return None
    info = torch.iinfo(dtype)
    if v.dtype.is_floating_point:  # NaN and infinities overflow; bounds compared in double (int64's max: 2**63)
        x = P.convert(v, torch.float64)
        inside = P.emit1("and", [P.compare("GE", x, float(info.min)), P.compare("LE", x, float(info.max))])
        return P.emit1("not", [inside])  # also NaN
    x = P.convert(v, torch.int64)
    low = -info.max if info.min == 0 else info.min  # a negative integer may wrap into an unsigned type
    if dtype == torch.int64:
        return None
    return P.emit1("or", [P.compare("LT", x, low), P.compare("GT", x, info.max)])


def overflows(value: Sym, dtype: torch.dtype) -> Sym | None:
    """A bool Sym of value's shape: where c10's conversion of value.item() to `dtype` overflows; None if never."""
    if dtype == torch.bool:  # c10 converts any Scalar to bool unchecked
        return None
    if not value.dtype.is_complex:
        return _real_overflows(value, dtype)
    part = torch.float64 if value.dtype == torch.complex128 else torch.float32
    re, im = P.emit1("real", [value]), P.emit1("imag", [value])
    assert re.dtype == part
    if dtype.is_complex:
        bad = _real_overflows(re, dtype)
        other = _real_overflows(im, dtype)
        return bad if other is None else _or(bad, other)
    bad = P.compare("NE", im, 0.0)
    other = _real_overflows(re, dtype)
    return bad if other is None else _or(bad, other)


def check_fits(value: Sym, dtype: torch.dtype, result: Sym) -> Sym:
    """`result`, after a check (when the program runs) that the 0-d `value` converts to `dtype` without overflow:
    CPU's RuntimeError otherwise."""
    bad = overflows(value, dtype)
    if bad is None or value.numel() == 0:
        return result
    name = dtypes._C_NAMES.get(dtype, str(dtype))
    zero = operand_checks.data_check(bad, f"value cannot be converted to type {name} without overflow")
    return operand_checks.tie(result, zero)
