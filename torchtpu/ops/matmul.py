"""Lowerings of the matmul family onto the MXU (dot_general): mm, bmm, addmm, baddbmm, addbmm, mv, addmv, dot,
_grouped_mm; each makes ATen's rank, size and dtype checks first, in its order, class and words."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.dtypes import check_family
from torchtpu.ops import prims as P
from torchtpu.ops.arg_checks import check_expand
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym, aten_meta_name, aten_type_name

aten = torch.ops.aten


def mxu_dtypes(op: str, *operands: Sym | None) -> None:
    """Refuses an operand dtype outside the MXU family's set (dtypes.FAMILIES), naming it, the op and the set."""
    for x in operands:
        if x is not None:
            check_family(x.dtype, op, "matmul, conv (MXU)")


def _check_shapes_multiply(mat1: Sym, mat2: Sym) -> None:
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and "
                           f"{mat2.shape[0]}x{mat2.shape[1]})")


@lower(aten.mm.default)
def mm(self: Sym, mat2: Sym) -> Sym:
    # ATen's mm meta function, in its order: ranks, inner sizes, then the dtypes.
    if self.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _check_shapes_multiply(self, mat2)
    if self.dtype != mat2.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {aten_meta_name(self.dtype)} != "
                           f"{aten_meta_name(mat2.dtype)}")
    mxu_dtypes("aten::mm", self, mat2)
    return P.matmul(self, mat2)


def _size(x: Sym, dim: int) -> int:
    """`x.size(dim)` as ATen reads it while sizing a result (IndexError naming the dim on a bad one)."""
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-x.ndim}, {x.ndim - 1}], but got "
                         f"{dim})")
    return x.shape[dim]


def _check_3d(batch1: Sym, batch2: Sym) -> None:
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")


def _check_bmm(batch1: Sym, batch2: Sym) -> None:
    _check_3d(batch1, batch2)
    if batch1.shape[0] != batch2.shape[0] or batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch1.shape[0]}, {batch1.shape[2]}] but got: [{batch2.shape[0]}, {batch2.shape[1]}].")


def _check_same_type(batch1: Sym, batch2: Sym) -> None:
    if batch1.dtype != batch2.dtype:
        raise RuntimeError(f"expected scalar type {aten_type_name(batch1.dtype)} but found "
                           f"{aten_type_name(batch2.dtype)}")


@lower(aten.bmm.default)
def bmm(self: Sym, mat2: Sym) -> Sym:
    _check_bmm(self, mat2)
    _check_same_type(self, mat2)
    mxu_dtypes("aten::bmm", self, mat2)  # after the shape checks, as CPU's dispatch on dtype comes last
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


@lower(aten.addmm.default, static=("beta", "alpha"))  # _scale_add branches on them
def addmm(self: Sym, mat1: Sym, mat2: Sym, *, beta: Any = 1, alpha: Any = 1) -> Sym:
    # ATen's addmm meta function (ranks, dtypes, inner sizes), then its CPU kernel's expand of self.
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
    for name, m in (("self", self), ("mat1", mat1)):
        if m.dtype != mat2.dtype:
            raise RuntimeError(f"{name} and mat2 must have the same dtype, but got {aten_type_name(m.dtype)} and "
                               f"{aten_type_name(mat2.dtype)}")
    _check_shapes_multiply(mat1, mat2)
    check_expand(self, [mat1.shape[0], mat2.shape[1]])
    mxu_dtypes("aten::addmm", self, mat1, mat2)
    return _scale_add(self, P.matmul(mat1, mat2), beta, alpha)


@lower(aten.baddbmm.default, static=("beta", "alpha"))
def baddbmm(self: Sym, batch1: Sym, batch2: Sym, *, beta: Any = 1, alpha: Any = 1) -> Sym:
    check_expand(self, [_size(batch1, 0), _size(batch1, 1), _size(batch2, 2)])
    _check_bmm(batch1, batch2)
    if self.dtype != batch1.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {aten_meta_name(self.dtype)}, batch1: "
                           f"{aten_meta_name(batch1.dtype)}, batch2: {aten_meta_name(batch2.dtype)}")
    _check_same_type(batch1, batch2)
    mxu_dtypes("aten::baddbmm", self, batch1, batch2)
    return _scale_add(self, bmm(batch1, batch2), beta, alpha)


@lower(aten.addbmm.default, static=("beta", "alpha"))
def addbmm(self: Sym, batch1: Sym, batch2: Sym, *, beta: Any = 1, alpha: Any = 1) -> Sym:
    check_expand(self, [_size(batch1, 1), _size(batch2, 2)])
    _check_3d(batch1, batch2)
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {batch1.shape[0]} and "
                           f"{batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x{batch1.shape[2]} and "
                           f"{batch2.shape[1]}x{batch2.shape[2]})")
    if self.dtype != batch2.dtype:  # ATen's addbmm runs addmm_(self, batch1[i], batch2[i])
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {aten_type_name(self.dtype)} and "
                           f"{aten_type_name(batch2.dtype)}")
    mxu_dtypes("aten::addbmm", self, batch1, batch2)
    product = P.reduce(bmm(batch1, batch2), "sum", (0,))
    return _scale_add(self, product, beta, alpha)


