"""ATen's argument checks of advanced indexing (`x[idx]`, `x[idx] = v`), in ATen's order, classes and words
(native/TensorAdvancedIndexing.cpp and IndexingUtils.h: checkIndexTensorTypes, expandTensors' mask check, the
indices' broadcast, index_put_'s value shape), so a bad index raises what CPU raises instead of a broadcast error
from the lowering or, for a mask of the wrong shape, a result."""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from torchtpu.execution.user_frames import PACKAGE_DIRS  # torchtpu's and torch's own files: not the user's line
from torchtpu.ops.arg_checks import dim_size, sizes_text, wrap_dim
from torchtpu.ops.cpu_raise_checks import broadcast
from torchtpu.ops.tracing import aten_type_name

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


def check_value_dtype(self_dtype: torch.dtype, value_dtype: torch.dtype) -> None:
    """index_put_: the value's dtype must be the indexed tensor's (make_index_put_iterator, after the shape)."""
    if self_dtype != value_dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{aten_type_name(self_dtype)} for the destination and {aten_type_name(value_dtype)} "
                           "for the source.")


def put_past_rank(self_shape: Sequence[int], indices: Sequence[Any], value_shape: Sequence[int],
                  self_dtype: torch.dtype, value_dtype: torch.dtype) -> list[Any]:
    """index_put_ whose masks' nonzero() columns and the Nones after them are more entries than self has dims
    (`[mask, None]`, the mask over every dim; fuzz seed 72: "too many indices" where CPU checks the value's
    shape). ATen's make_info: a non-contiguous set of indices moves to the front over self's dims only
    (transposeToFront; the entries past them dropped): returns those. A contiguous set keeps them: AdvancedIndex
    reads src.size(d) of each index (past the dims: IndexError), the indexing result replaces the indexed dims
    (the extra Nones have none), the value must expand to it, then TensorIterator broadcasts that result with the
    indices, viewed with a 1 for each None after them, which never gives the result's shape: ATen's error."""
    ndim = len(self_shape)
    dims = [i for i, idx in enumerate(indices) if idx is not None]
    bshape = broadcast_indices([indices[i].shape for i in dims])
    if dims != list(range(dims[0], dims[-1] + 1)):
        return list(indices[:ndim])
    for d in dims:
        wrap_dim(d, ndim)
    result = (*self_shape[:dims[0]], *bshape, *self_shape[dims[-1] + 1:])
    check_value_shape(value_shape, result)
    check_value_dtype(self_dtype, value_dtype)
    viewed = (1,) * dims[0] + bshape + (1,) * (len(indices) - dims[-1] - 1)
    shape = broadcast(broadcast(result, value_shape), viewed)
    raise RuntimeError(f"output with shape {list(result)} doesn't match the broadcast shape {list(shape)}")


def dispatches_to_masked_fill(indices: Sequence[Any], value: Any) -> bool:
    """ATen's canDispatchToMaskedFill: one boolean/uint8 mask as the only index and a one-element value, which
    index_put_ then writes with masked_fill_ (the value cast to the tensor's dtype, not refused)."""
    given = [i for i in indices if i is not None]
    return (isinstance(value, torch.Tensor) and value.numel() == 1 and len(given) == 1
            and isinstance(given[0], torch.Tensor) and given[0].dtype in (torch.bool, torch.uint8))




def refuse_no_index_tensor() -> None:
    """index / index_put_ whose only index tensors were 0-d boolean masks (`x[[tensor(True)]]` as ATen's op, or
    index_put_ with accumulate=True or a value that masked_fill_ cannot take): the masks expand to no index tensor,
    and CPU's index kernel then fails its internal assert (its TensorIterator has no index operand). Raised here in
    CPU's class, naming the problem, rather than computing what CPU never does."""
    raise RuntimeError(f"{_NO_INDEX_ASSERT}: 0-dim boolean masks (and None) only expand to no index tensor; index "
                       "with a mask of the indexed dims' shape, or use torch.where(mask, value, x)")


