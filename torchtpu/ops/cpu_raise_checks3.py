"""More of CPU's argument checks that tpu's lowerings skipped (the schema fuzzer's `cpu_raises` class, seeds 15 and
18): calls CPU refuses from their shapes and dtypes alone, where tpu computed a silent result. Merged with
ops/cpu_raise_checks*.py's `BOUND_CHECKS` by ops/arg_order_checks.py (they run behind the op's earlier checks, in
eager mode and for a compiled graph's node; only `shape` and `dtype` are read, strides only of a real tensor).

- _embedding_bag_backward: indices and offsets promoted to one type, then its checkScalarTypes / checkContiguous
  of indices and offset2bag (unless indices has elements and offset2bag none: then the op makes its own); the dense
  kernel's (also _embedding_bag_dense_backward): grad's floating type, a grad of under 2 dims refused (ATen reads
  its second size unchecked), then max mode's index_add_ of
  maximum_indices, or sum / mean mode's data_ptr<scalar_t / index_t> of per_sample_weights, offset2bag, bag_size;
  the sparse kernel's index_select by offset2bag (a vector).
- _linalg_solve_ex: its meta, behind the floating A of ops/cpu_raise_checks.py: A and B of one dtype, then
  checkInputsSolver (square A, a matrix B after the vector case's unsqueeze, the equation's sizes) and the
  batch dims' broadcast.
- nll_loss_backward: the meta's shape checks, then the kernel's dispatch (floating types) and its reads (a Long
  target unless Byte; weight, total_weight and grad_output in self's dtype, in the kernel's order).
- multilabel_margin_loss_backward: the shape check (ops/loss_checks.py), target and is_target of one size, then,
  for an input with elements, the kernel's dispatch (float and double) and its reads (a Long target, is_target,
  grad_input, grad_output in self's dtype).
- abs / abs_ of a bool tensor with elements: the kernel's dispatch (the refusal table leaves it out: an empty one
  computes).
- pow of a bool tensor or bool Scalar to a bool tensor: the kernel's dispatch (even of no elements).
- histogram: a weight of self's dtype and of self's element count (histogramdd_check_inputs on the reshaped
  input and weight), and histogramdd_prepare_out's out dtypes and bin count (first of all for a bin count);
  with no range, the data's own range must be finite (a `prepare` step of the lowerings: it reads data back);
  no complex input (the data range's dispatch, else the kernel's).
- fill_.Tensor: a 0-d value on self's device is copied (copy_'s internal overlap check of an expanded self).
- leaky_relu_backward: the meta's negval.to<double>() >= 0 (self_is_result; NaN fails it), the iterator's
  shapes and (out=) cast, the kernel's dispatch (floating types) and its negval.to<opmath_t>() (a complex slope
  with an imaginary part, a float32 overflow).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from torchtpu.dtypes import checked_scalar
from torchtpu.ops.activation_checks import LEAKY_RELU_NEGATIVE_SLOPE
from torchtpu.ops.arg_checks import legacy_type_name, sizes_text
from torchtpu.ops.cpu_raise_checks import broadcast, result_type
from torchtpu.ops.loss_checks import check_multilabel_margin
from torchtpu.ops.tracing import aten_meta_name, aten_type_name

Bound = dict[str, Any]

_INDEX = (torch.int64, torch.int32)
_FLOATING = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _numel(shape: Any) -> int:
    return math.prod(int(s) for s in shape)


def _scalar_type(expected: torch.dtype, found: torch.dtype) -> None:
    """A kernel's data_ptr<T>() of a tensor of another type."""
    if found != expected:
        raise RuntimeError(f"expected scalar type {aten_type_name(expected)} but found {aten_type_name(found)}")


def _check_types(t: Any, name: str, allowed: tuple[torch.dtype, ...], dtype: torch.dtype | None = None) -> None:
    """checkScalarTypes("embedding_bag", {name, 1}, allowed) on `t` (of `dtype`, where it was converted)."""
    dtype = t.dtype if dtype is None else dtype
    if dtype not in allowed:
        names = ", ".join(aten_type_name(d) for d in allowed)
        raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following scalar types: "
                           f"{names}; but got {legacy_type_name(dtype)} instead (while checking arguments for "
                           f"embedding_bag)")


