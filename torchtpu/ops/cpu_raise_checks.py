"""CPU's dtype and shape checks that tpu's lowerings skipped (issue 17, the schema fuzzer's `cpu_raises` class:
calls CPU refuses and tpu computed a silent result). Each check reads the call's arguments by schema name, in
ATen's order and words, and runs behind the op's earlier checks (ops/arg_order_checks.py merges `BOUND_CHECKS`
by packet name and runs them in eager mode and for a compiled graph's node: only `shape` and `dtype` are read).

- all / any with out=: allany_meta's check_result_is_bytebool (a bool or uint8 result).
- aminmax.out: the structured kernel's out dtypes (self's, for min then max).
- frexp.Tensor_out (UnaryOps.cpp): floating self, mantissa of self's dtype, int32 exponent.
- multinomial (Distributions.cpp multinomial_out): 1-D or 2-D, floating input, a Long out.
- softshrink (softshrink meta): lambda in the input dtype's range, then build_unary_op's same dtype.
- hardtanh / hardtanh_ (Activation.cpp hardtanh_out): no Bool, no negative limits for uint8.
- threshold_backward: the iterator's broadcast (self, grad), then the threshold Scalar converted to the
  computation's integer/float type (checked_convert: a floating Scalar never wraps into uint8).
- cumsum_ / cumprod_: check_inplace of a dtype= other than self's.
- binary_cross_entropy, huber_loss_backward, soft_margin_loss.out: TensorIterator's check_all_same_dtype
  (outputs first, then the inputs, against the first input's dtype).
- smooth_l1_loss_backward, mse_loss_backward: enforce_safe_casting_to_output to grad_input's (or self's) dtype,
  then the kernel's real dispatch on it (no complex, no bool).
- bucketize: 1-D boundaries (before searchsorted's checks).
- as_strided_scatter: as_strided's checks on self's clone (strides, offset, storage size and bounds), then src
  of the slice's size.
- glu_backward, soft_margin_loss_backward, binary_cross_entropy_with_logits: the shape of an in-place step's
  result (TensorIterator's "output with shape ... doesn't match the broadcast shape ...").
- gelu_backward, hardswish_backward: grad_output and self broadcast (TensorIterator), before the dispatch.
- hardswish_backward, hardsigmoid_backward: a floating common dtype (the kernel's dispatch; tpu computed integers
  and bools).
- linalg_matrix_exp: batches of square matrices. histogram: a range with min <= max (from the call's
  arguments, never the data; histogramdd's own: ops/operand_checks.py). masked_scatter: source of self's dtype
  (log_sigmoid_backward's buffer: ops/backward_checks.py). _adaptive_avg_pool2d/3d_backward: ops/pool_checks.py.
- linspace (steps > 1) and softshrink_backward: the Scalars' checked_convert to the computation's dtype (the shrink
  backwards: after their iterator's broadcast and floating dispatch). aminmax: the empty checks before the outs.
  _linalg_solve_ex: a floating or complex A. cumsum: the dim in range (a 0-d self's too).
- hash_tensor.out: a uint64 out, before the dims are read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu.dtypes import checked_scalar
from torchtpu.ops.arg_checks import sizes_text
from torchtpu.ops.out_rules import _CPP_NAMES
from torchtpu.ops.tracing import aten_type_name

Bound = dict[str, Any]


def _cpp(dtype: torch.dtype) -> str:
    """A dtype as ATen prints a caffe2::TypeMeta (`long int`, `float`)."""
    return _CPP_NAMES.get(dtype, str(dtype))


_SHRINK_FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _is_tensor(value: Any) -> bool:
    return isinstance(getattr(value, "dtype", None), torch.dtype) and hasattr(value, "shape")


def broadcast(a_shape: Sequence[int], b_shape: Sequence[int]) -> list[int]:
    """infer_size: the broadcast shape, or TensorIterator's RuntimeError."""
    n = max(len(a_shape), len(b_shape))
    out = [0] * n
    for i in reversed(range(n)):  # ATen's infer_size walks from the last dim: the last mismatch is reported
        ia, ib = i - n + len(a_shape), i - n + len(b_shape)
        da = int(a_shape[ia]) if ia >= 0 else 1
        db = int(b_shape[ib]) if ib >= 0 else 1
        if da != db and 1 not in (da, db):
            raise RuntimeError(f"The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton "
                               f"dimension {i}")
        out[i] = db if da == 1 else da
    return out