def check_index_func(func: str, self: Any, dim: int, index: Any, source: Any) -> int:
    """index_add / index_reduce (`func`): ATen's index_func_meta_impl checks, in its order; returns the wrapped
    dim."""
    d = wrap_dim(dim, self.ndim)
    if index.ndim > 1:
        raise IndexError(f"{func}_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{aten_type_name(index.dtype)} and size: {sizes_text(index.shape)}")
    if index.dtype not in (torch.int64, torch.int32):
        raise RuntimeError(f"{func}_(): Expected dtype int32/int64 for index but got: {aten_type_name(index.dtype)}")
    if self.dtype != source.dtype:
        raise RuntimeError(f"{func}_(): self ({aten_type_name(self.dtype)}) and source "
                           f"({aten_type_name(source.dtype)}) must have the same scalar type")
    if d != 0 and d >= source.ndim:  # index_add's too, and a 0-d source's (fuzz seeds 55, 59, 62)
        raise RuntimeError(f"{func}_(): Indexing dim {d} is out of bounds of the source tensor with dim "
                           f"{source.ndim}")
    numel = index.numel()
    if numel != (1 if source.ndim == 0 else dim_size(source.shape, d)):
        raise RuntimeError(f"{func}_(): Number of indices ({numel}) should be equal to source.size(dim): "
                           f"({dim_size(source.shape, d)}), for dim: {d}")
    self_sizes, source_sizes = list(self.shape), list(source.shape)
    if self.ndim and source.ndim:
        del self_sizes[d], source_sizes[d]  # source.size(d) exists: the count check read it
    if self_sizes != source_sizes:
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. Got "
                           f"self.shape = {sizes_text(self.shape)} source.shape = {sizes_text(source.shape)}")
    return d


def check_index_copy(self: Any, dim: int, index: Any, source: Any) -> int:
    """index_copy: ATen's index_copy meta checks, in its order and classes; returns the wrapped dim."""
    d = wrap_dim(dim, self.ndim)
    if index.ndim >= 2:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    n = index.numel()
    if source.ndim == 0 and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element (got {n})")
    if source.ndim != self.ndim and source.ndim and self.ndim:
        raise IndexError("index_copy_(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({source.ndim}), destination dimensionality ({self.ndim})")
    if index.dtype != torch.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {aten_type_name(index.dtype)}")
    if self.dtype != source.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{aten_type_name(self.dtype)} and (source) {aten_type_name(source.dtype)}")
    self_sliced = [s for i, s in enumerate(self.shape) if i != d]
    source_sliced = [s for i, s in enumerate(source.shape) if i != d]
    if self_sliced != source_sliced:
        raise RuntimeError("index_copy_(): Source/destination tensor must have same slice shapes. Destination slice "
                           f"shape: {' '.join(map(str, self_sliced))} at dimension {d} and source slice shape: "
                           f"{' '.join(map(str, source_sliced))} at dimension 0.")
    if source.ndim and n != source.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) "
                         f"({source.shape[d]})")
    return d


def check_index_fill(self: Any, dim: int, index: Any, value: Any) -> int:
    """index_fill: ATen's checks (an int64 index of rank <= 1, a 0-d value tensor, no complex value into a
    non-complex self, dim wrapped as for a 1-d self when self is 0-d); returns the wrapped dim."""
    if getattr(value, "ndim", 0) != 0:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    if index.dtype != torch.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    value_dtype = getattr(value, "dtype", None)
    complex_value = isinstance(value, complex) or (value_dtype is not None and value_dtype.is_complex)
    if complex_value and not self.dtype.is_complex:
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not supported")
    d = wrap_dim(dim, self.ndim)
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    return d


def _nonempty_size(shape: Sequence[int], dim: int) -> int:
    """ATen's ensure_nonempty_size: 1 for a 0-d tensor, else size(dim) (IndexError on a bad dim)."""
    return 1 if len(shape) == 0 else dim_size(shape, dim)


