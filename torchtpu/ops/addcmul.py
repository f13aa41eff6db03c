"""Lowering of addcmul: self + value * tensor1 * tensor2 in the operands' common dtype, `value` converted to that
dtype first as CPU's kernel does (`value.to<scalar_t>()`: a float value truncates toward zero for integer tensors,
so addcmul_(int64, ..., value=-0.858) adds nothing rather than refusing a float result)."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.dtypes import check_scalar_fits
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.scalar_args import known
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


@lower(aten.addcmul.default)
def addcmul(self: Sym, tensor1: Sym, tensor2: Sym, value: Any = 1) -> Sym:
    common = P.result_dtype(self, tensor1, tensor2)[1]
    check_scalar_fits(value, common, "addcmul(): value")
    if known(value) and value == 1:
        return self + tensor1 * tensor2
    if not (common.is_floating_point or common.is_complex):  # CPU's value.to<scalar_t>(): toward zero
        value = P.convert(P.const(value, torch.float64), common)
        # every operand in the common dtype first: a 0-d value times a uint8 tensor1 would promote to uint8
        self, tensor1, tensor2 = (P.convert(t, common) for t in (self, tensor1, tensor2))
    return self + value * tensor1 * tensor2  # ATen's order (value * t1 is exact for a runtime value of 1)
