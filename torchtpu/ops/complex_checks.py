"""ATen's argument checks for torch.complex and torch.polar (TensorFactories.cpp complex_check_floating and
complex_check_dtype), in its order, class and words: both parts Half, Float or Double, of one dtype, and an out=
tensor of exactly the matching complex dtype."""

from __future__ import annotations

import torch

from torchtpu.ops.tracing import Sym, aten_type_name

_PARTS = (torch.float16, torch.float32, torch.float64)
_COMPLEX_OF = {torch.float16: torch.complex32, torch.float32: torch.complex64, torch.float64: torch.complex128}


def check_parts(a: Sym, b: Sym) -> None:
    """complex_check_floating, then complex_check_dtype's same-dtype check."""
    if a.dtype not in _PARTS or b.dtype not in _PARTS:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{aten_type_name(a.dtype)} and {aten_type_name(b.dtype)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"Expected object of scalar type {aten_type_name(a.dtype)} but got scalar type "
                           f"{aten_type_name(b.dtype)} for second argument")


def check_out(result: torch.dtype, target: torch.dtype) -> None:
    """complex_check_dtype's out= check: the out tensor's dtype must be the parts' complex dtype exactly."""
    if result != target:
        raise RuntimeError(f"Expected object of scalar type {aten_type_name(result)} but got scalar type "
                           f"{aten_type_name(target)} for argument 'out'")


def complex_of(part: torch.dtype) -> torch.dtype:
    """The complex dtype of Half, Float or Double parts (toComplexType)."""
    return _COMPLEX_OF[part]