def _check_contiguous(t: Any, name: str) -> None:
    if isinstance(t, torch.Tensor) and not t.is_contiguous():
        raise RuntimeError(f"Expected contiguous tensor, but got non-contiguous tensor for argument #1 '{name}' "
                           f"(while checking arguments for embedding_bag)")


def _embedding_bag(a: Bound) -> None:
    """_embedding_bag_cpu_impl's checks, in its order, before it reads data: the ranks of indices, offsets (with 1-D
    indices) and weight; check_arguments on indices and offsets promoted to one type, the weight's type, (the data
    checks of offsets[0] and offsets[-1] are left to the kernel), per_sample_weights with mode 'sum' of the weight's
    type, 1-D and one per index, include_last_offset's offset; then the mode."""
    weight, indices, offsets = a["weight"], a["indices"], a["offsets"]
    if indices.ndim not in (1, 2):
        raise RuntimeError(f"input has to be a 1D or 2D Tensor, but got Tensor of dimension {indices.ndim}")
    if indices.ndim == 1 and offsets.ndim != 1:
        raise RuntimeError(f"offsets has to be a 1D Tensor, but got Tensor of dimension {offsets.ndim}")
    if weight.ndim != 2:
        raise RuntimeError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    _check_types(indices, "indices", _INDEX, torch.promote_types(offsets.dtype, indices.dtype))
    _check_types(weight, "weight", _FLOATING)
    mode, psw = a.get("mode", 0), a.get("per_sample_weights")
    if psw is not None:
        if mode != 0:
            raise RuntimeError("embedding_bag: per_sample_weights only supported with mode='sum'")
        if psw.dtype != weight.dtype:
            raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as tensor for argument "
                               f"#1 'per_sample_weights'; but type {legacy_type_name(weight.dtype)} does not equal "
                               f"{legacy_type_name(psw.dtype)} (while checking arguments for embedding_bag)")
        for what, ok in (("dim() == 1", psw.ndim == 1), ("numel() == indices.numel()",
                                                          _numel(psw.shape) == _numel(indices.shape))):
            if not ok:
                raise RuntimeError(f"Expected per_sample_weights.value().{what} to be true, but got false.  (Could "
                                   f"this error message be improved?  If so, please report an enhancement request "
                                   f"to PyTorch.)")
    if a.get("include_last_offset", False) and offsets.shape[0] < 1:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")
    if mode not in (0, 1, 2):
        raise RuntimeError("`mode` must be sum, mean, or max.")


def _embedding_bag_dense(a: Bound, index: torch.dtype, offset2bag: torch.dtype) -> None:
    """_embedding_bag_dense_backward_cpu on indices of type `index` and an offset2bag of type `offset2bag`."""
    grad = a["grad"]
    _check_types(grad, "grad_", (torch.float16, torch.bfloat16, torch.float32, torch.float64))
    if len(grad.shape) < 2:  # both modes' first step: at::zeros({num_weights, grad.sizes()[1]})
        raise RuntimeError(f"_embedding_bag_dense_backward: grad of {len(grad.shape)} dims, not 2 (bags x embedding "
                           "dim): ATen's CPU kernel reads its second size unchecked there (undefined: past the end of "
                           "its sizes), so tpu refuses it")
    if a["mode"] == 2:  # index_add_ by each column of the bags' maximum_indices
        columns = int(grad.shape[1]) if len(grad.shape) == 2 else 0
        max_indices = a["maximum_indices"]
        if columns and max_indices.dtype not in _INDEX:
            raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                               f"{aten_type_name(max_indices.dtype)}")
        return
    weights = a.get("per_sample_weights")
    if weights is not None:
        _scalar_type(grad.dtype, weights.dtype)
    if index not in _INDEX:
        raise NotImplementedError(f"\"_embedding_bag_dense_backward_cpu_sum_mean\" not implemented for "
                                  f"'{aten_type_name(index)}'")
    _scalar_type(index, offset2bag)
    _scalar_type(index, a["bag_size"].dtype)


