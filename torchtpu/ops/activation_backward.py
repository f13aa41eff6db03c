"""hardtanh_backward as ATen's kernel computes it (Activation.cpp, hardtanh_backward_kernel).

A binary TensorIterator op over (grad_output, self): the result takes the promoted dtype of the two (a bool
grad_output with a float32 self gives float32), only floating types are dispatched, and the gradient passes unless
self <= min_val or self >= max_val (so a NaN self or bound passes it). The bounds take the computation's type:
float32 for float16/bfloat16 (the kernel compares in float, self widened, the bounds not rounded to the narrow
type), else the promoted type itself.
"""

from __future__ import annotations

import torch

from torchtpu.ops import backward_checks
from torchtpu.ops import prims as P
from torchtpu.ops.prims import Kind
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym, aten_type_name

aten = torch.ops.aten


@lower(aten.hardtanh_backward.default)
def hardtanh_backward(grad_output: Sym, self: Sym, min_val: float, max_val: float) -> Sym:
    backward_checks.broadcast([grad_output.shape, self.shape])  # TensorIterator's shapes before its dtype
    _, common = P.result_dtype(grad_output, self, kind=Kind.NO_OPMATH)  # a 0-d grad does not promote self
    if not common.is_floating_point:
        raise NotImplementedError(f'"hardshrink_backward_cpu" not implemented for \'{aten_type_name(common)}\'')
    compute = torch.float32 if common in (torch.float16, torch.bfloat16) else common
    x = P.convert(P.convert(self, common), compute)
    # the kernel's (self <= min || self >= max) ? 0 : grad: a NaN self or bound passes the gradient
    outside = P.emit1("or", [P.compare("LE", x, min_val), P.compare("GE", x, max_val)])
    g = P.convert(grad_output, common)
    return P.where(outside, P.zeros_like(g), g)
