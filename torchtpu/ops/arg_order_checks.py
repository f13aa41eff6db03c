"""ATen's checks that CPU makes before an op's dtype refusal, its out= dtype check or the lowering's own shape
rules, made first on "tpu" too so that bad input raises CPU's exception class and words (issue 17, the schema
fuzzer's error_class findings).

Each check is keyed by the op's packet name (`glu` covers glu.default and glu.out; the in-place form has its own
name) and reads the call's arguments by schema name. `guard` wraps an eager kernel (outside the dtype refusal
guard, ops/registry.py `make_kernel`); `check` runs the same checks for a compiled graph's node (Syms: only
`shape`, `ndim` and `dtype` are read). A check follows ATen's order for its op and raises at the first failure;
what it does not cover is left to the refusal table and the lowering.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import torch

from torchtpu.dtypes import FLOATS, checked_scalar
from torchtpu.ops import (
    cpu_raise_checks,
    cpu_raise_checks2,
    cpu_raise_checks3,
    dtype_refusals,
    error_class_checks,
    error_parity_checks,
    error_parity_checks2,
    error_parity_checks3,
    fused_optim_checks,
    inplace_scalar_checks,
    ldexp,
    onednn_checks,
    view_checks,
    weight_norm_checks,
)
from torchtpu.ops.arg_checks import dim_size, legacy_type_name, sizes_text, wrap_dim
from torchtpu.ops.tracing import aten_meta_name, aten_type_name, dispatch_refusal

Bound = dict[str, Any]
# the modules whose BOUND_CHECKS run behind this module's own (CPU's checks after those above)
_LATER = (cpu_raise_checks, cpu_raise_checks2, cpu_raise_checks3, inplace_scalar_checks, onednn_checks,
          fused_optim_checks, ldexp, error_parity_checks, weight_norm_checks, error_class_checks,
          error_parity_checks2, view_checks, error_parity_checks3)


def _bind(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> Bound:
    """The call's arguments by schema name, defaults filled in."""
    bound: Bound = {}
    for i, a in enumerate(op._schema.arguments):
        if i < len(args):
            bound[a.name] = args[i]
        elif a.name in kwargs:
            bound[a.name] = kwargs[a.name]
        elif a.has_default_value():
            bound[a.name] = a.default_value
    return bound




def _g(value: float) -> str:
    """A double as C++'s ostream prints it (6 significant digits, "nan", "inf")."""
    return f"{value:g}"


def _refuse(packet: str, dtype: torch.dtype) -> None:
    """Raises the refusal table's entry of `packet` for `dtype`, where it has one."""
    refusal = dtype_refusals.table().get(packet, {}).get(str(dtype).removeprefix("torch."))
    if refusal is not None:
        raise refusal[0](refusal[1])



# --- the checks, by op ------------------------------------------------------------------------------------------------

def _glu(a: Bound) -> None:  # glu_meta / glu_backward_cpu_out
    x, dim = a["self"], a["dim"]
    if len(x.shape) == 0:
        raise RuntimeError("glu does not support 0-dimensional tensors")
    d = wrap_dim(dim, len(x.shape))
    if x.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {int(x.shape[d])}")


def _clamp(a: Bound) -> None:  # clamp_meta: before the complex refusal
    if a.get("min") is None and a.get("max") is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")


def _clamp_inplace(a: Bound) -> None:  # clamp_meta: a non-floating self's type promoted with the Scalar bounds
    _clamp(a)
    x = a["self"]
    if x.dtype.is_floating_point or x.dtype.is_complex:  # floating: no promotion; complex: refused first
        return
    dtype = x.dtype
    for bound in (a.get("min"), a.get("max")):
        if isinstance(bound, bool | int | float | complex):
            dtype = torch.result_type(torch.empty((1,), dtype=dtype, device="meta"), bound)
    if dtype != x.dtype:  # an in-place clamp takes no promotion
        raise RuntimeError(f"result type {aten_type_name(dtype)} can't be cast to the desired output type "
                           f"{aten_meta_name(x.dtype)}")


def _log_normal(a: Bound) -> None:  # log_normal_impl_: the std check before the dtype dispatch
    std = a["std"]
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(float(std))}")


