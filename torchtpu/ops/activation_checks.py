"""ATen's checks on the activations torchtpu runs by an accepted upstream decomposition, which has none of them:

- elu_backward: the refusal of an in-place activation's backward with a negative slope (elu_ / celu_ /
  leaky_relu_ / rrelu_ save their result, and with a negative slope the result's sign no longer tells the input's,
  so CPU raises instead of returning a wrong gradient; leaky_relu_backward's check is in
  ops/cpu_raise_checks3.py), and its kernel's `alpha/scale/input_scale.to<opmath_t>()`: a complex Scalar with an
  imaginary part overflows.
- threshold: its kernel's `threshold/value.to<scalar_t>()`, c10's checked conversion to self's dtype, and the
  comparison with the converted threshold (an integer self compares with the truncated threshold: -4 <= -4.4 is
  false, but CPU's -4 <= -4 is true; the decomposition compared in float).

Eager mode (ops/decompositions.py) and torch.compile (compile/backend.py) wrap the decomposition with `wrap`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchtpu.dtypes import _C_NAMES, check_scalar_fits

aten = torch.ops.aten

LEAKY_RELU_NEGATIVE_SLOPE = (
    "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is "
    "caused by calling in-place forward function with a negative slope, please call out-of-place version instead. "
    "File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward "
    "calculation with negative slope")
ELU_NEGATIVE_SLOPE = (
    "In-place elu backward calculation is triggered with a negative slope which is not supported. This is caused "
    "by calling in-place forward function with a negative slope, please call out-of-place version instead.")

WRAPPED = frozenset({aten.elu_backward, aten.threshold})


def _overflow(dtype: torch.dtype) -> RuntimeError:
    return RuntimeError(f"value cannot be converted to type {_C_NAMES.get(dtype, str(dtype))} without overflow")


def _imaginary(value: Any) -> bool:
    return isinstance(value, complex) and value.imag != 0


def _elu_backward(b: dict[str, Any]) -> None:
    alpha = b.get("alpha", 1)
    if b.get("is_result"):
        if _imaginary(alpha):  # the meta function's alpha.to<double>()
            raise _overflow(torch.float64)
        if not float(alpha) >= 0:  # TORCH_CHECK(alpha >= 0.0): a NaN slope is refused too (fuzz seed 33)
            raise RuntimeError(ELU_NEGATIVE_SLOPE)
    grad, x = b["grad_output"], b["self_or_result"]
    dtype = torch.promote_types(grad.dtype, x.dtype)
    if dtype.is_floating_point and any(_imaginary(b.get(n, 1)) for n in ("alpha", "scale", "input_scale")):
        raise _overflow(torch.float64 if dtype == torch.float64 else torch.float32)  # opmath_t


def _threshold(b: dict[str, Any]) -> dict[str, Any]:
    dtype = b["self"].dtype
    for name in ("threshold", "value"):  # CPU's words, then the op, the value and the dtype
        check_scalar_fits(b[name], dtype, "threshold()")
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:  # bool: refused by the dtype table
        return {}
    return {name: int(b[name].real if isinstance(b[name], complex) else b[name])  # static_cast: toward zero
            for name in ("threshold", "value")}


_CHECKS: dict[Any, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
    aten.elu_backward: _elu_backward, aten.threshold: _threshold}


def wrap(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (op's upstream decomposition) behind ATen's checks for op (a check may return the arguments as the
    kernel converts them)."""
    names = [a.name for a in op._schema.arguments]
    found = _CHECKS[op.overloadpacket]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        converted = found({**dict(zip(names, args)), **kwargs})
        if converted:
            args = tuple(converted.get(name, a) for name, a in zip(names, args))
            kwargs = {k: converted.get(k, v) for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    return kernel
