"""ATen's argument checks for cat, embedding, embedding_dense_backward and _cdist_forward, made before their
lowerings in ATen's order, with its exception class and words (cat_meta / check_cat_shape_except_dim, embedding's
checkDim and checkScalarTypes, embedding_backward's reshape of grad, cdist_impl)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from torchtpu.ops.tracing import Sym, aten_type_name

# torch's legacy tensor type names, as checkScalarTypes prints a tensor's type (DeprecatedTypeProperties): the
# eight legacy Python classes, else "CPU<ScalarType>Type".
_LEGACY = {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.uint8: "Byte",
           torch.int8: "Char", torch.int16: "Short", torch.int32: "Int", torch.int64: "Long"}
_SCALAR = {torch.bfloat16: "BFloat16", torch.bool: "Bool", torch.complex64: "ComplexFloat",
           torch.complex128: "ComplexDouble"}


def sizes_text(shape: Sequence[int]) -> str:
    """A shape as ATen prints an IntArrayRef in a message: `[2, 3]`."""
    return f"[{', '.join(str(int(s)) for s in shape)}]"


def dim_size(shape: Sequence[int], dim: int) -> int:
    """`tensor.size(dim)` as ATen evaluates it (inside a check or its message): IndexError on a 0-d tensor or a dim
    out of range, in ATen's words."""
    n = len(shape)
    if n == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return int(shape[dim])


def wrap_dim(dim: int, ndim: int) -> int:
    """maybe_wrap_dim: `dim` in [0, ndim) (a 0-d tensor takes dims -1 and 0), or ATen's IndexError."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def check_expand(x: Sym | torch.Tensor, sizes: Sequence[int]) -> None:
    """ATen's `x.expand(sizes)` checks (inferExpandGeometry), from the last dim, in its words."""
    shape, target = [int(s) for s in x.shape], [int(s) for s in sizes]
    if len(target) < len(shape):
        raise RuntimeError(f"expand({legacy_type_name(x.dtype)}{{{sizes_text(shape)}}}, size={sizes_text(target)}): "
                           f"the number of sizes provided ({len(target)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(shape)})")
    lead = len(target) - len(shape)
    for i in range(len(target) - 1, lead - 1, -1):
        have = shape[i - lead]
        if have != target[i] and have != 1 and target[i] != -1:
            raise RuntimeError(f"The expanded size of the tensor ({target[i]}) must match the existing size ({have}) "
                               f"at non-singleton dimension {i}.  Target sizes: {sizes_text(target)}.  Tensor sizes: "
                               f"{sizes_text(shape)}")

def legacy_type_name(dtype: torch.dtype) -> str:
    if dtype in _LEGACY:
        return f"torch.{_LEGACY[dtype]}Tensor"
    return f"CPU{_SCALAR.get(dtype, str(dtype).removeprefix('torch.'))}Type"


def _check_index_dtype(indices: Sym, arg: int, op: str) -> None:
    if indices.dtype not in (torch.int64, torch.int32):
        raise RuntimeError(f"Expected tensor for argument #{arg} 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {legacy_type_name(indices.dtype)} instead (while checking arguments "
                           f"for {op})")


def check_embedding(weight: Sym, indices: Sym) -> None:
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    _check_index_dtype(indices, 1, "embedding")


def _view_error(shape: Sequence[int], numel: int) -> RuntimeError:
    return RuntimeError(f"shape '[{', '.join(str(s) for s in shape)}]' is invalid for input of size {numel}")


def check_embedding_backward(grad: Sym, indices: Sym, num_weights: int) -> None:
    _check_index_dtype(indices, 2, "embedding_backward")
    if grad.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if num_weights < 0:
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    shape = (indices.numel(), grad.shape[-1])
    if shape[0] * shape[1] != grad.numel():
        raise _view_error(shape, grad.numel())


def _skipped(t: Sym) -> bool:
    """cat_should_skip_tensor: a 1-D empty tensor takes part in no shape check (legacy behaviour)."""
    return t.ndim == 1 and t.shape[0] == 0


def check_cat(tensors: Sequence[Sym], dim: int) -> int | None:
    """ATen's cat_meta checks; returns the wrapped dim, or None when every tensor is skipped."""
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    first = next((t for t in tensors if not _skipped(t)), None)
    if first is None:
        return None
    n = first.ndim
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    d = dim % n
    for i, t in enumerate(tensors):
        if _skipped(t):
            continue
        if t.ndim != n:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {n} and {t.ndim}")
        for k in range(n):
            if k != d and t.shape[k] != first.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{first.shape[k]} but got size {t.shape[k]} for tensor number {i} in the list.")
    return d


def check_cdist(x1: torch.Tensor, x2: torch.Tensor, p: float, compute_mode: int | None) -> None:
    """_cdist_forward's checks in ATen's order (_cdist_forward, cdist_impl, the kernel's dtype check). Half and
    bfloat16, which CPU's kernel lacks, run as on CUDA."""
    for name, x in (("X1", x1), ("X2", x2)):
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {aten_type_name(x.dtype)}")
    if not p >= 0:  # ATen's TORCH_CHECK(p >= 0): a NaN p is refused too
        raise RuntimeError("cdist only supports non-negative p values")
    mode = 0 if compute_mode is None else compute_mode
    if not 0 <= mode <= 2:
        raise RuntimeError(f"possible modes: 0, 1, 2, but was: {mode}")
    torch._C._infer_size(torch.Size(x1.shape[:-2]), torch.Size(x2.shape[:-2]))
    if x1.dtype != x2.dtype:
        raise RuntimeError(f"expected scalar type {aten_type_name(x1.dtype)} but found {aten_type_name(x2.dtype)}")
