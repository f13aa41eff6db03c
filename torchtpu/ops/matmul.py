"""Lowerings of the matmul family onto the MXU (dot_general): mm, bmm, addmm, baddbmm, addbmm, mv, dot."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _check_2d(name: str, a: Sym, b: Sym) -> None:
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError(f"{name}: expected 2D tensors, got {a.ndim}D and {b.ndim}D")


@lower(aten.mm.default)
def mm(self: Sym, mat2: Sym) -> Sym:
    _check_2d("mm", self, mat2)
    return P.matmul(self, mat2)


@lower(aten.bmm.default)
def bmm(self: Sym, mat2: Sym) -> Sym:
    if self.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor, got {self.ndim}D and {mat2.ndim}D")
    if self.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{self.shape[0]}, {self.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    return P.matmul(self, mat2)


def _scale_add(bias: Sym, product: Sym, beta: Any, alpha: Any) -> Sym:
    if not (product.dtype.is_floating_point or product.dtype.is_complex):  # ATen casts the scalars to the type
        beta, alpha = int(beta), int(alpha)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return P.convert(product, product.dtype)
    bias = P.broadcast_to(bias, product.shape)
    if beta != 1:
        bias = bias * beta
    return P.convert(bias + product, product.dtype)


@lower(aten.addmm.default)
def addmm(self: Sym, mat1: Sym, mat2: Sym, *, beta: Any = 1, alpha: Any = 1) -> Sym:
    _check_2d("addmm", mat1, mat2)
    return _scale_add(self, P.matmul(mat1, mat2), beta, alpha)


@lower(aten.baddbmm.default)
def baddbmm(self: Sym, batch1: Sym, batch2: Sym, *, beta: Any = 1, alpha: Any = 1) -> Sym:
    return _scale_add(self, bmm(batch1, batch2), beta, alpha)


@lower(aten.addbmm.default)
def addbmm(self: Sym, batch1: Sym, batch2: Sym, *, beta: Any = 1, alpha: Any = 1) -> Sym:
    product = P.reduce(bmm(batch1, batch2), "sum", (0,))
    return _scale_add(self, product, beta, alpha)


@lower(aten.mv.default)
def mv(self: Sym, vec: Sym) -> Sym:
    return P.reshape(P.matmul(self, P.reshape(vec, (vec.shape[0], 1))), (self.shape[0],))


@lower(aten.addmv.default)
def addmv(self: Sym, mat: Sym, vec: Sym, *, beta: Any = 1, alpha: Any = 1) -> Sym:
    return _scale_add(self, mv(mat, vec), beta, alpha)


@lower(aten.dot.default)
def dot(self: Sym, tensor: Sym) -> Sym:
    if self.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {tensor.ndim}D tensors")
    if self.shape != tensor.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{self.shape[0]}] and src "
                           f"[{tensor.shape[0]}] to have the same number of elements, but got "
                           f"{self.shape[0]} and {tensor.shape[0]} elements respectively")
    return P.reshape(P.matmul(P.reshape(self, (1, -1)), P.reshape(tensor, (-1, 1))), ())
