"""Symbolic tensors for lowering: `Sym` wraps an IR Value in the Builder being traced, with numpy-style
broadcasting and torch-style type promotion, so a lowering reads like the math it lowers.

A lowering never sees data: it is run once per signature (shapes, dtypes, scalar arguments) and the Program it
builds is cached and replayed.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import torch

from torchtpu.drivers.ir import Builder, Value

TORCH_TO_IR = {
    torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float64: "float64",
    torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
    torch.bool: "bool", torch.complex64: "complex64",
    torch.complex128: "complex128", torch.float8_e4m3fn: "float8_e4m3fn", torch.float8_e5m2: "float8_e5m2",
    torch.complex32: "complex32",
}
IR_TO_TORCH = {v: k for k, v in TORCH_TO_IR.items()}


def aten_type_name(dtype: torch.dtype) -> str:
    """ATen's name of a dtype in error messages (torch.float32 -> "Float", torch.int64 -> "Long")."""
    return torch.empty(0, dtype=dtype, device="meta").type().split(".")[-1].replace("Tensor", "")


def dispatch_refusal(kernel: str, dtype: torch.dtype) -> NotImplementedError:
    """An AT_DISPATCH macro's refusal of `dtype` in `kernel`, in ATen's words."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{aten_type_name(dtype)}'")


# c10's TypeMeta names, which some ATen checks print ("expected dtype float for `grad_output` ...").
_META_NAMES = {torch.float32: "float", torch.float64: "double", torch.float16: "c10::Half",
               torch.bfloat16: "c10::BFloat16", torch.int64: "long int", torch.int32: "int", torch.int16: "short int",
               torch.int8: "signed char", torch.uint8: "unsigned char", torch.bool: "bool",
               torch.complex64: "c10::complex<float>", torch.complex128: "c10::complex<double>",
               torch.complex32: "c10::complex<c10::Half>"}


def aten_meta_name(dtype: torch.dtype) -> str:
    """c10's TypeMeta name of a dtype (torch.int64 -> "long int"), as ATen's checkScalarType prints it."""
    return _META_NAMES.get(dtype, str(dtype))

_state = threading.local()


def current_builder() -> Builder:
    builder = getattr(_state, "builder", None)
    if builder is None:
        raise RuntimeError("IR builders used outside a lowering trace")
    return builder


class tracing:  # noqa: N801 - used as a context manager
    def __init__(self, builder: Builder) -> None:
        self.builder = builder

    def __enter__(self) -> Builder:
        self.prev = getattr(_state, "builder", None)
        _state.builder = self.builder
        return self.builder

    def __exit__(self, *exc: object) -> None:
        _state.builder = self.prev


class Sym:
    """A traced tensor: an IR value plus the torch dtype it stands for."""

    __slots__ = ("value",)

    def __init__(self, value: Value) -> None:
        self.value = value

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    @property
    def ndim(self) -> int:
        return len(self.value.shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return self.value.type.numel

    @property
    def dtype(self) -> torch.dtype:
        return IR_TO_TORCH[self.value.dtype]

    @property
    def ir_dtype(self) -> str:
        return self.value.dtype

    def __repr__(self) -> str:
        return f"Sym({self.value!r})"

    # Arithmetic sugar; the implementations live in ops.prims (imported lazily to avoid a cycle).
    def __add__(self, o: Any) -> Sym:
        from torchtpu.ops import prims
        return prims.binary("add", self, o)

    def __radd__(self, o: Any) -> Sym:
        from torchtpu.ops import prims
        return prims.binary("add", o, self)

    def __sub__(self, o: Any) -> Sym:
        from torchtpu.ops import prims
        return prims.binary("subtract", self, o)

    def __rsub__(self, o: Any) -> Sym:
        from torchtpu.ops import prims
        return prims.binary("subtract", o, self)

    def __mul__(self, o: Any) -> Sym:
        from torchtpu.ops import prims
        return prims.binary("multiply", self, o)

    def __rmul__(self, o: Any) -> Sym:
        from torchtpu.ops import prims
        return prims.binary("multiply", o, self)

    def __truediv__(self, o: Any) -> Sym:
        from torchtpu.ops import prims
        return prims.true_divide(self, o)

    def __rtruediv__(self, o: Any) -> Sym:
        from torchtpu.ops import prims
        return prims.true_divide(o, self)

    def __neg__(self) -> Sym:
        from torchtpu.ops import prims
        return prims.unary("negate", self)


def is_sym(x: Any) -> bool:
    return isinstance(x, Sym)


def syms(xs: Sequence[Any]) -> list[Sym]:
    return [x for x in xs if isinstance(x, Sym)]
