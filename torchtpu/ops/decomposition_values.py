"""Values where an accepted upstream decomposition and CPU's kernel disagree, corrected around the decomposition
(eager and torch.compile wrap it alike, ops/checked_decompositions.py):

- elu (and so celu, selu): CPU's kernel takes x * scale at x = 0, the decomposition negcoef * expm1(x *
  input_scale), which is NaN at 0 when input_scale or alpha * scale is infinite or NaN (fuzz seed 11: elu of
  bfloat16 zeros with input_scale inf gave NaN, CPU 0). Only such calls pay for the correction.
- slice_scatter: a slice over the whole dim returns src.clone() upstream, in src's dtype; CPU's result has self's
  (fuzz seed 15: bfloat16 self, float64 src gave float64). src is converted to self's dtype first.
- special_xlog1py with a Python scalar and a float16/bfloat16 tensor: CPU computes with the scalar in the tensor's
  dtype (2**40 is inf there), the decomposition with it in float32 after its opmath upcast (fuzz seed 15: -1529
  where CPU gives -inf). The scalar is rounded to the tensor's dtype first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

aten = torch.ops.aten

WRAPPED = frozenset({aten.elu, aten.slice_scatter, aten.special_xlog1py})


def _finite(value: Any) -> bool:
    return not isinstance(value, int | float) or math.isfinite(value)


def _elu_at_zero(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    names = [a.name for a in op._schema.arguments]
    defaults = {"alpha": 1, "scale": 1, "input_scale": 1}

    def kernel(*args: Any, **kwargs: Any) -> Any:
        bound = {**defaults, **dict(zip(names, args)), **kwargs}
        alpha, scale, input_scale = bound["alpha"], bound["scale"], bound["input_scale"]
        if _finite(input_scale) and _finite(alpha) and _finite(scale) and _finite(alpha * scale):
            return fn(*args, **kwargs)
        x = bound["self"]
        zero, at_zero = x == 0, x * scale  # before the call: an out= tensor may be x itself
        result = fn(*args, **kwargs)
        fixed = torch.where(zero, at_zero, result)
        return result.copy_(fixed) if "out" in bound else fixed

    return kernel


def _src_in_self_dtype(fn: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(self: torch.Tensor, src: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, src.to(self.dtype), *args, **kwargs)

    return kernel


def _round_to(value: float, dtype: torch.dtype) -> float:
    """c10's Scalar to Half/BFloat16: the double rounded to float, then to the narrow type (nearest even), in plain
    numpy (no tensor: compile traces this wrapper)."""
    with np.errstate(over="ignore"):
        f = np.array([value], np.float64).astype(np.float32)
    if dtype == torch.float16:
        with np.errstate(over="ignore"):
            return float(f.astype(np.float16)[0])
    if np.isnan(f[0]):
        return float(f[0])
    bits = f.view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return float(bits.astype(np.uint32).view(np.float32)[0])


def _scalar_in_tensor_dtype(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    names = [a.name for a in op._schema.arguments]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = list(args), dict(kwargs)
        values = [args[i] if i < len(args) else kwargs.get(n) for i, n in enumerate(names[:2])]
        for i in (0, 1):
            v, t = values[i], values[1 - i]
            if isinstance(t, torch.Tensor) and isinstance(v, int | float) and t.dtype in (torch.float16,
                                                                                        torch.bfloat16):
                rounded = _round_to(v, t.dtype)
                if i < len(args):
                    args[i] = rounded
                else:
                    kwargs[names[i]] = rounded
        return fn(*args, **kwargs)

    return kernel


def wrap(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (op's upstream decomposition) with CPU's value where the two differ."""
    if op.overloadpacket is aten.special_xlog1py:
        return _scalar_in_tensor_dtype(op, fn)
    if op.overloadpacket is aten.slice_scatter:
        return _src_in_self_dtype(fn)
    return _elu_at_zero(op, fn)