def check_gather(self: Any, dim: int, index: Any) -> None:
    """gather: ATen's index dtype check and gather_shape_check (`dim` wrapped), skipped for an empty index."""
    if index.numel() == 0:  # ATen checks an empty index's dtype neither
        return
    if index.dtype not in (torch.int64, torch.int32):
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    dims = max(self.ndim, 1)
    if max(index.ndim, 1) != dims:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for i in range(dims):
        if i != dim and _nonempty_size(index.shape, i) > _nonempty_size(self.shape, i):
            raise RuntimeError(f"Size does not match at dimension {i} expected index {sizes_text(index.shape)} "
                               f"to be no larger than self {sizes_text(self.shape)} apart from dimension {dim}")


def check_scatter(self: Any, dim: int, index: Any, src: Any) -> None:
    """scatter / scatter_add / scatter_reduce: ATen's scatter_gather_dtype_check and scatter_shape_check (`dim`
    wrapped; `src` None or a Python scalar for the value overloads)."""
    src = src if hasattr(src, "shape") else None
    if index.numel() and index.dtype not in (torch.int64, torch.int32):
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if src is not None and src.dtype != self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if index.numel() == 0:
        return
    dims = max(self.ndim, 1)
    if max(index.ndim, 1) != dims:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    wrong = any(i != dim and _nonempty_size(index.shape, i) > _nonempty_size(self.shape, i) for i in range(dims))
    for i in range(dims) if not wrong and src is not None else ():
        if src.ndim and i >= src.ndim:  # ensure_nonempty_size reads src.size(i) unchecked (fuzz seed 53)
            raise IndexError(f"Dimension out of range (expected to be in range of [{-src.ndim}, {src.ndim - 1}], but "
                             f"got {i})")
        if _nonempty_size(index.shape, i) > _nonempty_size(src.shape, i):
            wrong = True
            break
    if wrong:
        tail = f" and to be no larger size than src {sizes_text(src.shape)}" if src is not None else ""
        raise RuntimeError(f"Expected index {sizes_text(index.shape)} to be no larger than self "
                           f"{sizes_text(self.shape)} apart from dimension {dim}{tail}")
    if src is not None and max(src.ndim, 1) != max(index.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")


def check_index_select(self: Any, index: Any) -> None:
    """index_select_out_cpu_'s checks after wrapping the dim, in its order and classes."""
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if self.ndim == 0 and index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
    if index.dtype not in (torch.int64, torch.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")


_NO_INDEX_ASSERT = ("ntensor >= 3 INTERNAL ASSERT FAILED (ATen's CPU index kernel, IndexKernelUtils.h: no index "
                    "tensor given)")


def check_some_index(self: Any, indices: Sequence[Any], rest: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """index / index_put_ with no index tensor (`[]` or only None, as given: a 0-d mask turns into None later) as
    CPU fails them (fuzz seed 29: _index_put_impl_ of [None] wrote every element, CPU raises): index's [] its
    check, [None] the kernel's internal assert; index_put_'s value checks, then the kernel's assert (accumulate, or a
    value of other than one element), else the one-value path's masked_fill_ refusal (a None for every dim) or
    TensorIterator's undefined index. A self of no elements passes."""
    if any(isinstance(i, torch.Tensor) for i in indices):
        return
    if not rest and "values" not in kwargs:  # index.Tensor
        if not indices:
            raise IndexError("at least one index must be provided")
        raise RuntimeError(_NO_INDEX_ASSERT)
    values = rest[0] if rest else kwargs["values"]
    accumulate = rest[1] if len(rest) > 1 else kwargs.get("accumulate", False)
    check_value_shape(values.shape, self.shape)
    check_value_dtype(self.dtype, values.dtype)
    if math.prod(self.shape) == 0 and self.ndim:
        return
    if accumulate or math.prod(values.shape) != 1:
        raise RuntimeError(_NO_INDEX_ASSERT)
    if len(indices) == self.ndim:  # index_put_'s one-value path: masked_fill_ by the (undefined) last index
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype nullptr (uninitialized)")
    raise RuntimeError("sym_strides() called on an undefined Tensor")
