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
from torchtpu.ops.out_rules import _CPP_NAMES
from torchtpu.ops.tracing import aten_type_name

_DISPATCHED = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128)


# structured in ATen: the meta function sets grad_input with self's options, so an out= must have self's dtype
_STRUCTURED = frozenset({"reflection_pad1d_backward", "replication_pad1d_backward", "reflection_pad3d_backward"})


def kernel_checks(name: str, n: int, grad: torch.Tensor, x: torch.Tensor, padding: Sequence[int],
                  out: torch.Tensor | None = None) -> None:
    """`name` (e.g. "replication_pad1d_backward") of `n` padded dims: ATen's shape checks first (they may run
    again in the lowering), then the kernel's. `out`: the grad_input= tensor of the out= overload (the structured
    ops' meta requires self's dtype of it; the others' kernel compares grad_output's dtype with it, not self's)."""
    spatial_checks.pad_backward("reflect" if name.startswith("reflection") else "replicate", n, grad.shape,
                                x.shape, padding)
    shape = [int(v) for v in x.shape]
    pad = [int(p) for p in padding]
    structured = name in _STRUCTURED
    if out is not None and structured and out.dtype != x.dtype:  # fuzz seed 53
        raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAMES.get(x.dtype, str(x.dtype))}, but got "
                           f"{_CPP_NAMES.get(out.dtype, str(out.dtype))} instead")
    if len(pad) != 2 * n:
        return  # ATen's shape checks refuse these first
    if grad.dtype not in _DISPATCHED:
        raise NotImplementedError(f'"{name}" not implemented for \'{aten_type_name(grad.dtype)}\'')
    target = x if out is None or structured else out
    if grad.dtype != target.dtype:
        raise RuntimeError(f"expected scalar type {aten_type_name(grad.dtype)} but found "
                           f"{aten_type_name(target.dtype)}")
    if len(shape) not in (n + 1, n + 2):  # let through by ATen's checks (seed 53: a 4-d input of the 1d op)
        raise RuntimeError(f"{name}: input of {len(shape)} dims, not {n + 1} or {n + 2}: ATen's CPU kernel reads it "
                           f"as {n + 2} dims unchecked (garbage); tpu refuses it")
    for i in range(n):
        shape[-1 - i] += pad[2 * i] + pad[2 * i + 1]
    got = [int(v) for v in grad.shape]
    if got != shape:
        raise RuntimeError(f"{name}: grad_output of shape {got} is not input's shape {[int(v) for v in x.shape]} "
                           f"padded ({shape}): ATen's CPU kernel reads it as that shape unchecked (garbage or out of "
                           f"bounds); tpu refuses it")
