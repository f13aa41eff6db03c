"""out= overloads ATen runs through `unary_op_impl_with_complex_to_float_out` (abs.out, angle.out) with a complex
self: the result is real, yet ATen writes it into a complex out= of self's own dtype (the complex kernel's value,
imaginary part 0) and into any real out= its real type can be cast to; abs's TensorIterator refuses another
complex dtype ("Found dtype ComplexDouble but expected ComplexFloat"), angle's casts into it. tpu required the
result dtype exactly (fuzz seed 26: abs.out of complex64 into a complex64 out= refused)."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops.tracing import aten_type_name

# op -> whether a complex out= must have self's dtype (abs's TensorIterator checks it; angle's casts)
OPS = {"abs.out": True, "angle.out": False}
_REAL = {torch.complex64: torch.float32, torch.complex128: torch.float64}


def _name(op: torch._ops.OpOverload) -> str:
    return f"{op._schema.name.split('::')[1]}.{op._overloadname}"


def applies(op: torch._ops.OpOverload, args: tuple, targets: list[Any]) -> bool:
    """Whether `op` is one of OPS called with a complex self and one out= tensor."""
    self = args[0] if args else None
    return _name(op) in OPS and len(targets) == 1 and isinstance(self, torch.Tensor) and self.dtype in _REAL


def check(op: torch._ops.OpOverload, self_dtype: torch.dtype, target: torch.dtype) -> None:
    """ATen's checks of the out= tensor's dtype for a complex self, in its words."""
    real = _REAL[self_dtype]
    if target.is_complex:
        if OPS[_name(op)] and target != self_dtype:
            raise RuntimeError(f"Found dtype {aten_type_name(target)} but expected {aten_type_name(self_dtype)}")
        return
    if not torch.can_cast(real, target):
        raise RuntimeError(f"result type {aten_type_name(real)} can't be cast to the desired output type "
                           f"{aten_type_name(target)}")
