"""Fake-tensor rules for tpu tensors where PyTorch's meta kernel encodes another device's limits.

Dynamo and AOTAutograd trace with fake tensors, whose shapes come from the meta kernels. `aten._grouped_mm`'s
meta kernel implements the CUDA kernel's checks (bfloat16 operands only, 16-byte aligned strides), so a MoE
model on "tpu" in float32 (transformers routes tpu experts to `torch._grouped_mm`) could not be compiled,
although the tpu lowering (ops/matmul.py: grouped_mm) takes float32, bfloat16 and float16. For tpu operands
the rule here gives the output by the meta kernel's own shape rule (`_create_grouped_mm_output_tensor`, a
private helper of the pinned torch); other devices keep the meta kernel.
"""

from __future__ import annotations

from typing import Any

import torch

aten = torch.ops.aten


def _grouped_mm(fake_mode: Any, func: Any, self: torch.Tensor, mat2: torch.Tensor, offs: torch.Tensor | None = None,
                bias: torch.Tensor | None = None, out_dtype: torch.dtype | None = None) -> Any:
    if self.device.type != "tpu" or (offs is None and not (self.dim() == 3 and mat2.dim() == 3)):
        return NotImplemented  # the meta kernel, which reports what it rejects
    from torch._meta_registrations import _create_grouped_mm_output_tensor

    with fake_mode:  # the meta kernel's own shape rule and checks, without its dtype and stride checks
        return _create_grouped_mm_output_tensor(self, mat2, offs, out_dtype)


_RULES = {aten._grouped_mm.default: _grouped_mm}


def register() -> None:
    """Adds the rules to FakeTensorMode's op implementations (once)."""
    from torch._subclasses import fake_impls

    for op, rule in _RULES.items():
        if not any(impl is rule for _, impl in fake_impls.op_implementations_checks):
            fake_impls.op_implementations_checks.append((lambda func, op=op: func is op, rule))
