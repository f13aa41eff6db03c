"""CPU's checks of the fused weight-norm kernels (_weight_norm_interface and its backward, WeightNormKernel.cpp),
which the lowerings in norm.py make while tracing: `dim` is 0 or v.dim() - 1 exactly (an internal assert: -1 is not
wrapped), a floating v, g (and grad_w) of v's dtype and the saved norms in v's opmath type (float32 for float32,
bfloat16 and float16; float64 for float64), in the kernel's order and words (issue 17, fuzz seed 14). Before those,
weight_norm_backward_cpu's contiguity checks of saved_v, saved_g and saved_norms (`BOUND_CHECKS`, run on the call's
tensors by ops/arg_order_checks.py: a Sym has no strides)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchtpu.dtypes import FLOATS
from torchtpu.ops.tracing import Sym, aten_type_name


def _expect(t: Sym, dtype: torch.dtype) -> None:
    if t.dtype != dtype:
        raise RuntimeError(f"expected scalar type {aten_type_name(dtype)} but found {aten_type_name(t.dtype)}")


def _check_dim(v: Sym, dim: int, name: str, kernel: str) -> None:
    if not (dim == 0 or dim == v.ndim - 1):
        raise RuntimeError(f"dim == 0 || dim == {name}.dim() - 1 INTERNAL ASSERT FAILED ({kernel}): fused kernels "
                           "can only be applied for first or last dim")
    if v.dtype not in FLOATS:  # the dispatch, before the kernel's first size read
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{aten_type_name(v.dtype)}'")
    if v.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")


def check_forward(v: Sym, g: Sym, dim: int) -> None:
    """weight_norm_kernel's assert, dispatch and g's dtype."""
    _check_dim(v, dim, "v", "weight_norm_kernel")
    _expect(g, v.dtype)


def check_backward(grad_w: Sym, saved_v: Sym, saved_g: Sym, saved_norms: Sym, dim: int) -> None:
    """weight_norm_backward_kernel's assert, dispatch, then grad_w, saved_g and saved_norms' dtypes."""
    _check_dim(saved_v, dim, "saved_v", "weight_norm_backward_kernel")
    _expect(grad_w, saved_v.dtype)
    _expect(saved_g, saved_v.dtype)
    _expect(saved_norms, torch.float64 if saved_v.dtype == torch.float64 else torch.float32)


def _backward_contiguous(a: dict[str, Any]) -> None:
    """weight_norm_backward_cpu's first checks (also of the out= form, which calls it)."""
    for arg, name in (("saved_v", "saved_v"), ("saved_g", "saved_g"), ("saved_norms", "saved_norm")):
        t = a.get(arg)
        if isinstance(t, torch.Tensor) and not t.is_contiguous():
            raise RuntimeError(f"{name} must be contiguous")


BOUND_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "_weight_norm_interface_backward": _backward_contiguous}
