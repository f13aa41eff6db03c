"""Lowerings of addcmul and addcdiv: self + value * tensor1 * tensor2 (/ tensor2) as CPU's kernels compute them:
every operand in the common dtype (float32 for bfloat16/float16, rounded once at the end), the product
value * tensor1 first (upstream's decomposition divided tensor1 / tensor2 first, in the dtype of those two alone);
for addcmul, `value` converted to that dtype first
(`value.to<scalar_t>()`: a float value truncates toward zero for integer tensors, so addcmul_(int64, ...,
value=-0.858) adds nothing rather than refusing a float result). CPU's compiler contracts the float32/float64
expression into a fused multiply-add; tpu rounds the product first, so those may differ from CPU in the last bit."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.dtypes import check_scalar_fits
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.scalar_args import known
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _compute_dtype(common: torch.dtype) -> torch.dtype:
    """The dtype CPU's kernel computes in and converts `value` to (c10's checked value.to<T>()): float32 for
    bfloat16/float16 (`float float_val = value.to<float>()`: a value past float16's range but within float32's is
    no error there, the result is inf; fuzz seed 1), the common dtype otherwise."""
    return torch.float32 if common in (torch.bfloat16, torch.float16) else common


def _what(op: str, common: torch.dtype) -> str:
    return f"{op}(): value" if _compute_dtype(common) == common else f"{op}(): value (of a {common} op, in float32)"


@lower(aten.addcmul.default)
def addcmul(self: Sym, tensor1: Sym, tensor2: Sym, value: Any = 1) -> Sym:
    common = P.result_dtype(self, tensor1, tensor2)[1]
    # CPU's kernel: every operand in the common dtype (float32 for bfloat16/float16, rounded once at the end),
    # self + value * t1 * t2 in that order; a complex value of 1 still multiplies (an infinite part gives NaN)
    compute = _compute_dtype(common)
    check_scalar_fits(value, compute, _what("addcmul", common))
    if not (common.is_floating_point or common.is_complex):  # CPU's value.to<scalar_t>(): toward zero
        value = P.convert(P.const(value, torch.float64), common)
    elif known(value) and value == 1 and not common.is_complex:
        value = None  # 1 * t1 is exact
    s, t1, t2 = (P.convert(t, compute) for t in (self, tensor1, tensor2))
    product = t1 * t2 if value is None else value * t1 * t2
    return P.convert(s + product, common)


@lower(aten.addcdiv.default)
def addcdiv(self: Sym, tensor1: Sym, tensor2: Sym, value: Any = 1) -> Sym:
    if not (tensor1.dtype.is_floating_point or tensor1.dtype.is_complex) and not (
            tensor2.dtype.is_floating_point or tensor2.dtype.is_complex):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
            "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
            "value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
            "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    common = P.result_dtype(self, tensor1, tensor2)[1]
    compute = _compute_dtype(common)
    check_scalar_fits(value, compute, _what("addcdiv", common))
    s, t1, t2 = (P.convert(t, compute) for t in (self, tensor1, tensor2))
    numerator = t1 if known(value) and value == 1 and not common.is_complex else value * t1
    return P.convert(s + numerator / t2, common)