def _select_scatter(a: Bound) -> None:  # self.clone().select(dim, index), then the src size check
    x, src, dim, index = a["self"], a["src"], a["dim"], a["index"]
    ndim = len(x.shape)
    if ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, ndim)
    size = int(x.shape[d])
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {sizes_text(x.shape)} "
                         f"at dimension {d}")
    slice_shape = [int(s) for i, s in enumerate(x.shape) if i != d]
    if [int(s) for s in src.shape] != slice_shape:
        raise RuntimeError("expected src to have a size equal to the slice of self. "
                           f"src size = {sizes_text(src.shape)}, slice size = {sizes_text(slice_shape)}")


def _histogram_bins(a: Bound) -> None:  # histogramdd_check_inputs on self.reshape({numel, 1}) and {bins}
    x, bins, weight = a["self"], a["bins"], a.get("weight")
    if not isinstance(bins, torch.Tensor):
        cpu_raise_checks3.histogram_prepare_out(a)  # the bin-count form prepares its outs first
        return
    if x.dtype != bins.dtype:
        raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                           f"input with dtype {aten_meta_name(x.dtype)} and bins for dimension 0 with dtype "
                           f"{aten_meta_name(bins.dtype)}")
    if len(bins.shape) != 1:
        raise RuntimeError("torch.histogramdd: bins tensor should have one dimension, but got "
                           f"{len(bins.shape)} dimensions in the bins tensor for dimension 0")
    if bins.shape[0] == 0:
        raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements in "
                           "the bins tensor for dimension 0")
    if weight is not None and weight.dtype != x.dtype:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided, it should have the same dtype as the "
                           f"input tensor, but got weight with dtype {aten_meta_name(weight.dtype)} and input with "
                           f"dtype {aten_meta_name(x.dtype)}")


def _cum_extremum_out(a: Bound) -> None:  # cummax/cummin_out: the out tensors' types before the dim
    x, values, indices = a["self"], a.get("values"), a.get("indices")
    if values is None or indices is None:
        return
    if values.dtype != x.dtype:
        raise RuntimeError(f"expected scalar_type {aten_type_name(x.dtype)} but found {aten_type_name(values.dtype)}")
    if indices.dtype != torch.int64:
        raise RuntimeError(f"expected scalar_type Long but found {aten_type_name(indices.dtype)}")


def _int_mm(a: Bound) -> None:  # _int_mm_cpu: at::empty({self.size(0), mat2.size(1)}) before the out= checks
    if "out" not in a:
        dim_size(a["self"].shape, 0)
        dim_size(a["mat2"].shape, 1)


def _softmax(a: Bound) -> None:  # softmax meta (the dim, then the out= dtype), then softmax_cpu_out's refusal
    x, half_to_float, out = a["self"], a["half_to_float"], a.get("out")
    wrap_dim(a["dim"], len(x.shape))
    if out is not None:
        expected = torch.float32 if half_to_float else x.dtype
        if out.dtype != expected:
            raise RuntimeError(f"Expected out tensor to have dtype {aten_meta_name(expected)}, but got "
                               f"{aten_meta_name(out.dtype)} instead")
    if half_to_float and x.dtype != torch.float16:  # CUDA converts Half only: both refuse any other dtype
        raise RuntimeError("softmax with half to float conversion is not supported on CPU")


def _softmax_backward(a: Bound) -> None:  # the kernel's dtype dispatch on grad before reading output's data
    grad, dim = a["grad_output"], a["dim"]
    if grad.dtype not in FLOATS and list(grad.shape) == list(a["output"].shape) and 0 not in grad.shape:
        d = wrap_dim(dim, len(grad.shape))
        last = d == max(len(grad.shape), 1) - 1
        raise dispatch_refusal("softmax_backward_lastdim_kernel_impl" if last else "softmax_backward_kernel_impl",
                               grad.dtype)


def _log_softmax_backward(a: Bound) -> None:  # the dim, then the dispatch on grad (no shape check on CPU)
    grad, out = a["grad_output"], a.get("out")
    d = wrap_dim(a["dim"], len(grad.shape))
    half_to_float = grad.dtype == torch.float32 and a.get("input_dtype") == torch.float16
    expected = torch.float16 if half_to_float else grad.dtype
    if out is not None and out.dtype != expected:  # the structured kernel's out= dtype check
        raise RuntimeError(f"Expected out tensor to have dtype {aten_meta_name(expected)}, but got "
                           f"{aten_meta_name(out.dtype)} instead")
    if grad.dtype not in FLOATS and 0 not in grad.shape:
        last = d == max(len(grad.shape), 1) - 1
        raise dispatch_refusal("log_softmax_backward_lastdim_kernel_impl" if last else
                               "log_softmax_backward_kernel_impl", grad.dtype)


