"""ldexp on "tpu" as on CPU. ATen's ldexp / ldexp.out / ldexp_ are CompositeExplicitAutograd kernels: for a floating
self and an integer or bool exponent they run the device's ldexp kernel where it has one (CPU, CUDA), else
self * 2**other. PrivateUse1 has none, so tpu took the product: a bool exponent CPU's
kernel refuses ("ldexp_cpu_exp" not implemented for 'Bool') was computed, and an exponent whose power of two
overflows or underflows self's dtype gave inf, 0 or NaN where CPU's std::ldexp(double(x), int(exp)) is finite
(float32 2**20 * 2**-150: CPU 7.3e-40, tpu 0; float16 2**-10 * 2**16: CPU 64, tpu inf).

`register` puts a PrivateUse1 kernel on each overload (the Autograd kernel above it is ATen's, so gradients are
unchanged): CPU's kernel path computed exactly (float64 frexp, one scaling by a power of two, rounded through float32
as c10's casts from double do), every other call ATen's composite itself. `BOUND_CHECKS` (merged by
ops/arg_order_checks.py) refuses the bool exponent in eager mode and while torch.compile's fake tensors trace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchtpu.dtypes import FLOATS

aten = torch.ops.aten
Bound = dict[str, Any]


def _kernel_path(self: Any, other: Any) -> bool:
    """Whether ATen's ldexp takes the device kernel: a floating self and an integer or bool exponent (torch 2.13's
    ldexp_out does not look at the out's dtype: CPU's kernel then fails an internal assert for an out of another
    dtype, a CPU bug listed in known.json; tpu casts the kernel's result into it)."""
    return self.dtype in FLOATS and not (other.dtype.is_floating_point or other.dtype.is_complex)


def _broadcast(self: Any, other: Any) -> list[int] | None:
    try:
        return [int(v) for v in torch.broadcast_shapes(tuple(self.shape), tuple(other.shape))]
    except RuntimeError:
        return None  # the iterator's shape error comes first (left to the op)


def _check(a: Bound) -> None:
    self, other, out = a.get("self"), a.get("other"), a.get("out")
    if not hasattr(self, "dtype") or not hasattr(other, "dtype"):
        return
    result = out.dtype if out is not None else self.dtype
    if out is not None and not (result.is_floating_point or result.is_complex):
        return  # ldexp_out's own cast check first (the composite's words)
    if not _kernel_path(self, other) or other.dtype != torch.bool:
        return
    shape = _broadcast(self, other)
    if shape is None or (a.get("_inplace") and shape != [int(v) for v in self.shape]):
        return
    raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")


def _check_inplace(a: Bound) -> None:
    _check({**a, "_inplace": True})


BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {"ldexp": _check, "ldexp_": _check_inplace}

_COMPOSITE = torch._C.DispatchKey.CompositeExplicitAutograd


def _exact(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """CPU's ldexp kernel: static_cast<float_t>(std::ldexp(double(x), exp)), exp converted to int (an int64's low
    32 bits). x = m * 2**k (frexp, exact), so x * 2**exp is m times one power of two, rounded once; past 2**1000
    the power is split (m * 2**1000 is exact), below 2**-1080 it is 0 (the product rounds to +-0)."""
    x = self.to(torch.float64)
    m, k = torch.frexp(x)
    power = (k.to(torch.float64) + other.to(torch.int32).to(torch.float64)).clamp(-1080.0, 2100.0)
    low = power.clamp(max=1000.0)
    r = m * torch.exp2(low) * torch.exp2(power - low)
    r = torch.where(torch.isfinite(x) & (x != 0), r, x)
    return r if self.dtype == torch.float64 else r.to(torch.float32).to(self.dtype)


def _ldexp(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    if _kernel_path(self, other):
        return _exact(self, other)
    return aten.ldexp.Tensor._op_dk(_COMPOSITE, self, other)


def _ldexp_out(self: torch.Tensor, other: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    if (out.dtype.is_floating_point or out.dtype.is_complex) and _kernel_path(self, other):
        result = _exact(self, other)
        if tuple(out.shape) != tuple(result.shape):
            out.resize_(result.shape)
        return out.copy_(result)
    return aten.ldexp.out._op_dk(_COMPOSITE, self, other, out=out)


def _ldexp_inplace(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    shape = _broadcast(self, other)
    if shape is not None and shape != [int(v) for v in self.shape]:  # the iterator's check (fuzz seed 34: tpu's
        # composite resized self to the broadcast shape)
        raise RuntimeError(f"output with shape {[int(v) for v in self.shape]} doesn't match the broadcast shape "
                           f"{shape}")
    if _kernel_path(self, other) and shape is not None:
        return self.copy_(_exact(self, other))
    return aten.ldexp_.default._op_dk(_COMPOSITE, self, other)


def register(kernel: Callable[..., Any]) -> None:
    kernel(aten.ldexp.Tensor, _ldexp)
    kernel(aten.ldexp.out, _ldexp_out)
    kernel(aten.ldexp_.default, _ldexp_inplace)


def compile_decomposition(self: torch.Tensor, other: torch.Tensor) -> Any:
    """ldexp.Tensor under torch.compile(backend="tpu"): CPU's kernel path computed exactly as in eager (ATen's
    CompositeImplicit ldexp would trace to self * 2**other, inf or 0 where the power of two overflows the dtype);
    anything else is left to ATen's composite (NotImplemented)."""
    if isinstance(self, torch.Tensor) and isinstance(other, torch.Tensor) and _kernel_path(self, other):
        return _exact(self, other)
    return NotImplemented
