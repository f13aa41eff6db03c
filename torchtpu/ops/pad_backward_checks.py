"""The reflection/replication padding backward kernels' checks after their shape checks (ops/spatial_checks.py
pad_backward): ATen's CPU dispatch on grad_output's dtype (floating and complex), the kernel's dtype match of
grad_output and input, then a refusal of what the kernel reads unchecked. ATen's shape checks compare only the
padded dims with grad_output's: a grad_output of other leading (batch, channel) sizes or rank is read as if it had
input's (fuzz seed 29: replication_pad1d_backward of grad float32[4, 3, 4] for input [5, 1] read 15 of its 48
values as a [5, 3] plane, and a grad of fewer elements past its end), so tpu refuses it rather than guess."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from torchtpu.ops import spatial_checks
from torchtpu.ops.tracing import aten_type_name

_DISPATCHED = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128)


def kernel_checks(name: str, n: int, grad: torch.Tensor, x: torch.Tensor, padding: Sequence[int]) -> None:
    """`name` (e.g. "replication_pad1d_backward") of `n` padded dims: ATen's shape checks first (they may run
    again in the lowering), then the kernel's."""
    spatial_checks.pad_backward("reflect" if name.startswith("reflection") else "replicate", n, grad.shape,
                                x.shape, padding)
    shape = [int(v) for v in x.shape]
    pad = [int(p) for p in padding]
    if len(shape) not in (n + 1, n + 2) or len(pad) != 2 * n:
        return  # ATen's shape checks refuse these first
    if grad.dtype not in _DISPATCHED:
        raise NotImplementedError(f'"{name}" not implemented for \'{aten_type_name(grad.dtype)}\'')
    if grad.dtype != x.dtype:
        raise RuntimeError(f"expected scalar type {aten_type_name(grad.dtype)} but found {aten_type_name(x.dtype)}")
    for i in range(n):
        shape[-1 - i] += pad[2 * i] + pad[2 * i + 1]
    got = [int(v) for v in grad.shape]
    if got != shape:
        raise RuntimeError(f"{name}: grad_output of shape {got} is not input's shape {[int(v) for v in x.shape]} "
                           f"padded ({shape}): ATen's CPU kernel reads it as that shape unchecked (garbage or out of "
                           f"bounds); tpu refuses it")