def _embedding_bag_backward(a: Bound) -> None:
    indices, offsets, offset2bag = a["indices"], a["offsets"], a["offset2bag"]
    index = torch.promote_types(indices.dtype, offsets.dtype)  # promoteIndicesAndOffsets
    _check_types(indices, "indices", _INDEX, index)
    if indices.dtype == index:
        _check_contiguous(indices, "indices")
    if offsets.dtype == index:
        _check_contiguous(offsets, "offsets")
    made = _numel(indices.shape) != 0 and _numel(offset2bag.shape) == 0  # the op computes offset2bag itself
    if not made:
        _check_types(offset2bag, "offset2bag", _INDEX)
        _check_contiguous(offset2bag, "offset2bag")
    elif len(offsets.shape) > 1:  # make_offset2bag's index_add_ by the (promoted) offsets
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {len(offsets.shape)} with "
                         f"type: {aten_type_name(index)} and size: {sizes_text(offsets.shape)}")
    if not a["sparse"]:
        _embedding_bag_dense(a, index, index if made else offset2bag.dtype)
    elif not made and len(offset2bag.shape) > 1:  # the sparse kernel's grad.index_select(0, offset2bag)
        raise IndexError("index_select(): Index is supposed to be a vector")


def _embedding_bag_dense_backward(a: Bound) -> None:
    _embedding_bag_dense(a, a["indices"].dtype, a["offset2bag"].dtype)


def _linalg_solve(a: Bound) -> None:  # _linalg_solve_ex's meta, after checkFloatingOrComplex(A)
    x, b = a["A"].dtype, a["B"].dtype
    if x != b:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{aten_type_name(x)} and B of type {aten_type_name(b)} instead")
    shape, rhs, left = [int(s) for s in a["A"].shape], [int(s) for s in a["B"].shape], a.get("left", True)
    if len(rhs) == 1 or (len(shape) - 1 == len(rhs) and rhs == shape[:-1]):  # linalg_solve_is_vector_rhs
        rhs = [*rhs, 1]
    if len(shape) < 2:  # checkInputsSolver: squareCheckInputs(A), checkIsMatrix(B), the equation's sizes
        raise RuntimeError("linalg.solve: The input tensor A must have at least 2 dimensions.")
    if shape[-1] != shape[-2]:
        raise RuntimeError(f"linalg.solve: A must be batches of square matrices, but they are {shape[-2]} by "
                           f"{shape[-1]} matrices")
    if len(rhs) < 2:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    if (shape[-2] != rhs[-2]) if left else (shape[-1] != rhs[-1]):
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({shape[-2]}x{shape[-1]} and {rhs[-2]}x{rhs[-1]})")
    broadcast(rhs[:-2], shape[:-2])  # _linalg_broadcast_batch_dims(B, A)


def _nll_loss_backward(a: Bound) -> None:
    grad, x, target, weight, total = a["grad_output"], a["self"], a["target"], a.get("weight"), a["total_weight"]
    shape, tshape = [int(s) for s in x.shape], [int(s) for s in target.shape]
    if len(shape) not in (1, 2):
        raise RuntimeError("input tensor should be 1D or 2D")
    if len(tshape) > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if not (len(shape) == 1 and not tshape):
        if not tshape:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if shape[0] != tshape[0]:
            raise RuntimeError(f"size mismatch (got input: {sizes_text(shape)}, target: {sizes_text(tshape)})")
    if _numel(total.shape) != 1:
        raise RuntimeError(f"expected total_weight to be a  single element tensor, got: {sizes_text(total.shape)} "
                           f"({_numel(total.shape)} elements)")
    if weight is not None and _numel(weight.shape) != shape[-1]:
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    batch_grad = a["reduction"] == 0 and len(shape) == 2
    gshape = [int(s) for s in grad.shape]
    if batch_grad and not (len(gshape) == 1 and gshape[0] == shape[0]):  # check_dim_size(grad_output, 1, 0, N)
        if not gshape:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        raise RuntimeError(f"Expected a tensor of dimension 1 and tensor.size[0] == {shape[0]} but got: dimension "
                           f"{len(gshape)} and tensor.size[0] = {gshape[0]}")
    if not batch_grad and not (len(gshape) <= 1 and _numel(gshape) == 1):
        raise RuntimeError(f"Expected a single element grad_output tensor, but got: {sizes_text(gshape)}")
    out = a.get("grad_input")
    if out is not None and out.dtype != x.dtype:
        return  # the out= dtype check (elsewhere)
    if x.dtype not in _FLOATING:
        raise NotImplementedError(f"\"nll_loss_backward_out_frame\" not implemented for '{aten_type_name(x.dtype)}'")
    if target.dtype != torch.uint8:
        _scalar_type(torch.int64, target.dtype)
    if weight is not None:
        _scalar_type(x.dtype, weight.dtype)
    if not batch_grad:
        _scalar_type(x.dtype, total.dtype)
    _scalar_type(x.dtype, grad.dtype)


