"""Lowering of lerp (Scalar and Tensor weights) as ATen's CPU kernel (ATen/native/Lerp.h) computes it: in the
opmath type, self + weight * (end - self) where |weight| < 0.5 and end - (end - self) * (1 - weight) elsewhere.
The two forms differ where the operands are infinite (self = inf, end finite, weight 4.572: the second form is
-inf, the first, which tpu used for every weight, inf - inf = NaN: fuzz seed 7) and in the last bit."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.elementwise import _floats_only
from torchtpu.ops.math import acc_dtype
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym, aten_meta_name

aten = torch.ops.aten


def _small(weight: Sym) -> Sym:
    """ATen's is_lerp_weight_small: |weight| < 0.5 (a complex weight's modulus)."""
    if weight.dtype.is_complex:
        from torchtpu.ops.complex import complex_abs

        return P.compare("LT", complex_abs(weight), 0.5)
    return P.compare("LT", P.emit1("abs", [weight]), 0.5)


@lower(aten.lerp.Scalar, aten.lerp.Tensor)
def lerp(self: Sym, end: Sym, weight: Any) -> Sym:
    for what, other in (("end", end), ("weight", weight)):  # ATen's lerp meta: no type promotion
        if isinstance(other, Sym) and other.dtype != self.dtype:
            raise RuntimeError(f"expected dtype {aten_meta_name(self.dtype)} for `{what}` but got dtype "
                               f"{aten_meta_name(other.dtype)}")
    _floats_only(self, "lerp_kernel_tensor" if isinstance(weight, Sym) else "lerp_kernel_scalar")
    if isinstance(weight, complex) and not self.dtype.is_complex:  # CPU's kernel casts it to the real opmath
        weight = weight.real
    compute = acc_dtype(self.dtype)
    s, e = P.convert(self, compute), P.convert(end, compute)
    shape = P.broadcast_shapes(s.shape, e.shape, weight.shape if isinstance(weight, Sym) else ())
    s, e = P.broadcast_to(s, shape), P.broadcast_to(e, shape)
    w = P.broadcast_to(P.convert(weight, compute), shape)
    diff = e - s
    near = s + w * diff
    far = e - diff * (1.0 - w)
    return P.convert(P.where(_small(w), near, far), self.dtype)