def inplace_shape(out_shape: Sequence[int], other_shape: Sequence[int]) -> list[int]:
    """An in-place TensorIterator step: the broadcast of its operands must be the output's shape."""
    out = [int(s) for s in out_shape]
    shape = broadcast(out, other_shape)
    if shape != out:
        raise RuntimeError(f"output with shape {sizes_text(out)} doesn't match the broadcast shape {sizes_text(shape)}")
    return out


def _same_dtype(operands: Sequence[Any], expected: torch.dtype) -> None:
    """TensorIterator's check_all_same_dtype: the first operand (outputs first) of another dtype."""
    for t in operands:
        if _is_tensor(t) and t.dtype != expected:
            raise RuntimeError(f"Found dtype {aten_type_name(t.dtype)} but expected {aten_type_name(expected)}")


def _category(dtype: torch.dtype) -> int:
    return 3 if dtype.is_complex else 2 if dtype.is_floating_point else 0 if dtype == torch.bool else 1


def _combine(higher: torch.dtype | None, lower: torch.dtype | None) -> torch.dtype | None:
    """ATen's combine_categories (ScalarType.h, result_type's tiers)."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return torch.promote_types(higher, lower) if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher == torch.bool or lower.is_floating_point:
        return torch.promote_types(higher, lower)
    return higher


def result_type(tensors: Sequence[Any]) -> torch.dtype | None:
    """torch.result_type over several tensors: dimensioned ones first, 0-dim ones only of a higher category."""
    tiers: list[torch.dtype | None] = [None, None]
    for t in tensors:
        tier = 0 if len(t.shape) else 1
        tiers[tier] = t.dtype if tiers[tier] is None else torch.promote_types(tiers[tier], t.dtype)
    return _combine(tiers[0], tiers[1])


def _can_cast(src: torch.dtype, dst: torch.dtype) -> bool:
    return _category(src) <= _category(dst)


# --- the checks, by op ------------------------------------------------------------------------------------------------

def _bytebool_out(name: str) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:
        out = a.get("out")
        if out is not None and out.dtype not in (torch.bool, torch.uint8):
            raise RuntimeError(f"{name} only supports bool tensor for result, got: {aten_type_name(out.dtype)}")
    return check


def _aminmax(a: Bound) -> None:  # the dim (maybe_wrap_dim) before the out dtypes
    x, dim = a["self"], a.get("dim")
    n = max(len(x.shape), 1)
    if dim is not None and not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    if dim is None and 0 in x.shape:  # the meta's empty checks (seed 56), before the out dtypes
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    if dim is not None and len(x.shape) and x.shape[dim % n] == 0:  # zero_numel_check_dims
        raise IndexError(f"aminmax: Expected reduction dim {dim % n} to have non-zero size.")
    for name in ("min", "max"):
        out = a.get(name)
        if out is not None and out.dtype != x.dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {_cpp(x.dtype)}, but got {_cpp(out.dtype)} instead")


def _frexp(a: Bound) -> None:
    x, mantissa, exponent = a["self"], a.get("mantissa"), a.get("exponent")
    if not x.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    if mantissa is not None and mantissa.dtype != x.dtype:
        raise RuntimeError(f"torch.frexp() expects mantissa to have dtype {_cpp(x.dtype)} but got "
                           f"{_cpp(mantissa.dtype)}")
    if exponent is not None and exponent.dtype != torch.int32:
        raise RuntimeError(f"torch.frexp() expects exponent to have int dtype but got {_cpp(exponent.dtype)}")


def _multinomial(a: Bound) -> None:
    x, out = a["self"], a.get("out")
    if not 0 < len(x.shape) <= 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {aten_type_name(x.dtype)}")
    if out is not None and out.dtype != torch.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: {aten_type_name(out.dtype)}")


def _softshrink(a: Bound) -> None:
    x, lambd, out = a["self"], a.get("lambd", 0.5), a.get("out")
    lambd = checked_scalar(lambd, torch.float64)  # lambd.to<double>() first: a complex one is refused
    if not x.dtype.is_floating_point:  # the range check's own floating dispatch
        raise NotImplementedError(f"\"softshrink_check\" not implemented for '{aten_type_name(x.dtype)}'")
    if not isinstance(lambd, complex):
        top = torch.finfo(x.dtype).max
        if not 0 <= float(lambd) <= top:
            raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype {aten_type_name(x.dtype)}, but "
                               f"found {float(lambd):g}")
    if out is not None:
        _same_dtype([out], x.dtype)


def _hardtanh(a: Bound) -> None:
    x = a["self"]
    if x.dtype == torch.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if x.dtype.is_complex:  # hardtanh_out's clamp_out: clamp's meta refuses complex before the out's cast (seed 72)
        raise NotImplementedError("clamp is not supported for complex types")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        # hardtanh_out: an integral self takes min.toLong() and max.toLong() (c10's checked conversion: NaN, an
        # infinity or a value outside int64 overflows; fuzz seed 68), then the unsigned check on those
        low, high = (checked_scalar(v, torch.int64) for v in (a.get("min_val", -1), a.get("max_val", 1)))
        if x.dtype == torch.uint8 and any(not isinstance(v, complex) and int(v) < 0 for v in (low, high)):
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")


_CONVERTED_NAMES = {torch.int8: "int8_t", torch.uint8: "uint8_t", torch.int16: "int16_t", torch.int32: "int",
                    torch.int64: "int64_t", torch.float32: "float"}


def _threshold_backward(a: Bound) -> None:  # threshold.to<scalar_t>() in the kernel (c10::checked_convert)
    grad, x, value = a["grad_output"], a["self"], a["threshold"]
    if _is_tensor(grad) and _is_tensor(x):  # the iterator's shape (self, then grad) first (seed 57)
        broadcast(x.shape, grad.shape)
    if not _is_tensor(grad) or not _is_tensor(x) or isinstance(value, bool | complex):
        return
    dtype = result_type([grad, x])
    name = _CONVERTED_NAMES.get(dtype)
    if name is None:
        return
    if dtype.is_floating_point:  # c10::overflows: NaN and inf convert, a finite value must be in range
        info = torch.finfo(dtype)
        bad = value == value and abs(float(value)) != float("inf") and not -info.max <= float(value) <= info.max
    else:
        info = torch.iinfo(dtype)
        # an integer Scalar wraps into uint8 from down to -255; a floating one (NaN, inf too) must be in range
        low = -info.max if dtype == torch.uint8 and isinstance(value, int) else info.min
        bad = not low <= value <= info.max
    if bad:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def _cumulative_inplace(a: Bound) -> None:  # the structured kernel's check_inplace
    x, dtype = a["self"], a.get("dtype")
    if dtype is not None and dtype != x.dtype:
        raise RuntimeError(f"Bad in-place call: input tensor dtype {_cpp(x.dtype)} and output tensor dtype "
                           f"{_cpp(dtype)} should match")


def _floating_kernel(kernel: str, dtype: torch.dtype) -> None:
    """A kernel's AT_DISPATCH_FLOATING_TYPES_AND2(Half, BFloat16), for every number of elements."""
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{aten_type_name(dtype)}'")