def _bce_with_logits(a: Bound) -> None:  # at::log_sigmoid(input) is its first step
    _refuse("log_sigmoid_forward", a["self"].dtype)


def _cumulative_(kernel: str) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # an in-place cumsum_/cumprod_ of bools dispatches on the result's Bool, past
        x, dtype = a["self"], a.get("dtype")  # ATen's early returns for a 0-d self (filled with itself) and an
        wrap_dim(a["dim"], len(x.shape))      # empty one (nothing to write): those keep their values
        if x.dtype == torch.bool and dtype in (None, torch.bool) and len(x.shape) and 0 not in x.shape:
            raise dispatch_refusal(kernel, torch.bool)
    return check


def _hardswish_out(a: Bound) -> None:  # TensorIterator::unary_op: check_all_same_dtype (hardshrink, gelu too)
    out = a.get("out")
    if out is not None and out.dtype != a["self"].dtype:
        raise RuntimeError(f"Found dtype {aten_type_name(out.dtype)} but expected {aten_type_name(a['self'].dtype)}")


def _median_dim(a: Bound) -> None:  # median_with_indices_impl: dim, empty reduction, then the out types
    x = a["self"]
    d = wrap_dim(a["dim"], len(x.shape))
    if len(x.shape) and x.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    values, indices = a.get("values"), a.get("indices")
    if values is None or indices is None:
        return
    if indices.dtype != torch.int64:
        raise RuntimeError("Expected tensor for argument #1 'indices' to have scalar type Long; but got "
                           f"{legacy_type_name(indices.dtype)} instead (while checking arguments for median)")
    if values.dtype != x.dtype:
        raise RuntimeError("Expected tensor for 'values' to have the same type as tensor for argument #2 'self'; but "
                           f"type {legacy_type_name(values.dtype)} does not equal {legacy_type_name(x.dtype)} "
                           "(while checking arguments for median)")