def _multilabel_margin_loss_backward(a: Bound) -> None:
    grad, x, target, is_target = a["grad_output"], a["self"], a["target"], a["is_target"]
    check_multilabel_margin(x, target)
    if list(target.shape) != list(is_target.shape):
        raise RuntimeError(f"Expected tensor for argument #3 'target' to have same size as tensor for argument #5 "
                           f"'is_target'; but {sizes_text(target.shape)} does not equal "
                           f"{sizes_text(is_target.shape)} (while checking arguments for "
                           f"multilabel_margin_loss_backward_cpu_template)")
    if _numel(x.shape) == 0:
        return
    if x.dtype not in (torch.float32, torch.float64):
        raise NotImplementedError(f"\"multilabel_margin_loss_backward_out_frame\" not implemented for "
                                  f"'{aten_type_name(x.dtype)}'")
    _scalar_type(torch.int64, target.dtype)
    _scalar_type(x.dtype, is_target.dtype)
    out = a.get("grad_input")
    if out is not None:
        _scalar_type(x.dtype, out.dtype)
    if a["reduction"] != 0 or len(grad.shape) == 0:
        _scalar_type(x.dtype, grad.dtype)


def histogram_prepare_out(a: Bound) -> None:
    """histogram's histogramdd_prepare_out: the out tensors' dtypes, then the bin count (a bins tensor's element
    count less one). The bin-count form makes it first (ops/arg_order_checks.py), the bins tensor form after
    histogramdd_check_inputs."""
    x, bins = a["self"], a["bins"]
    for name in ("hist", "bin_edges"):
        out = a.get(name)
        if out is not None and out.dtype != x.dtype:
            suffix = " for dimension 0" if name == "bin_edges" else ""
            raise RuntimeError(f"torch.histogram: input tensor and {name} tensor should have the same dtype, but got "
                               f"input {aten_meta_name(x.dtype)} and {name} {aten_meta_name(out.dtype)}{suffix}")
    count = _numel(bins.shape) - 1 if hasattr(bins, "shape") else int(bins)
    if count <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {count} for dimension 0")


def _histogram(a: Bound) -> None:  # after the bins tensor's checks and the range's (arg_order_checks, cpu_raise_checks)
    x, bins, weight = a["self"], a["bins"], a.get("weight")
    data_range = isinstance(bins, int) and a.get("range") is None and _numel(x.shape) > 0
    if data_range and x.dtype.is_complex:  # select_outer_bin_edges' dispatch where it reads the data
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{aten_type_name(x.dtype)}'")
    if weight is not None and (not data_range or x.dtype in (torch.float32, torch.float64)):
        _histogram_weight(x, weight)  # (that dispatch refuses other dtypes first too: the refusal table)
    if not isinstance(bins, int):
        histogram_prepare_out(a)
    if x.dtype.is_complex:  # histogramdd_stub's dispatch
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{aten_type_name(x.dtype)}'")


def _histogram_weight(x: Any, weight: Any) -> None:  # histogramdd_check_inputs on the reshaped input and weight
    if weight.dtype != x.dtype:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                           f"have the same dtype, but got input({aten_meta_name(x.dtype)}), and "
                           f"weight({aten_meta_name(weight.dtype)})")
    n, w = _numel(x.shape), _numel(weight.shape)
    if w != n:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape [{n}, 1] and "
                           f"weight with shape [{w}]")


def _leaky_relu_backward(a: Bound) -> None:
    grad, x, slope = a["grad_output"], a["self"], a["negative_slope"]
    if a["self_is_result"] and not checked_scalar(slope, torch.float64) >= 0:  # the meta's negval.to<double>()
        raise RuntimeError(LEAKY_RELU_NEGATIVE_SLOPE)  # (NaN too)
    broadcast(x.shape, grad.shape)  # the iterator's inputs: self, then grad_output
    common = result_type([grad, x])
    out = a.get("grad_input")
    if common is None or (out is not None and not torch.can_cast(common, out.dtype)):
        return  # the out= cast check (elsewhere) comes first
    if not common.is_floating_point:
        raise NotImplementedError(f"\"leaky_relu_backward_cpu\" not implemented for '{aten_type_name(common)}'")
    checked_scalar(slope, torch.float32 if common in (torch.float16, torch.bfloat16) else common)


