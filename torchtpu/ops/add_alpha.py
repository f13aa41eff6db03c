"""add/sub's alpha: ATen's alpha_check, whether the kernel multiplies `other` by it, and that product (a
complex32 result's rounded as CPU's ComplexHalf kernel rounds it)."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops import prims as P
from torchtpu.ops import scalar_args
from torchtpu.ops.scalar_args import known
from torchtpu.ops.tracing import Sym


def times_alpha(other: Sym, alpha: Any, compute: torch.dtype, result: torch.dtype) -> Sym:
    """add/sub's alpha * other in `compute`; for a complex32 result, as CPU's ComplexHalf kernel computes it: the
    product rounded to complex32 (alpha cast to it first) before the sum."""
    if result == torch.complex32:
        return P.convert(P.binary("multiply", P.convert(other, result), alpha), compute)
    return P.binary("multiply", other, alpha)


def check_alpha(alpha: Any, dtype: torch.dtype) -> None:
    """ATen's alpha_check of add/sub, on the common dtype and the alpha's Python type (a runtime alpha's too)."""
    kind = alpha.kind if isinstance(alpha, scalar_args.Placeholder) else type(alpha)
    if kind is bool and dtype != torch.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not (dtype.is_floating_point or dtype.is_complex or issubclass(kind, int)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if not dtype.is_complex and issubclass(kind, complex):
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")


def scales_other(alpha: Any, compute: torch.dtype) -> bool:
    """Whether add/sub multiply `other` by alpha: ATen's kernel computes self + alpha * other, where a real alpha of
    1 is exact but a complex one is a complex product, so an infinite part of other gives a NaN part, (1 + 0j) *
    (inf + 0.5j) = inf + nanj (CPU and CUDA alike)."""
    return compute.is_complex or not known(alpha) or alpha != 1