def _bce(a: Bound) -> None:  # binary_cross_entropy_out_cpu's iterator (shape, dtypes), then the dispatch
    broadcast(*([s for s in a[name].shape if s != 1] for name in ("self", "target")))  # it iterates squeeze()s
    _same_dtype([a.get("out"), a["self"], a["target"]], a["self"].dtype)
    _floating_kernel("binary_cross_entropy", a["self"].dtype)


def _huber_backward(a: Bound) -> None:  # huber_loss_backward_out: grad_input, input, target, grad_output
    broadcast(broadcast(a["self"].shape, a["target"].shape), a["grad_output"].shape)  # the inputs' shape first
    _same_dtype([a.get("grad_input"), a["self"], a["target"], a["grad_output"]], a["self"].dtype)
    _floating_kernel("huber_backward_cpu_out", a["self"].dtype)


def cast_to(common: torch.dtype | None, dtype: torch.dtype) -> None:
    """An in-place TensorIterator step's enforce_safe_casting_to_output."""
    if common is not None and not _can_cast(common, dtype):
        raise RuntimeError(f"result type {aten_type_name(common)} can't be cast to the desired output type "
                           f"{aten_type_name(dtype)}")


_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
             "use the `~` or `logical_not()` operator instead.")


def _soft_margin_out(a: Bound) -> None:  # at::neg_out(output, input).mul_(target).exp_().log1p_()
    x, target, out = a["self"], a["target"], a.get("out")
    if out is not None:
        _same_dtype([out], x.dtype)
    if x.dtype == torch.bool:
        raise RuntimeError(_NEG_BOOL)
    inplace_shape(x.shape, target.shape)
    cast_to(result_type([x, target]), x.dtype)
    cast_to(torch.float32, x.dtype)  # exp_ of an integer output


