"""Fake-tensor rules for tpu tensors where PyTorch's meta kernel encodes another device's limits.

Dynamo and AOTAutograd trace with fake tensors, whose shapes come from the meta kernels. `aten._grouped_mm`'s
meta kernel implements the CUDA kernel's checks (bfloat16 operands only, 16-byte aligned strides), so a MoE
model on "tpu" in float32 (transformers routes tpu experts to `torch._grouped_mm`) could not be compiled,
although the tpu lowering (ops/matmul.py: grouped_mm) takes float32, bfloat16 and float16. For tpu operands
the rule here gives the output's shape and dtype by the same shape rules; other devices keep the meta kernel.
"""

from __future__ import annotations

from typing import Any

import torch

aten = torch.ops.aten


def _on_tpu(*tensors: Any) -> bool:
    return any(isinstance(t, torch.Tensor) and t.device.type == "tpu" for t in tensors)


def _grouped_mm_shape(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor | None) -> list[int]:
    if a.dim() == 3 and b.dim() == 3:
        return [a.size(0), a.size(1), b.size(2)]
    groups = offs.size(0) if offs is not None else 0
    if a.dim() == 2 and b.dim() == 3:
        return [a.size(0), b.size(2)]
    if a.dim() == 2 and b.dim() == 2:
        return [groups, a.size(0), b.size(1)]
    return [a.size(1), b.size(1)]  # 3D x 2D, as PyTorch's meta kernel (the lowering reports it unsupported)


def _grouped_mm(fake_mode: Any, func: Any, self: torch.Tensor, mat2: torch.Tensor, offs: torch.Tensor | None = None,
                bias: torch.Tensor | None = None, out_dtype: torch.dtype | None = None) -> Any:
    if not _on_tpu(self, mat2):
        return NotImplemented  # the meta kernel, as before
    with fake_mode:
        return torch.empty(_grouped_mm_shape(self, mat2, offs), dtype=out_dtype or self.dtype, device=self.device)


_RULES = {aten._grouped_mm.default: _grouped_mm}


def register() -> None:
    """Adds the rules to FakeTensorMode's op implementations (once)."""
    from torch._subclasses import fake_impls

    for op, rule in _RULES.items():
        if not any(impl is rule for _, impl in fake_impls.op_implementations_checks):
            fake_impls.op_implementations_checks.append((lambda func, op=op: func is op, rule))