def _check_addmv(self_ndim: int, self_shape: tuple[int, ...], self_dtype: torch.dtype, mat: Sym, vec: Sym) -> None:
    """ATen's addmv checks in its order (ranks, sizes, dtypes); mv runs them with its result (mat.size(0) of
    vec's dtype) as self."""
    if not (mat.ndim == 2 and vec.ndim == 1 and self_ndim <= 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got {self_ndim}, {mat.ndim}, {vec.ndim}")
    numel = 1
    for n in self_shape:
        numel *= n
    if mat.shape[1] != vec.shape[0] or not (mat.shape[0] == numel or numel == 1):
        got = self_shape[0] if self_shape else ""
        raise RuntimeError(f"size mismatch, got input ({got}), mat ({mat.shape[0]}x{mat.shape[1]}), vec "
                           f"({vec.shape[0]})")
    if not (self_dtype == mat.dtype == vec.dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {aten_type_name(self_dtype)}, "
                           f"{aten_type_name(mat.dtype)}, and {aten_type_name(vec.dtype)}")


@lower(aten.mv.default)
def mv(self: Sym, vec: Sym) -> Sym:
    rows = _size(self, 0)  # ATen sizes its result first: a 0-d matrix is an IndexError
    _check_addmv(1, (rows,), vec.dtype, self, vec)
    mxu_dtypes("aten::mv", self, vec)
    return P.reshape(P.matmul(self, P.reshape(vec, (vec.shape[0], 1))), (self.shape[0],))


@lower(aten.addmv.default, static=("beta", "alpha"))
def addmv(self: Sym, mat: Sym, vec: Sym, *, beta: Any = 1, alpha: Any = 1) -> Sym:
    _check_addmv(self.ndim, tuple(self.shape), self.dtype, mat, vec)
    mxu_dtypes("aten::addmv", self, mat, vec)
    return _scale_add(self, mv(mat, vec), beta, alpha)


@lower(aten.dot.default)
def dot(self: Sym, tensor: Sym) -> Sym:
    if self.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {tensor.ndim}D tensors")
    if self.dtype != tensor.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{aten_type_name(self.dtype)} and {aten_type_name(tensor.dtype)}")
    if self.shape != tensor.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{self.shape[0]}] and src "
                           f"[{tensor.shape[0]}] to have the same number of elements, but got "
                           f"{self.shape[0]} and {tensor.shape[0]} elements respectively")
    mxu_dtypes("aten::dot", self, tensor)
    return P.reshape(P.matmul(P.reshape(self, (1, -1)), P.reshape(tensor, (-1, 1))), ())


_GROUPED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


@lower(aten._grouped_mm.default)
def grouped_mm(self: Sym, mat2: Sym, offs: Sym | None = None, bias: Sym | None = None,
               out_dtype: torch.dtype | None = None) -> Sym:
    """Grouped matmul (MoE experts): 3D x 3D is bmm; 2D x 3D multiplies the rows of each group (split by the
    cumulative `offs`) by that group's matrix; 2D x 2D splits the contraction by `offs`, one product per group.
    The 2D forms are IR op ragged_dot (drivers/ir_ragged_dot.py): each group's product over its own rows or
    positions only, as a grouped kernel computes and the simulator charges it."""
    if bias is not None:
        raise RuntimeError("_grouped_mm: bias is not supported (as in PyTorch)")
    if self.dtype not in _GROUPED_DTYPES or mat2.dtype != self.dtype:
        raise RuntimeError(f"_grouped_mm: expected float32, bfloat16 or float16 operands of one dtype, got "
                           f"{self.dtype} and {mat2.dtype}")
    out = out_dtype or self.dtype
    if self.shape[-1] != mat2.shape[-2]:
        raise RuntimeError(f"_grouped_mm: contraction dimension of mat_a ({self.shape[-1]}) and mat_b "
                           f"({mat2.shape[-2]}) must match")
    if self.ndim == 3 and mat2.ndim == 3:
        if offs is not None or self.shape[0] != mat2.shape[0]:
            raise RuntimeError("_grouped_mm: 3D x 3D takes no offs and needs equal batch sizes")
        return P.dot_general(self, mat2, (0,), (0,), (2,), (1,), out)
    if offs is None or offs.ndim != 1 or offs.dtype != torch.int32:
        raise RuntimeError("_grouped_mm: 2D operands need offs, a 1D int32 tensor of cumulative group ends")
    groups = offs.shape[0]
    if self.ndim == 2 and mat2.ndim == 3:  # (rows, K) x (groups, K, N) -> (rows, N)
        if mat2.shape[0] != groups:
            raise RuntimeError(f"_grouped_mm: {groups} offsets for {mat2.shape[0]} matrices")
        return P.ragged_dot(self, mat2, offs, "rows", out)
    if self.ndim == 2 and mat2.ndim == 2:  # (M, K) x (K, N), K split by offs -> (groups, M, N)
        return P.ragged_dot(self, mat2, offs, "contract", out)
    raise NotImplementedError(f"_grouped_mm: {self.ndim}D x {mat2.ndim}D is not supported on tpu; supported: "
                              "3D x 3D, 2D x 3D and 2D x 2D with offs")