def histogram_data_range(columns: bool) -> Callable[[tuple, dict[str, Any]], tuple[tuple, dict[str, Any]]]:
    """A `prepare` step (eager: it reads data back) of histogram.bin_ct (`columns` False: the input as one column)
    and histogramdd's bin-count forms (after their rank check, before the bin counts'): with no range,
    select_outer_bin_edges takes each column's min and max, which must be finite."""

    def prepare(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
        x = args[0]
        if kwargs.get("range") is not None or x.dtype not in (torch.float32, torch.float64):
            return args, kwargs
        if columns and x.ndim < 2:
            return args, kwargs  # the lowering's rank check
        cols = x.reshape(-1, x.shape[-1] if columns else 1)
        if cols.shape[0] == 0:
            return args, kwargs
        lo, hi = cols.amin(0), cols.amax(0)
        bad = ~(torch.isfinite(lo) & torch.isfinite(hi))
        if bool(bad.any()):
            d = int(bad.cpu().nonzero()[0, 0])
            low, high = float(lo[d]), float(hi[d])
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{low:g}, {high:g}] is not finite")
        return args, kwargs

    return prepare


def _abs(a: Bound) -> None:
    """abs_cpu's dispatch has no bool (CUDA's neither); a tensor of no elements runs no kernel and passes."""
    x = a.get("self")
    if hasattr(x, "dtype") and x.dtype == torch.bool and x.numel():
        raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")


def _pow_of_bools(a: Bound) -> None:
    """pow's Tensor-Tensor and Scalar-Tensor kernels have no bool (a bool tensor to a bool Scalar computes)."""
    base, exponent = a.get("self"), a.get("exponent")
    if hasattr(base, "shape") and hasattr(exponent, "shape"):  # the iterator's broadcast first (fuzz seed 58)
        broadcast(base.shape, exponent.shape)
    if getattr(exponent, "dtype", None) == torch.bool and (base is True or base is False
                                                            or getattr(base, "dtype", None) == torch.bool):
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")


def _fill_tensor(a: Bound) -> None:
    """fill_.Tensor with a 0-d value on self's device is self.copy_(value), whose TensorIterator refuses an
    expanded self (fuzz seed 38); fill_.Scalar and a value on another device (fill_out of value.item()) write it."""
    x, value = a.get("self"), a.get("value")
    if isinstance(x, torch.Tensor) and isinstance(value, torch.Tensor) and value.dim() == 0 \
            and value.device == x.device:
        from torchtpu.execution import eager

        eager.refuse_internal_overlap("fill_", x)


def _logit_backward(a: Bound) -> None:
    """logit_backward's kernel dispatch (floating types), even of no elements, behind the out= cast check."""
    broadcast(a["grad_output"].shape, a["self"].shape)  # the iterator's shapes first
    common = result_type([a["grad_output"], a["self"]])
    out = a.get("grad_input")
    if common is None or (out is not None and not torch.can_cast(common, out.dtype)):
        return  # the out= cast check (elsewhere) comes first
    if not common.is_floating_point:
        raise NotImplementedError(f"\"logit_backward_cpu\" not implemented for '{aten_type_name(common)}'")


BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {
    "_embedding_bag": _embedding_bag, "_embedding_bag_forward_only": _embedding_bag,
    "_embedding_bag_backward": _embedding_bag_backward, "_embedding_bag_dense_backward": _embedding_bag_dense_backward,
    "_linalg_solve_ex": _linalg_solve, "nll_loss_backward": _nll_loss_backward,
    "multilabel_margin_loss_backward": _multilabel_margin_loss_backward, "histogram": _histogram,
    "leaky_relu_backward": _leaky_relu_backward, "abs": _abs, "abs_": _abs,
    "pow": _pow_of_bools, "pow_": _pow_of_bools, "fill_": _fill_tensor,
    "logit_backward": _logit_backward,
}
