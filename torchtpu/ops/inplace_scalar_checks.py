"""CPU's in-place cast check for add_/sub_/mul_/div_ and the `_foreach_*_` arithmetic ops with Python scalars
(TensorIterator's "result type ComplexFloat can't be cast to the desired output type Short"), made from the call's
dtypes and scalars. Eager tpu made it already; under torch.compile the fake tensors' meta kernels skip it for a
complex operand and the graph's functional form then casts the complex result into the integer tensor (fuzz seed
14: `_foreach_add_` of 1.5+1j into int16 gave 2; `int64.add_(1.5+1j)` gave 2). Merged with
ops/cpu_raise_checks*.py's `BOUND_CHECKS` by ops/arg_order_checks.py, so it runs in eager mode, for a compiled
graph's node and while fake tensors trace (compile/fake_checks.py). Dynamo's spelling of addcmul_/addcdiv_ as
inductor's fma is checked by that op's graph lowering (ops/graph_forms.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchtpu.ops.tracing import aten_type_name

Bound = dict[str, Any]


def _scalar_dtype(value: Any) -> torch.dtype | None:
    """The dtype a Python scalar takes part in type promotion with (a wrapped number), None for anything else."""
    if isinstance(value, bool):
        return torch.bool
    if isinstance(value, int):
        return torch.int64
    if isinstance(value, float):
        return torch.get_default_dtype()
    if isinstance(value, complex):
        return torch.complex128 if torch.get_default_dtype() == torch.float64 else torch.complex64
    return None


def _category(dtype: torch.dtype) -> int:
    return 3 if dtype.is_complex else 2 if dtype.is_floating_point else 0 if dtype == torch.bool else 1


def _result(tensor: torch.dtype, scalar: torch.dtype, true_divide: bool) -> torch.dtype:
    """result_type(tensor, wrapped scalar): the tensor's dtype unless the scalar's category is higher (then the
    default dtype of that category, complex keeping a float16/float64 tensor's width); true division of integers
    gives the default float dtype."""
    result = tensor
    if _category(scalar) > _category(tensor):
        result = scalar
        if scalar.is_complex and tensor in (torch.float16, torch.float64):
            result = torch.complex32 if tensor == torch.float16 else torch.complex128
    if true_divide and _category(result) < 2:
        result = torch.get_default_dtype()
    return result


def _inplace(true_divide: bool, subtract: bool = False) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:
        tensors = a.get("self")
        if not isinstance(tensors, list | tuple):
            return
        if "scalar" in a:
            scalars = [a["scalar"]] * len(tensors)
        elif "scalars" in a and isinstance(a["scalars"], list | tuple) and len(a["scalars"]) == len(tensors):
            scalars = list(a["scalars"])
        else:
            return
        for t, s in zip(tensors, scalars):
            sd = _scalar_dtype(s)
            if sd is None or not hasattr(t, "dtype") or (subtract and torch.bool in (sd, t.dtype)):
                continue  # sub's own bool check comes first (left to the op)
            result = _result(t.dtype, sd, true_divide)
            if _category(result) > _category(t.dtype):
                raise RuntimeError(f"result type {aten_type_name(result)} can't be cast to the desired output type "
                                   f"{aten_type_name(t.dtype)}")
    return check


def _broadcasts_to(shape: torch.Size, target: torch.Size) -> bool:
    """Whether a tensor of `shape` broadcasts to `target` without changing it."""
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target)))


def _binary_inplace(divide: bool = False, subtract: bool = False) -> Callable[[Bound], None]:
    """TensorIterator's cast of the common dtype into self for `self.op_(other)` (a tensor or a number): under
    torch.compile the meta kernels check integer and float results only, and the functional graph then cast a
    complex result into a real self (`int64.add_(1.5+1j)` gave 2). div_ without a rounding mode divides truly."""
    def check(a: Bound) -> None:
        self, other = a.get("self"), a.get("other")
        if not isinstance(self, torch.Tensor) or not (isinstance(other, torch.Tensor) or _scalar_dtype(other)):
            return
        other_dtype = other.dtype if isinstance(other, torch.Tensor) else _scalar_dtype(other)
        if subtract and torch.bool in (self.dtype, other_dtype):
            return  # sub's own bool check comes first (left to the op)
        if isinstance(other, torch.Tensor) and not _broadcasts_to(other.shape, self.shape):
            return  # the iterator's shape check comes first (left to the op)
        result = torch.result_type(self, other)
        if divide and a.get("rounding_mode") is None and _category(result) < 2:
            result = torch.get_default_dtype()
        if _category(result) > _category(self.dtype):
            raise RuntimeError(f"result type {aten_type_name(result)} can't be cast to the desired output type "
                               f"{aten_type_name(self.dtype)}")
    return check


def _ldexp_inplace(a: Bound) -> None:
    """ldexp_ is self * 2**other written into self: a float or complex product self cannot hold is refused (in
    mul's words for a complex one, else ldexp's own); Dynamo's fake tensors skipped it and the compiled graph
    cast the float result into an integer self."""
    self, other = a.get("self"), a.get("other")
    if not isinstance(self, torch.Tensor) or not isinstance(other, torch.Tensor) or other.dtype == torch.bool:
        return  # a bool exponent: the op's own refusal
    power = other.dtype if other.dtype.is_floating_point or other.dtype.is_complex else torch.get_default_dtype()
    result = torch.promote_types(self.dtype, power) if _category(power) >= _category(self.dtype) else self.dtype
    if _category(result) <= _category(self.dtype):
        return
    if result.is_complex and _category(self.dtype) == 2:  # an integer self: ldexp_out's own check comes first
        raise RuntimeError(f"result type {aten_type_name(result)} can't be cast to the desired output type "
                           f"{aten_type_name(self.dtype)}")
    raise RuntimeError(f"ldexp can't be cast to the desired output type {aten_type_name(self.dtype)}")


def _float_unary_inplace(a: Bound) -> None:
    """logit_ of an integer or bool self: its float result cannot be cast back (the meta kernel skips the check)."""
    self = a.get("self")
    if isinstance(self, torch.Tensor) and _category(self.dtype) < 2:
        raise RuntimeError(f"result type {aten_type_name(torch.get_default_dtype())} can't be cast to the desired "
                           f"output type {aten_type_name(self.dtype)}")


BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {
    "_foreach_add_": _inplace(False), "_foreach_sub_": _inplace(False, subtract=True), "_foreach_mul_": _inplace(False),
    "_foreach_div_": _inplace(True), "add_": _binary_inplace(), "sub_": _binary_inplace(subtract=True),
    "mul_": _binary_inplace(), "div_": _binary_inplace(divide=True), "ldexp_": _ldexp_inplace,
    "logit_": _float_unary_inplace,
}