def _refusal_before_out(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    """An out= overload that computes its functional result first (median.out) or dispatches on the inputs'
    common dtype without a float promotion (igamma.out): the dtype refusal before the out= dtype check. igamma's
    TensorIterator checks the shapes' broadcast and the common dtype's cast to out's first."""
    if op._schema.name in ("aten::igamma", "aten::igammac"):
        a = _bind(op, args, kwargs)
        cpu_raise_checks.broadcast(a["self"].shape, a["other"].shape)
        common = torch.result_type(a["self"], a["other"])
        if not torch.can_cast(common, a["out"].dtype):
            raise RuntimeError(f"result type {aten_type_name(common)} can't be cast to the desired output type "
                               f"{aten_type_name(a['out'].dtype)}")
    dtype_refusals.check(op, args, kwargs)


def _index_reduce(a: Bound) -> None:  # index_reduce's meta: reduce, then index_func_meta_impl
    from torchtpu.ops import index_checks

    reduce = a["reduce"]
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    index_checks.check_index_func("index_reduce", a["self"], a["dim"], a["index"], a["source"])


def _group_norm_backward(a: Bound) -> None:
    """native_group_norm_backward: X and dY's types, the mixed-type check (mean's dtype not X's: float32
    statistics, a half or bfloat16 X), then GroupNormBackwardKernelImpl's dispatch (the kernel's size checks come
    after the dispatch)."""
    x = a["input"]
    if x.dtype != a["grad_out"].dtype:
        raise RuntimeError("Expected scalar types of X and dY are same.")
    if a["mean"].dtype != x.dtype:  # is_mixed_type(X, mean, rstd), then check_mixed_data_type: parameters first
        if any(p.dtype != torch.float32 for p in (a["mean"], a["rstd"])):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        if x.dtype not in (torch.float16, torch.bfloat16):
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    mask = a["output_mask"]
    if a.get("weight") is None and (mask[1] or mask[2]):  # at::empty_like(gamma) for dgamma/dbeta
        raise RuntimeError("tensor does not have a device")
    if x.dtype not in FLOATS:
        raise dispatch_refusal("GroupNormBackwardKernelImpl", x.dtype)


def _nll_loss_forward(a: Bound) -> None:  # nll_loss_forward's meta before the kernel's dispatch
    from torchtpu.ops.nn import _check_nll_loss

    _check_nll_loss(a["self"], a["target"], a.get("weight"))


def _smooth_l1_loss(a: Bound) -> None:
    """smooth_l1_loss's meta (beta, then the reduction's internal assert) before the kernel's dtype dispatch, whose
    Bool refusal comes before the lowering's bool subtraction (error_class, fuzz seeds 53-57; the same checks as
    loss_checks._reduction_args, which the dtype refusal reached first)."""
    beta, reduction = a.get("beta", 1.0), a.get("reduction", 1)
    if not beta >= 0:  # NaN too, as ATen's TORCH_CHECK(beta >= 0)
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    x, target = a["self"], a["target"]
    cpu_raise_checks.broadcast(x.shape, target.shape)  # the meta's TensorIterator next, in its words
    if reduction not in (0, 1, 2):
        raise RuntimeError(f"smooth_l1_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction} "
                           "(CPU: reduction == Reduction::Mean || reduction == Reduction::Sum INTERNAL ASSERT FAILED)")
    if isinstance(x, torch.Tensor) and isinstance(target, torch.Tensor) and \
            torch.result_type(x, target) == torch.bool:
        raise dispatch_refusal("smooth_l1_cpu", torch.bool)


def _rrelu_with_noise(a: Bound) -> None:  # rrelu_with_noise_out_cpu: the noise shape before the dispatch
    x, noise = a["self"], a["noise"]
    if list(x.shape) != list(noise.shape):
        raise RuntimeError("noise tensor shape must match self tensor shape. Got self.shape = "
                           f"{sizes_text(x.shape)} noise.shape = {sizes_text(noise.shape)}")
    if x.dtype.is_floating_point:  # then the kernel's lower / upper to its opmath type (c10::checked_convert)
        opmath = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
        for name in ("lower", "upper"):
            checked_scalar(a.get(name, 0), opmath)
        lower, upper = a.get("lower", 0.125), a.get("upper", 1.0 / 3.0)
        # training: the kernel builds uniform_real_distribution(lower, upper) for each element <= 0, which checks
        # from <= to (fuzz seed 40); read from the data (a sync) only where the bounds are the wrong way round
        if a.get("training") and float(lower) > float(upper) and isinstance(x, torch.Tensor) and bool((x <= 0).any()):
            raise RuntimeError("Expected from <= to to be true, but got false.  (Could this error message be "
                               "improved?  If so, please report an enhancement request to PyTorch.)")


def binary_inplace(a: Bound) -> None:  # TensorIterator: an in-place result must have the broadcast shape
    x, other = a["self"], a["other"]
    if not isinstance(other, torch.Tensor):
        return
    shape = cpu_raise_checks.broadcast(x.shape, other.shape)
    if shape != [int(s) for s in x.shape]:
        raise RuntimeError(f"output with shape {sizes_text(x.shape)} doesn't match the broadcast shape "
                           f"{sizes_text(shape)}")


def _softplus_backward(a: Bound) -> None:  # beta.to<opmath_t>() in the kernel: a complex Scalar overflows
    grad, x = a["grad_output"], a["self"]
    cpu_raise_checks.broadcast(grad.shape, x.shape)
    dtype = torch.promote_types(grad.dtype, x.dtype)
    if dtype not in FLOATS:
        return
    for name in ("beta", "threshold"):
        value = a.get(name)
        if isinstance(value, complex) and value.imag != 0:
            kind = "double" if dtype == torch.float64 else "float"
            raise RuntimeError(f"value cannot be converted to type {kind} without overflow")


def _norm(a: Bound) -> None:  # norm's dtype kinds and dims, then linalg_vector_norm's checks (norm calls it)
    x, dtype = a["self"], a.get("dtype")
    p, dim = a.get("p"), a.get("dim")
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"norm(): the desired output dtype should be either floating point or complex. Got "
                           f"{aten_type_name(dtype)} instead.")
    floating = x.dtype.is_floating_point or x.dtype.is_complex
    if not floating and dtype is None:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{aten_type_name(x.dtype)} instead.")
    named = isinstance(dim, str) or (isinstance(dim, (list, tuple)) and not all(isinstance(d, int) for d in dim))
    if named:
        return
    for d in dim if isinstance(dim, (list, tuple)) else ():  # norm wraps its dims next
        wrap_dim(d, len(x.shape))
    if not floating:
        return  # linalg_vector_norm refuses it (the lowering)
    cpu_raise_checks2.check_norm_identity(x.shape, 2 if p is None else p, dim)
    cpu_raise_checks2.check_norm_dtype(x.dtype, dtype)
    if dtype is not None and dtype.is_complex and a.get("out") is None:  # norm's result is made in dtype=, a
        real = torch.float64 if dtype == torch.complex128 else torch.float32  # complex one vector_norm refuses
        raise RuntimeError(f"Expected out tensor to have dtype {aten_meta_name(real)}, but got "
                           f"{aten_meta_name(dtype)} instead")