def _float_of(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype.is_floating_point or dtype.is_complex else torch.float32


def _real_backward(kernel: str) -> Callable[[Bound], None]:
    """TensorIterator over (grad_input; self, target, grad_output): the broadcast shape, then the common dtype cast
    safely to grad_input's (or self's), then the kernel's dispatch on the common dtype (real types only):
    smooth_l1_loss_backward, and mse_loss_backward (fuzz seed 57: tpu computed a complex one)."""
    return lambda a: _real_iterator_backward(a, kernel)


def _real_iterator_backward(a: Bound, kernel: str) -> None:
    x, target, grad = a["self"], a["target"], a["grad_output"]
    tensors = [t for t in (x, target, grad) if _is_tensor(t)]
    shape: Sequence[int] = []
    for t in tensors:
        shape = broadcast(shape, t.shape)
    out = a.get("grad_input")
    target_dtype = (out if out is not None else x).dtype
    common = result_type(tensors)
    if common is not None and not _can_cast(common, target_dtype):
        raise RuntimeError(f"result type {aten_type_name(common)} can't be cast to the desired output type "
                           f"{aten_type_name(target_dtype)}")
    if common is not None and (common.is_complex or common == torch.bool):  # the inputs' common dtype, not the
        name = aten_type_name(common)                                     # out's: real operands fill a complex out
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")


def _bucketize(a: Bound) -> None:
    boundaries = a["boundaries"]
    if len(boundaries.shape) != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({len(boundaries.shape)})")


def _as_strided(shape: Sequence[int], dtype: torch.dtype, size: list[int], stride: list[int], offset: int) -> None:
    """as_strided's setStrided on a storage of `shape`'s elements of `dtype` (as_strided_scatter's clone of self):
    the strides' count and signs, the offset's sign, computeStorageNbytes' overflow, then the storage bounds."""
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(st < 0 for st in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{sizes_text(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    wrap, overflow, need = 2**64, False, 1  # c10's unsigned 64-bit arithmetic
    for sz, st in zip(size, stride, strict=True):
        if sz == 0:
            need = 0
            break
        term = (st % wrap) * ((sz - 1) % wrap)
        overflow |= term >= wrap
        need += term % wrap
        overflow |= need >= wrap
        need %= wrap
    else:
        need *= dtype.itemsize
        if overflow or need >= 2**63:
            raise RuntimeError(f"Storage size calculation overflowed with sizes={sizes_text(size)} and "
                               f"strides={sizes_text(stride)}")
    storage = math.prod(int(s) for s in shape) * dtype.itemsize
    if need and need + offset * dtype.itemsize > storage:
        raise RuntimeError(f"setStorage: sizes {sizes_text(size)}, strides {sizes_text(stride)}, storage offset "
                           f"{offset}, and itemsize {dtype.itemsize} requiring a storage size of "
                           f"{need + offset * dtype.itemsize} are out of bounds for storage of size {storage}")
    numel, overflow = 1, False
    for sz in size:
        numel *= sz % wrap
        overflow |= numel >= wrap
        numel %= wrap
    if overflow or numel >= 2**63:
        raise RuntimeError("numel: integer multiplication overflow")


def _as_strided_scatter(a: Bound) -> None:
    src, size = a["src"], [int(s) for s in a["size"]]
    offset = a.get("storage_offset")
    _as_strided(a["self"].shape, a["self"].dtype, size, [int(s) for s in a["stride"]], 0 if offset is None else
                int(offset))
    if [int(s) for s in src.shape] != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{sizes_text(src.shape)}, slice size = {sizes_text(size)}")


def _glu_backward(a: Bound) -> None:  # after arg_order_checks' _glu: the halves' iterator with grad_output
    x, grad = a["self"], a["grad_output"]
    d = a["dim"] % len(x.shape)
    half = [int(s) for s in x.shape]
    half[d] //= 2
    inplace_shape(half, grad.shape)


def _soft_margin_backward(a: Bound) -> None:  # z = exp(-target * input); mul_out(grad_input, target, z)...
    x, target, grad, out = a["self"], a["target"], a["grad_output"], a.get("grad_input")
    if target.dtype == torch.bool:
        raise RuntimeError(_NEG_BOOL)
    z = broadcast(target.shape, x.shape)
    z_dtype = _float_of(result_type([target, x]))
    cast_to(result_type([target, torch.empty(z, dtype=z_dtype, device="meta")]),
             (out if out is not None else x).dtype)
    grad_input = broadcast(target.shape, z)
    inplace_shape(grad_input, grad.shape)  # grad_input.div_(z).mul_(grad_output): its shape, then its cast
    out_dtype = (out if out is not None else x).dtype
    cast_to(result_type([torch.empty(grad_input, dtype=out_dtype, device="meta"), grad]), out_dtype)


def _bce_with_logits(a: Bound) -> None:  # after log_sigmoid's refusal (arg_order_checks)
    x, target, weight, pos_weight = a["self"], a["target"], a.get("weight"), a.get("pos_weight")
    log_sigmoid = [int(s) for s in x.shape]
    if pos_weight is not None:  # log_weight = (pos_weight - 1).mul(target).add_(1); log_sigmoid_input.mul_(it)
        if pos_weight.dtype == torch.bool:
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.")
        weight_shape = broadcast(pos_weight.shape, target.shape)
        inplace_shape(log_sigmoid, weight_shape)
        log_weight = result_type([pos_weight, target])
        cast_to(result_type([torch.empty(log_sigmoid, dtype=x.dtype, device="meta"),
                             torch.empty(weight_shape, dtype=log_weight, device="meta")]), x.dtype)
    if target.dtype == torch.bool:  # 1 - target
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    loss = inplace_shape(target.shape, x.shape)
    cast_to(result_type([target, x]), target.dtype)
    inplace_shape(loss, log_sigmoid)
    if weight is not None:
        inplace_shape(loss, weight.shape)


def _binary_shapes(a: Bound) -> None:  # a binary backward's TensorIterator: the broadcast before the dispatch
    grad, x = a["grad_output"], a["self"]
    if _is_tensor(grad) and _is_tensor(x):
        broadcast(grad.shape, x.shape)


def _floating_backward(kernel: str) -> Callable[[Bound], None]:
    """A binary backward's iterator (the broadcast), then its kernel's AT_DISPATCH_FLOATING_TYPES_AND2 on the
    common dtype (hardswish_backward; hardsigmoid_backward: tpu computed integers and bools, and refused complex
    in its decomposition's words, after the broadcast CPU checks first: fuzz seed 68)."""

    def check(a: Bound) -> None:
        _binary_shapes(a)
        grad, x = a["grad_output"], a["self"]
        dtype = result_type([t for t in (grad, x) if _is_tensor(t)])
        if dtype is not None and not dtype.is_floating_point:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{aten_type_name(dtype)}'")

    return check


def _matrix_exp(a: Bound) -> None:  # squareCheckInputs(self, "linalg.matrix_exp")
    shape = [int(s) for s in a["self"].shape]
    if len(shape) < 2:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 dimensions.")
    if shape[-1] != shape[-2]:
        raise RuntimeError(f"linalg.matrix_exp: A must be batches of square matrices, but they are {shape[-2]} by "
                           f"{shape[-1]} matrices")


def _histogram_range(a: Bound) -> None:  # histogram (1-d): select_outer_bin_edges' range, min <= max
    bounds = list(a.get("range") or ())
    if len(bounds) == 2 and float(bounds[0]) > float(bounds[1]):
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {float(bounds[0]):g} max "
                           f"{float(bounds[1]):g} for dimension 0")


def _masked_scatter(a: Bound) -> None:
    x, source = a["self"], a["source"]
    if x.dtype != source.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{aten_type_name(x.dtype)} and {aten_type_name(source.dtype)}")


_CHECKED_NAMES = {**_CONVERTED_NAMES, torch.float16: "c10::Half", torch.bfloat16: "c10::BFloat16",
                  torch.float64: "double"}


def checked_convert(value: Any, dtype: torch.dtype) -> None:
    """c10::checked_convert of a real Scalar to `dtype` (Scalar::to<scalar_t>): a finite value outside the
    type's range overflows, and so does NaN or an infinity for an integer type."""
    name = _CHECKED_NAMES.get(dtype)
    if name is None or isinstance(value, bool | complex) or not isinstance(value, int | float):
        return
    v = float(value)
    if dtype.is_floating_point:
        bad = v == v and abs(v) != float("inf") and abs(v) > torch.finfo(dtype).max
    else:
        info = torch.iinfo(dtype)
        # an integer Scalar wraps into an unsigned type from -max (c10::overflows, strict_unsigned false)
        low = -info.max if dtype == torch.uint8 and isinstance(value, int) else info.min
        bad = v != v or not low <= v <= info.max
    if bad:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def _linspace(a: Bound) -> None:  # the kernel's start.to<scalar_t>() and end.to<scalar_t>() (steps > 1)
    out = a.get("out")
    dtype = a.get("dtype") or (out.dtype if out is not None else torch.get_default_dtype())
    if any(_is_tensor(a.get(k)) and len(a[k].shape) for k in ("start", "end")):
        return  # the Tensor overloads' 0-dim check comes first (ops/factory.py's _scalars)
    if int(a.get("steps", 0)) > 1:
        if dtype == torch.bool:  # the kernel's dispatch (all types but bool) comes first (fuzz seed 63)
            raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
        checked_convert(a["start"], dtype)
        checked_convert(a["end"], dtype)


def _shrink_backward(grad: Any, x: Any) -> torch.dtype | None:
    """shrink_backward's iterator (grad, self broadcast) and shrink_backward_cpu's floating dispatch; the dtype."""
    if not (_is_tensor(grad) and _is_tensor(x)):
        return None
    broadcast(grad.shape, x.shape)
    dtype = result_type([grad, x])
    if dtype is not None and dtype not in _SHRINK_FLOATS:
        raise NotImplementedError(f"\"shrink_backward_cpu\" not implemented for '{aten_type_name(dtype)}'")
    return dtype


def _softshrink_backward(a: Bound) -> None:  # the iterator and the dispatch, then lambd.to<scalar_t>() (seed 53)
    dtype = _shrink_backward(a["grad_output"], a["self"])
    if dtype is not None:
        checked_convert(a["lambd"], dtype)


def _hardshrink(a: Bound) -> None:  # the kernel's lambd.to<scalar_t>() on the iterator's dtype (seed 21)
    if "grad_out" in a:  # hardshrink_backward: the iterator and the dispatch first (seed 55)
        _shrink_backward(a["grad_out"], a["self"])
    dtype = result_type([t for t in (a.get("grad_out"), a["self"]) if _is_tensor(t)])
    if dtype is not None and dtype.is_floating_point:  # others: the kernel's dispatch refuses first
        checked_scalar(a.get("lambd", 0.5), dtype)


def _linalg_solve(a: Bound) -> None:  # linalg_solve_ex meta: checkFloatingOrComplex(A, "linalg.solve")
    dtype = a["A"].dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"linalg.solve: Expected a floating point or complex tensor as input. Got "
                           f"{aten_type_name(dtype)}")


def _cumsum_dim(a: Bound) -> None:  # maybe_wrap_dim before anything else
    n = max(len(a["self"].shape), 1)
    if not -n <= a["dim"] < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {a['dim']})")


def _hash_tensor(a: Bound) -> None:  # hash_tensor_out: the result dtype before the dims are read
    out = a.get("out")
    if out is not None and out.dtype != torch.uint64:
        raise RuntimeError(f"Expected result to be of dtype uint64, but got {aten_type_name(out.dtype)}")


BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {
    "hash_tensor": _hash_tensor, "linspace": _linspace, "softshrink_backward": _softshrink_backward,
    "hardshrink": _hardshrink, "hardshrink_backward": _hardshrink,
    "_linalg_solve_ex": _linalg_solve,
    "cumsum": _cumsum_dim, "hardswish_backward": _floating_backward("hardswish_backward_cpu"),
    "hardsigmoid_backward": _floating_backward("hardsigmoid_backward"), "gelu_backward": _binary_shapes,
    "linalg_matrix_exp": _matrix_exp,
    "histogram": _histogram_range,
    "masked_scatter": _masked_scatter, "masked_scatter_": _masked_scatter,
    "all": _bytebool_out("all"), "any": _bytebool_out("any"), "aminmax": _aminmax, "frexp": _frexp,
    "multinomial": _multinomial, "softshrink": _softshrink, "hardtanh": _hardtanh, "hardtanh_": _hardtanh,
    "threshold_backward": _threshold_backward, "cumsum_": _cumulative_inplace, "cumprod_": _cumulative_inplace,
    "binary_cross_entropy": _bce, "huber_loss_backward": _huber_backward, "soft_margin_loss": _soft_margin_out,
    "smooth_l1_loss_backward": _real_backward("smooth_l1_backward_cpu_out"), "bucketize": _bucketize,
    "mse_loss_backward": _real_backward("mse_backward_cpu_out"),
    "as_strided_scatter": _as_strided_scatter, "glu_backward": _glu_backward,
    "soft_margin_loss_backward": _soft_margin_backward, "binary_cross_entropy_with_logits": _bce_with_logits,
}
