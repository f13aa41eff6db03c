"""ATen's argument checks of advanced indexing (`x[idx]`, `x[idx] = v`), in ATen's order, classes and words
(native/TensorAdvancedIndexing.cpp and IndexingUtils.h: checkIndexTensorTypes, expandTensors' mask check, the
indices' broadcast, index_put_'s value shape), so a bad index raises what CPU raises instead of a broadcast error
from the lowering or, for a mask of the wrong shape, a result."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from torchtpu.execution.deferred import PACKAGE_DIRS  # torchtpu's and torch's own files: not the user's line

_INDEX_DTYPES = (torch.int64, torch.int32, torch.uint8, torch.bool)


def warn_uint8_index() -> None:
    """ATen's deprecation warning for a uint8 index, attributed to the user's line as a C++ TORCH_WARN is (so the
    default filter shows it once per user line, not once per process)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(PACKAGE_DIRS):
        frame = frame.f_back
    warnings.warn_explicit("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                           "instead.", UserWarning, frame.f_code.co_filename, frame.f_lineno,
                           module=frame.f_globals.get("__name__"),
                           registry=frame.f_globals.setdefault("__warningregistry__", {}),
                           module_globals=frame.f_globals)


def check_count(ndim: int, indices: Sequence[Any]) -> None:
    """At most one index entry per dim (a mask counting one before it is expanded, as ATen's first check)."""
    if len(indices) > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim} (got {len(indices)})")


def check_index_dtypes(indices: Sequence[Any]) -> None:
    """checkIndexTensorTypes: every index tensor is long, int, byte or bool."""
    for idx in indices:
        if idx is not None and idx.dtype not in _INDEX_DTYPES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def check_mask(self_shape: Sequence[int], mask: torch.Tensor, position: int) -> None:
    """expandTensors: a byte/bool mask's sizes equal those of the dims it indexes, from `position` (the count of
    index entries before it, a mask counting one per dim)."""
    ndim = len(self_shape)
    for j, size in enumerate(mask.shape):
        at = position + j
        if at >= ndim:
            low = -ndim if ndim else -1
            raise IndexError(f"Dimension out of range (expected to be in range of [{low}, {max(ndim - 1, 0)}], "
                             f"but got {at})")
        if size != self_shape[at]:
            raise IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does not match the shape of the "
                             f"indexed tensor {list(self_shape)} at index {at}")


def check_masks(self_shape: Sequence[int], indices: Sequence[Any]) -> None:
    """Every mask of `indices` checked where it stands."""
    position = 0
    for idx in indices:
        if isinstance(idx, torch.Tensor) and idx.dtype in (torch.bool, torch.uint8):
            check_mask(self_shape, idx, position)
            position += idx.ndim
        else:
            position += 1


def broadcast_indices(shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The indices' common shape, or ATen's IndexError naming every shape."""
    try:
        return tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        listed = ", ".join(str(list(s)) for s in shapes)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes {listed}") \
            from None


def check_value_shape(value_shape: Sequence[int], result_shape: Sequence[int]) -> None:
    """index_put_: the value must expand to the indexing result (is_expandable_to)."""
    value, result = tuple(value_shape), tuple(result_shape)
    if len(value) > len(result) or any(v not in (1, r) for v, r in zip(value[::-1], result[::-1])):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value)} cannot be broadcast to indexing "
                           f"result of shape {list(result)}")