def _tri_indices(kernel: str) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # tril/triu_indices_cpu: check_args, then the dispatch on the out's index type
        for name in ("row", "col"):
            if a[name] < 0:
                raise RuntimeError(f"{name} must be non-negative, got{a[name]}")
        out = a.get("out")
        if out is not None and out.dtype not in (torch.int32, torch.int64):
            raise dispatch_refusal(kernel, out.dtype)
    return check


def _cdist_backward(a: Bound) -> None:  # the sizes it reads, then cdist_backward's floating dispatch on x1
    x1, x2 = a["x1"], a["x2"]
    for t in (x1, x2):
        dim_size(t.shape, -1)
    for t in (x1, x2):
        dim_size(t.shape, -2)
    if x1.dtype not in (torch.float32, torch.float64):
        raise dispatch_refusal("cdist_backward", x1.dtype)
    batch = cpu_raise_checks.broadcast(x1.shape[:-2], x2.shape[:-2])
    empty = 0 in (x1.shape[-2], x2.shape[-2], x1.shape[-1]) or 0 in batch
    if not empty and float(a["p"]) != 0:  # the kernel reads grad, cdist, x1, x2 as x1's scalar type (p 0: none)
        for t in (a["grad"], a["cdist"], x1, x2):
            if t.dtype != x1.dtype:
                raise RuntimeError(f"expected scalar type {aten_type_name(x1.dtype)} but found "
                                   f"{aten_type_name(t.dtype)}")


def _nonzero_static(a: Bound) -> None:  # its first check, before the out= dtype's (a lowering's shape rule
    if a["size"] < 0:                     # would fail only when a deferred region ran, poisoning the region)
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")


def _binary_out_cast(a: Bound) -> None:  # logaddexp(2).out: the iterator's broadcast and cast before the dispatch
    out = a.get("out")
    if out is None or not (isinstance(a["self"], torch.Tensor) and isinstance(a["other"], torch.Tensor)):
        return
    cpu_raise_checks.broadcast(a["self"].shape, a["other"].shape)
    cpu_raise_checks.cast_to(cpu_raise_checks.result_type([a["self"], a["other"]]), out.dtype)  # fuzz seed 66


def _uniform_(a: Bound) -> None:  # uniform_impl_: check_uniform_bounds' floating dispatch before the iterator's
    x = a["self"]                   # overlap check of an expanded self (fuzz seed 71: int32 [1] expanded)
    if isinstance(x, torch.Tensor) and not (x.dtype.is_floating_point or x.dtype.is_complex):  # complex: as real
        raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for '{aten_type_name(x.dtype)}'")


def _geometric(a: Bound) -> None:  # geometric_impl_: p in (0, 1) before the dtype dispatch (fuzz seed 72: bool)
    from torchtpu.ops import sampler_checks

    if isinstance(a.get("p"), int | float):
        sampler_checks.check_geometric(a["p"])


def _polygamma(a: Bound) -> None:  # polygamma's meta refuses a negative n before the dispatch (fuzz seed 66)
    if isinstance(a.get("n"), int) and a["n"] < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")


_BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {
    "glu": _glu, "glu_backward": _glu, "clamp": _clamp, "clamp_": _clamp_inplace, "log_normal_": _log_normal,
    "log_normal": _log_normal, "select_scatter": _select_scatter, "histogram": _histogram_bins,
    "cummin": _cum_extremum_out, "cummax": _cum_extremum_out, "_int_mm": _int_mm, "_softmax": _softmax,
    "_log_softmax": _softmax, "_softmax_backward_data": _softmax_backward,
    "_log_softmax_backward_data": _log_softmax_backward,
    "binary_cross_entropy_with_logits": _bce_with_logits, "cumsum_": _cumulative_("cumsum_out_cpu"),
    "cumprod_": _cumulative_("cumprod_out_cpu"), "hardswish": _hardswish_out, "hardshrink": _hardswish_out,
    "leaky_relu": _hardswish_out,
    "gelu": _hardswish_out, "hardsigmoid": _hardswish_out, "median": _median_dim,
    "nanmedian": _median_dim, "index_reduce": _index_reduce, "index_reduce_": _index_reduce,
    "native_group_norm_backward": _group_norm_backward, "nll_loss_forward": _nll_loss_forward,
    "rrelu_with_noise": _rrelu_with_noise, "softplus_backward": _softplus_backward, "norm": _norm,
    "tril_indices": _tri_indices("tril_indices"), "triu_indices": _tri_indices("triu_indices"),
    "_cdist_backward": _cdist_backward, "hypot_": binary_inplace, "nonzero_static": _nonzero_static,
    "baddbmm": error_class_checks.baddbmm_out_dtype,
    "smooth_l1_loss": _smooth_l1_loss, "logaddexp": _binary_out_cast, "logaddexp2": _binary_out_cast,
    "floor_divide": _binary_out_cast,  # floor_divide.out: TensorIterator::binary_op before div_floor (seed 70)
    "uniform_": _uniform_, "geometric_": _geometric, "geometric": _geometric,
    "polygamma": _polygamma, "frac": _hardswish_out,  # frac.out: the unary iterator's same dtype (seed 67)
}
# overloads whose functional result (or common-dtype dispatch) comes before the out= dtype check on CPU
_REFUSAL_BEFORE_OUT = frozenset({"median.out", "nanmedian.out", "igamma.out", "igammac.out",
                                 "bitwise_left_shift.Scalar_Tensor_out",
                                 "bitwise_right_shift.Scalar_Tensor_out", "div.Scalar_mode_out",
                                 "log_sigmoid_forward.output"})  # resize_as_ the outs, dispatch on input (seed 62)
# the median checks that read a dim
_MEDIAN_DIM = frozenset({"dim", "dim_values"})


def _checks_for(op: Any) -> list[Callable[[Any, tuple, Mapping[str, Any]], None]]:
    name = op._schema.name.split("::")[1]
    overload = op._overloadname
    checks: list[Callable[[Any, tuple, Mapping[str, Any]], None]] = []
    if f"{name}.{overload}" in _REFUSAL_BEFORE_OUT:
        checks.append(_refusal_before_out)
    bound = _BOUND_CHECKS.get(name)
    if bound is not None and not (name in ("median", "nanmedian") and overload not in _MEDIAN_DIM):
        checks.append(lambda op, args, kwargs, fn=bound: fn(_bind(op, args, kwargs)))
    for module in _LATER:  # CPU's checks after those above
        later = module.BOUND_CHECKS.get(name)
        if later is not None:
            checks.append(lambda op, args, kwargs, fn=later: fn(_bind(op, args, kwargs)))
    return checks


@functools.cache
def _cached_checks(op: Any) -> tuple[Callable[[Any, tuple, Mapping[str, Any]], None], ...]:
    return tuple(_checks_for(op))


def check(op: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    """Raises CPU's error where one of `op`'s early checks fails for these arguments."""
    for fn in _cached_checks(op):
        fn(op, args, kwargs)


def guard(op: Any, kernel: Callable[..., Any]) -> Callable[..., Any]:
    """`kernel` itself where `op` has no early checks; else the kernel behind `check`."""
    if not _cached_checks(op):
        return kernel

    @functools.wraps(kernel)
    def checked(*args: Any, **kwargs: Any) -> Any:
        check(op, args, kwargs)
        return kernel(*args, **kwargs)

    return checked


class _Packets:
    """`packet in WRAPPED`: the op packets with early checks (compile/backend.py guards their decompositions)."""

    def __contains__(self, packet: Any) -> bool:
        name = packet._qualified_op_name.split("::")[1]
        return name in _BOUND_CHECKS or any(name in module.BOUND_CHECKS
                                            for module in _LATER)


WRAPPED = _Packets()


def wrap(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (op's upstream decomposition) behind op's early checks."""
    return guard(op, fn)
