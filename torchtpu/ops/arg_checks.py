"""ATen's argument checks for cat, embedding and embedding_dense_backward, made before their lowerings in ATen's
order, with its exception class and words (cat_meta / check_cat_shape_except_dim, embedding's checkDim and
checkScalarTypes, embedding_backward's reshape of grad)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from torchtpu.ops.tracing import Sym

# torch's legacy tensor type names, as checkScalarTypes prints a tensor's type (DeprecatedTypeProperties): the
# eight legacy Python classes, else "CPU<ScalarType>Type".
_LEGACY = {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.uint8: "Byte",
           torch.int8: "Char", torch.int16: "Short", torch.int32: "Int", torch.int64: "Long"}
_SCALAR = {torch.bfloat16: "BFloat16", torch.bool: "Bool", torch.complex64: "ComplexFloat",
           torch.complex128: "ComplexDouble"}


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
