"""Lowering of elu (and so celu, selu): CPU's kernel, not upstream's decomposition. The negative branch is
negcoef * expm1(x * input_scale) for x < 0 only (a zero takes x * scale: elu(0) is 0 even with an infinite
input_scale or alpha, where the decomposition's (exp(0 * inf) - 1) * negcoef gave NaN), expm1 keeps small
negative inputs exact (exp(x) - 1 rounded -1e-8 to 0 in float32), and negcoef = alpha * scale is rounded in the
computation dtype first; bfloat16/float16 compute in float32 and round once."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


@lower(aten.elu.default)
def elu(self: Sym, alpha: Any = 1, scale: Any = 1, input_scale: Any = 1) -> Sym:
    compute = torch.float32 if self.dtype in (torch.bfloat16, torch.float16) else self.dtype
    x = P.convert(self, compute)
    negcoef = P.const(alpha, compute) * P.const(scale, compute)
    negative = P.emit1("exponential_minus_one", [x * P.const(input_scale, compute)]) * negcoef
    positive = x * P.const(scale, compute)
    return P.convert(P.where(P.compare("LT", x, 0.0), negative, positive), self.dtype)
