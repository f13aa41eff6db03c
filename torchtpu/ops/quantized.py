"""Lowerings of the quantized matmuls that torchao's tensor subclasses (and users) call: `_int_mm` (int8 x int8 ->
int32 on the MXU), `_weight_int8pack_mm` (float activations x int8 weights, per-channel scales) and `_scaled_mm`
(fp8 x fp8 with scales); and the `out_dtype` higher-order op's dense kernel for "tpu", so torchao's int8 dynamic
quantization reaches `_int_mm` here as it does on CUDA instead of widening both operands to int32.

The IR op is `dot_general` with int8 or fp8 operands: the sim multiplies int8 exactly with int32 accumulation and
fp8 as bf16 values (exact) with float32 accumulation; its cost rule charges the chip's int8 / fp8 MXU rate and
refuses chips whose MXU lacks the type (sim/data/chips.json `mxu_int8`, `mxu_fp8`; torchtpu.sim.chips.MxuDtypeError).
"""

from __future__ import annotations

import torch
from torch._C import DispatchKey
from torch._higher_order_ops.out_dtype import out_dtype

from torchtpu.ops import prims as P
from torchtpu.ops.registry import hop, lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten
FLOAT8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def _dot(a: Sym, b: Sym, out: torch.dtype) -> Sym:
    return P.dot_general(a, b, (), (), (1,), (0,), out)


@lower(aten._int_mm.default)
def int_mm(self: Sym, mat2: Sym) -> Sym:
    if self.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"int_mm: Expected 2D tensors, got {self.ndim}D and {mat2.ndim}D")
    if self.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"int_mm: self.size(1) needs to match mat2.size(0) but got {self.shape[1]} and "
                           f"{mat2.shape[0]}")
    for name, x in (("self", self), ("mat2", mat2)):
        if x.dtype != torch.int8:
            raise RuntimeError(f"int_mm: Expected {name} dtype to be int8 but got {x.dtype} (the tpu MXU takes "
                               "int8 x int8 -> int32)")
    return _dot(self, mat2, torch.int32)


@lower(aten._weight_int8pack_mm.default)
def weight_int8pack_mm(self: Sym, mat2: Sym, scales: Sym) -> Sym:
    """y = (x @ w.T) * scales for x (M, K) float, w (N, K) int8, scales (N,): int8 values are exact in bf16, so the
    MXU multiplies them as x's type is multiplied (bf16: exact products; float32/float16: the precision's passes)
    with float32 accumulation; one rounding to x's type at the end, as CPU."""
    if self.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise RuntimeError(f"_weight_int8pack_mm: expected self to be bfloat16, float16 or float32, got {self.dtype}")
    if mat2.dtype != torch.int8 or mat2.ndim != 2 or self.ndim != 2:
        raise RuntimeError(f"_weight_int8pack_mm: expected 2D self and a 2D int8 mat2, got {self.ndim}D and "
                           f"{mat2.ndim}D {mat2.dtype}")
    n, k = mat2.shape
    if self.shape[1] != k:
        raise RuntimeError(f"_weight_int8pack_mm: expected mat2 of shape (N, {self.shape[1]}), got {tuple(mat2.shape)}")
    if scales.ndim != 1 or scales.shape[0] != n or scales.dtype != self.dtype:
        raise RuntimeError(f"_weight_int8pack_mm: expected scales of shape ({n},) and dtype {self.dtype}, got "
                           f"{tuple(scales.shape)} {scales.dtype}")
    y = P.dot_general(self, P.convert(mat2, self.dtype), (), (), (1,), (1,), torch.float32)
    y = y * P.broadcast_to(P.convert(P.reshape(scales, (1, n)), torch.float32), y.shape)
    return P.convert(y, self.dtype)


def _scale(s: Sym, rows: int, cols: int, which: str, shape: tuple[int, int]) -> Sym:
    if s.dtype != torch.float32:
        raise RuntimeError(f"_scaled_mm: {which} must be float32, got {s.dtype}")
    if s.numel() == 1:
        return P.broadcast_to(P.reshape(s, (1, 1)), shape)
    if tuple(s.shape) == (rows, cols):
        return P.broadcast_to(s, shape)
    raise RuntimeError(f"_scaled_mm: {which} must be a one-element (tensor-wise) scale or of shape "
                       f"{(rows, cols)} (row-wise), got {tuple(s.shape)}")


@lower(aten._scaled_mm.default, static=("out_dtype", "use_fast_accum"))
def scaled_mm(self: Sym, mat2: Sym, scale_a: Sym, scale_b: Sym, bias: Sym | None = None,
              scale_result: Sym | None = None, out_dtype: torch.dtype | None = None,
              use_fast_accum: bool = False) -> Sym:
    """(a @ b) * scale_a * scale_b (+ bias) in float32, rounded once to out_dtype (default a's type): fp8
    products on the MXU with float32 accumulation (use_fast_accum changes nothing here)."""
    if self.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"_scaled_mm: expected 2D matrices, got {self.ndim}D and {mat2.ndim}D")
    if self.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"_scaled_mm: mat1 and mat2 shapes cannot be multiplied ({self.shape[0]}x"
                           f"{self.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    for name, x in (("mat1", self), ("mat2", mat2)):
        if x.dtype not in FLOAT8:
            raise RuntimeError(f"_scaled_mm: expected {name} to be float8_e4m3fn or float8_e5m2, got {x.dtype}")
    if scale_result is not None:
        raise NotImplementedError("_scaled_mm on tpu: scale_result is not supported (valid: None); scale the "
                                  "float32 or bfloat16 result instead")
    m, n = self.shape[0], mat2.shape[1]
    y = P.dot_general(self, mat2, (), (), (1,), (0,), torch.float32)
    y = y * _scale(scale_a, m, 1, "scale_a", (m, n)) * _scale(scale_b, 1, n, "scale_b", (m, n))
    if bias is not None:
        if bias.ndim != 1 or bias.shape[0] != n:
            raise RuntimeError(f"_scaled_mm: bias must be of shape ({n},), got {tuple(bias.shape)}")
        y = y + P.broadcast_to(P.convert(P.reshape(bias, (1, n)), torch.float32), (m, n))
    return P.convert(y, out_dtype if out_dtype is not None else self.dtype)


def _is_int_mm(op: object, output_dtype: torch.dtype, args: tuple) -> bool:
    """CUDA's rule (torch._higher_order_ops.out_dtype.is_int_mm), for "tpu": int8 x int8 mm -> int32."""
    return (op is aten.mm.default and output_dtype == torch.int32 and len(args) == 2
            and all(a.dtype == torch.int8 for a in args))


@out_dtype.py_impl(DispatchKey.PrivateUse1)
def _out_dtype_tpu(op: torch._ops.OpOverload, output_dtype: torch.dtype, *args: torch.Tensor) -> torch.Tensor:
    """Eager: `_int_mm` on the MXU where CUDA takes it; anything else widens the operands as the generic kernel."""
    from torch._higher_order_ops.out_dtype import out_dtype_fallback

    if _is_int_mm(op, output_dtype, args):
        return torch._int_mm(*args)
    return out_dtype_fallback(op, output_dtype, *args)


@hop(out_dtype)
def _out_dtype_graph(op: object, output_dtype: torch.dtype, *args: Sym) -> tuple | None:
    """Compiled graphs: the same `_int_mm` (torchao's int8 dynamic quantization under torch.compile)."""
    return (aten._int_mm.default, args) if _is_int_mm(op, output_dtype, args) else None
