"""More of CPU's argument checks that tpu's lowerings skipped (issue 17, the schema fuzzer's `cpu_raises` class
over seeds 3-8 of session 24): calls CPU refuses from their shapes, dtypes and Scalars alone, where tpu computed a
silent result. Merged with ops/cpu_raise_checks.py's `BOUND_CHECKS` by ops/arg_order_checks.py (they run behind
the op's earlier checks, in eager mode and for a compiled graph's node; only `shape` and `dtype` are read).

- _fft_r2c / _fft_c2r with an empty dim list: ArrayRef's back() of the empty list.
- _fused_sgd_: the kernel's list-length checks (grads, then the momentum buffers: none without momentum),
  unless a found_inf tensor is given (the kernel reads it first and may return before them).
- _fused_adam_ / _fused_adamw_: the same for their lists (max_exp_avg_sqs empty without amsgrad).
- addmm, addmv, baddbmm, addbmm: the gemm's beta and alpha to its opmath type.
- replication/reflection_pad*d_backward: grad_output and self of one dtype.
- batch norm in training: an input with elements. (_embedding_bag: ops/cpu_raise_checks3.py.)
- linalg_vector_norm: no norm without an identity (ord < 0 or inf) of no elements, then its dtype='s checks (the
  dtype's kind, no narrowing); _foreach_norm: the same per tensor (floating input first) behind its own infinity
  check; norm (ops/arg_order_checks.py) calls check_norm_identity.
- lerp.Scalar and _foreach_lerp (each pair in order), addcmul, addcdiv: the Scalar's checked_convert to the
  kernel's opmath type (float for Half and BFloat16; complex too); a complex Scalar with an imaginary part
  overflows any real type.
- hardtanh_backward: the same checked_convert of its bounds (real dtypes).
- full.out: fill_'s checked_convert to the out's dtype.
- _pdist_backward (p != 0): the kernel reads grad.stride(0).
- _prelu_kernel: TensorIterator's check_all_same_dtype (weight of self's dtype).
- cumprod and mode: maybe_wrap_dim (a 0-d self's too).
- std, var, var_mean, std_mean: a floating or complex input, then the correction's conversion to double (a
  complex correction with an imaginary part overflows), before their dims.
- multi_margin_loss and its backward: p of 1 or 2, their first check. trace: no bool input (before its rank).
- sort: the dim wrapped first (before the complex refusal and the out= dtypes).
- nansum: no complex input. std / var into a float or double out= from Half or BFloat16 with one output
  element: std_var_all_cpu's dispatch; of a real input into a complex out=: the same for one element, else
  std_var_stub's dispatch (no complex loop).
- uniform of a complex tensor: from <= to (its real view's check).
- lu_unpack (unpack_pivots): int32 pivots.
- logsumexp.out: a floating or complex out= tensor.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from torchtpu.dtypes import check_scalar_fits, checked_scalar, opmath
from torchtpu.ops import norm_checks, pad_backward_checks
from torchtpu.ops.arg_checks import dim_size, sizes_text
from torchtpu.ops.cpu_raise_checks import _cumsum_dim, _is_tensor, broadcast, cast_to, inplace_shape, result_type
from torchtpu.ops.tracing import aten_type_name

Bound = dict[str, Any]

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _scalar_of(names: tuple[str, ...], scalar: str, kinds: str) -> Callable[[Bound], None]:
    """The kernel's `scalar`.to<opmath_t>() (c10::checked_convert) on the common dtype of the tensor arguments
    `names`, for the dtype kinds the kernel dispatches on ("f": floating, "i": integers too, where the lowering's
    own check_scalar_fits answers a real value and only a complex one is left here; "c": complex); others are
    refused first."""
    def check(a: Bound) -> None:
        dtype = result_type([a[n] for n in names if _is_tensor(a.get(n))])
        if dtype is None or dtype == torch.bool or (dtype.is_complex and "c" not in kinds):
            return
        value = a.get(scalar, 1)
        if dtype.is_floating_point or dtype.is_complex or ("i" in kinds and isinstance(value, complex)):
            checked_scalar(value, opmath(dtype))
    return check


_LERP = _scalar_of(("self", "end"), "weight", "fc")


def _hardtanh_backward(a: Bound) -> None:  # the iterator's cast of the common type into grad_input comes first
    grad_input = a.get("grad_input")
    if grad_input is not None:
        cast_to(result_type([a["grad_output"], a["self"]]), grad_input.dtype)
    check = _scalar_of(("grad_output", "self"), "min_val", "f")
    check(a)
    _scalar_of(("grad_output", "self"), "max_val", "f")(a)


def _full(a: Bound) -> None:  # full.out fills the out tensor (full with dtype=: ops/factory.py)
    out = a.get("out")
    if out is not None:
        check_scalar_fits(a["fill_value"], out.dtype, "full()")
        v = a["fill_value"]  # a complex fill into a bool out is z != 0 (Scalar::toBool), filled via complex64
        if out.dtype == torch.bool and isinstance(v, complex) and v != 0 and torch.tensor(v).item() == 0:
            raise NotImplementedError(f"full.out: the fill value {v!r} is nonzero (True on CPU) but underflows to 0 "
                                      "in the complex64 the tpu fills through; refused rather than written False")


def _fft_dims(a: Bound) -> None:
    if len(a["dim"]) == 0:
        raise RuntimeError("ArrayRef: attempted to access back() of empty list")


_TORCH_CHECK_TAIL = ("  (Could this error message be improved?  If so, please report an enhancement request to "
                     "PyTorch.)")


def _amp_scalars(a: Bound) -> None:  # the fused kernels' first step: grad_scale / found_inf ->data_ptr<float>()
    for name in ("grad_scale", "found_inf"):
        t = a.get(name)
        if t is not None and t.dtype != torch.float32:
            raise RuntimeError(f"expected scalar type Float but found {aten_type_name(t.dtype)}")


def _fused_sgd(a: Bound) -> None:  # _fused_sgd_kernel_cpu_
    _amp_scalars(a)
    if a.get("found_inf") is not None:
        return
    n = len(a["self"])
    if len(a["grads"]) != n:
        raise RuntimeError(f"Expected grads.size() == n_tensors to be true, but got false.{_TORCH_CHECK_TAIL}")
    buffers = len(a["momentum_buffer_list"])
    if a["momentum"] == 0.0 and buffers:
        raise RuntimeError(f"Expected momentum_buffer_list.empty() to be true, but got false.{_TORCH_CHECK_TAIL}")
    if a["momentum"] != 0.0 and buffers != n:
        raise RuntimeError("Expected momentum_buffer_list.size() == n_tensors to be true, but got false."
                           f"{_TORCH_CHECK_TAIL}")


def _fused_adam(a: Bound) -> None:  # _fused_adam_kernel_cpu_ (adamw's too)
    _amp_scalars(a)
    if a.get("found_inf") is not None:
        return
    n = len(a["self"])
    for name in ("grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "state_steps"):
        size = len(a[name])
        if name == "max_exp_avg_sqs" and not a["amsgrad"]:
            if size:
                raise RuntimeError(f"Expected max_exp_avg_sqs.empty() to be true, but got false.{_TORCH_CHECK_TAIL}")
        elif size != n:
            raise RuntimeError(f"Expected {name}.size() == n_tensors to be true, but got false.{_TORCH_CHECK_TAIL}")


def _expands(shape: Any, target: list[int]) -> bool:
    shape = [int(v) for v in shape]
    return len(shape) <= len(target) and all(v in (1, t) for v, t in zip(shape[::-1], target[::-1], strict=False))


def _product_shape(first: Any, second: Any) -> list[int] | None:
    """The (batched) product's shape of two operands whose ranks and inner sizes fit; else None."""
    a, b = [int(v) for v in first.shape], [int(v) for v in second.shape]
    if len(a) == 2 and len(b) in (1, 2) and a[1] == b[0]:
        return [a[0]] + b[1:]
    if len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
        return [a[0], a[1], b[2]]
    return None


def _blas_scalars(first: str, second: str, batch_sum: bool = False) -> Callable[[Bound], None]:
    """addmm / addmv / baddbmm / addbmm: the gemm's beta.to<opmath_t>() and alpha's, reached where both products'
    operands have elements, one dtype and fitting shapes (their checks come first; an empty product takes another
    path)."""
    def check(a: Bound) -> None:
        x, m1, m2 = a["self"], a[first], a[second]
        if not (x.dtype == m1.dtype == m2.dtype) or x.dtype == torch.bool or x.dtype.is_complex:
            return
        shape = _product_shape(m1, m2)
        if shape is None or not _expands(x.shape, shape[1:] if batch_sum else shape):
            return
        if math.prod(m1.shape) and math.prod(m2.shape):
            for name in ("beta", "alpha"):
                checked_scalar(a.get(name, 1), opmath(x.dtype))
    return check


def _pad_backward(kind: str, n: int) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # after the shape checks: the kernel's dispatch and reads (ops/pad_backward_checks.py)
        pad_backward_checks.kernel_checks(f"{kind}_pad{n}d_backward", n, a["grad_output"], a["self"], a["padding"],
                                          a.get("grad_input"))
    return check


_BATCH_NORM_TYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _batch_norm_before_dispatch(a: Bound, training: bool) -> None:
    """batch_norm_cpu (the functional forwards) before batch_norm_cpu_out's dispatch on the input: in training the
    saved mean is `empty({input.size(1)})` for an input contiguous in some memory format, else `at::mean` over all
    dims but 1 (in float32 where a parameter's dtype differs from the input's, the mixed type), then save_var's
    `empty({input.size(1)})`; then running_mean and running_var both given or neither. Which error an integral
    input gets depends on its layout (fuzz seed 69); an out= overload (batch_norm_cpu_out) dispatches first, then
    checks the mixed type (norm_checks.check_out_first). A
    compiled graph's node (no strides) gets no layout rule."""
    x = a["input"]
    if any(a.get(n) is not None for n in ("out", "save_mean", "save_invstd")):
        norm_checks.check_out_first(x, [a.get(n) for n in ("weight", "bias", "running_mean", "running_var")],
                                    training)
        return
    if x.ndim == 0:
        return
    contiguous = getattr(x, "is_contiguous", None)
    if training and contiguous is not None and x.dtype not in _BATCH_NORM_TYPES and not x.dtype.is_complex:
        formats = [torch.contiguous_format, *{4: [torch.channels_last], 5: [torch.channels_last_3d]}.get(x.ndim, [])]
        params = [a.get(n) for n in ("weight", "bias", "running_mean", "running_var")]
        first = next((p for p in params if p is not None), None)
        if not any(contiguous(memory_format=f) for f in formats) and (first is None or first.dtype == x.dtype):
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                               f"complex dtype. Got: {aten_type_name(x.dtype)}")
    if training:
        dim_size(x.shape, 1)
    if (a.get("running_mean") is None) != (a.get("running_var") is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")


def _batch_norm_empty(training: bool | None) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # batch_norm_cpu_update_stats_template (training only), after the dispatch
        x = a["input"]
        _batch_norm_before_dispatch(a, a["training"] if training is None else training)
        if x.dtype not in _BATCH_NORM_TYPES:
            return  # the dtype refusal comes first
        if (a["training"] if training is None else training) and math.prod(x.shape) == 0:
            raise RuntimeError(f"input tensor must have at least one element, but got input_sizes = "
                               f"{[int(v) for v in x.shape]}")
    return check


def check_norm_identity(shape: Any, ord: Any, dim: Any) -> None:  # noqa: A002
    """linalg_vector_norm's checks (after its floating-input check): a real ord; no norm without an identity
    (ord < 0 or inf) of no elements, named by the first empty dim of `dim` as given, or by the tensor where `dim` is
    None or empty."""
    if isinstance(ord, complex):
        raise RuntimeError("linalg.vector_norm: Expected a non-complex scalar as the order of norm.")
    if not isinstance(ord, (int, float)) or math.prod(int(s) for s in shape) != 0 or not (ord < 0 or ord == math.inf):
        return
    dims = [dim] if isinstance(dim, int) else list(dim or ())
    for d in dims:
        if dim_size(shape, d) == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on the dimension {d}because this "
                               f"dimension is empty and the operation does not have an identity")
    if not dims:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on an empty tensor because the "
                           f"operation does not have an identity")


def check_norm_dtype(x: torch.dtype, dtype: torch.dtype | None) -> None:  # linalg_vector_norm's checks of its dtype=
    if dtype is None:
        return
    if x.is_complex and not dtype.is_complex:
        raise RuntimeError(f"linalg.vector_norm: dtype should be complex for complex inputs, but got "
                           f"{aten_type_name(dtype)}")
    if not x.is_complex and dtype.is_complex:
        raise RuntimeError(f"linalg.vector_norm: dtype should be real for real inputs, but got {aten_type_name(dtype)}")
    if torch.promote_types(x, dtype) != dtype:
        raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({aten_type_name(x)}) should be "
                           f"convertible without narrowing to the specified dtype ({aten_type_name(dtype)})")


def _vector_norm(a: Bound) -> None:  # the lowering refuses a non-floating input first
    x = a["self"]
    if x.dtype.is_floating_point or x.dtype.is_complex:
        check_norm_identity(x.shape, a.get("ord", 2), a.get("dim"))
        check_norm_dtype(x.dtype, a.get("dtype"))


def _foreach_norm(a: Bound) -> None:  # foreach_tensor_norm_slow: its own infinity check, then linalg_vector_norm
    ord_ = a.get("ord", 2)
    if isinstance(ord_, (bool, complex)):
        raise RuntimeError("foreach_tensor_norm_slow expects ord to be integer or float")
    for t in a["self"]:
        if ord_ == math.inf and math.prod(int(s) for s in t.shape) == 0:
            raise RuntimeError("_foreach_norm cannot compute the infinity norm on an empty tensor because the "
                               "operation does not have an identity")
        x = t.dtype
        if not (x.is_floating_point or x.is_complex):
            raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                               f"{aten_type_name(x)}")
        check_norm_identity(t.shape, ord_, None)
        check_norm_dtype(x, a.get("dtype"))


def _foreach_lerp(inplace: bool) -> Callable[[Bound], None]:
    """lerp on each pair in order: its dtype checks (the lowering makes them; a pair of other dtypes ends this
    check), TensorIterator's shapes (self's own for the in-place op), the kernel's dispatch, the Scalar weight."""
    def check(a: Bound) -> None:
        selves, ends, weight = a["self"], a["tensors1"], a.get("weight", a.get("weights"))
        weights = list(weight) if isinstance(weight, (list, tuple)) else [weight] * len(selves)
        if not len(selves) == len(ends) == len(weights):
            return
        for s, e, w in zip(selves, ends, weights):
            tensor_weight = _is_tensor(w)
            if s.dtype != e.dtype or (tensor_weight and w.dtype != s.dtype):
                return
            shape = broadcast(s.shape, e.shape)
            if tensor_weight:
                shape = broadcast(shape, w.shape)
            if inplace:
                inplace_shape(s.shape, shape)
            if not (s.dtype.is_floating_point or s.dtype.is_complex):
                kernel = "lerp_kernel_tensor" if tensor_weight else "lerp_kernel_scalar"
                raise NotImplementedError(f'"{kernel}" not implemented for \'{aten_type_name(s.dtype)}\'')
            if not tensor_weight:
                _LERP({"self": s, "end": e, "weight": w})
    return check


def _pdist_backward(a: Bound) -> None:  # run_backward_parallel_pdist: self.size(0), self.size(1), grad.stride(0)
    if float(a["p"]) != 0.0 and len(a["self"].shape) == 2 and len(a["grad"].shape) == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")


def _int_dim(a: Bound) -> None:  # a named dim is resolved (and refused) elsewhere
    if isinstance(a.get("dim"), int):
        _cumsum_dim(a)


def _mode_dim(a: Bound) -> None:  # mode.values checks its outs' dtypes first (ops/out_checks.py), then the dim
    if a.get("values") is not None:
        from torchtpu.ops import out_checks

        out_checks.check_mode_outs(a)
    _int_dim(a)


def _prelu_kernel(a: Bound) -> None:
    x, weight = a["self"], a["weight"]
    if weight.dtype != x.dtype:
        raise RuntimeError(f"Found dtype {aten_type_name(weight.dtype)} but expected {aten_type_name(x.dtype)}")


def _nansum(a: Bound) -> None:
    if a["self"].dtype.is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs")


def _logsumexp(a: Bound) -> None:  # logsumexp_out's first check, of the out= tensor
    out = a.get("out")
    if _is_tensor(out) and not (out.dtype.is_floating_point or out.dtype.is_complex):
        raise RuntimeError(f"logsumexp(): Expected floating point type for result tensor, but got: "
                           f"{aten_type_name(out.dtype)}")


def _std_var_first(words: str) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # std_var_out / std_var_mean_out: the dtype, the correction's toDouble, then dims
        x = a["self"]
        if not (x.dtype.is_floating_point or x.dtype.is_complex):
            raise RuntimeError(f"{words} only support floating point and complex dtypes")
        if a.get("correction") is not None:
            checked_scalar(a["correction"], torch.float64)
    return check


def _std_var(a: Bound) -> None:
    """std_var_out of a real input: one output element in a float, double or complex result goes to std_var_all
    (no Half or BFloat16 input); more go to std_var_stub, which has no complex loop."""
    _std_var_first("std and var")(a)
    x, out = a["self"], a.get("out")
    if out is None or not x.dtype.is_floating_point:
        return
    if not out.dtype.is_complex and (x.dtype not in _LOW_PRECISION or out.dtype not in (torch.float32,
                                                                                       torch.float64)):
        return
    shape = [int(s) for s in x.shape]
    dims = a.get("dim")
    if dims and not all(isinstance(d, int) for d in dims):
        return
    reduced = set(range(len(shape))) if not dims else {d % max(len(shape), 1) for d in dims}
    kept = math.prod(s for i, s in enumerate(shape) if i not in reduced)
    if math.prod(shape) > 0 and kept <= 1 and x.dtype in _LOW_PRECISION:
        raise RuntimeError(f"std_var_all: Unsupported dtype {aten_type_name(x.dtype)}")
    if math.prod(shape) > 0 and kept > 1 and out.dtype.is_complex:
        raise NotImplementedError(f"\"std_cpu\" not implemented for '{aten_type_name(out.dtype)}'")


def _uniform(a: Bound) -> None:  # the complex tensor's real view gets uniform_impl_'s checks (factory.py: real)
    if a["self"].dtype.is_complex:
        from_, to = float(a.get("from", 0.0)), float(a.get("to", 1.0))
        if from_ > to:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_:g} > "
                               f"to={to:g}")


def _margin_p(a: Bound) -> None:  # multi_margin_loss(_backward)_cpu's first check, before the shapes and dtypes
    p = checked_scalar(a.get("p", 1), torch.int32)  # p.toInt(): NaN / inf / a complex refused in c10's words
    if isinstance(p, int | float) and int(p) not in (1, 2):  # 2.18 passes as 2
        raise RuntimeError("only p == 1 and p == 2 supported")


def _trace(a: Bound) -> None:  # trace_cpu's dispatch (all types and complex, no bool) before its rank check
    if a["self"].dtype == torch.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")


def _lu_unpack(a: Bound) -> None:  # lu_unpack's meta: LU's rank, then the pivots' dtype
    lu = a["LU_data"]
    if lu.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{sizes_text(lu.shape)} instead")
    if a.get("unpack_pivots", True) and a["LU_pivots"].dtype != torch.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.")


BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {
    "_fft_r2c": _fft_dims, "_fft_c2r": _fft_dims, "_fused_sgd_": _fused_sgd, "_fused_sgd": _fused_sgd,
    "_native_batch_norm_legit": _batch_norm_empty(None), "native_batch_norm": _batch_norm_empty(None),
    "_batch_norm_with_update": _batch_norm_empty(True),
    "_foreach_norm": _foreach_norm, "_fused_adam_": _fused_adam, "_fused_adamw_": _fused_adam,
    "_fused_adam": _fused_adam, "_fused_adamw": _fused_adam,
    "addmm": _blas_scalars("mat1", "mat2"), "addmm_": _blas_scalars("mat1", "mat2"),
    "addmv": _blas_scalars("mat", "vec"), "addmv_": _blas_scalars("mat", "vec"),
    "baddbmm": _blas_scalars("batch1", "batch2"), "baddbmm_": _blas_scalars("batch1", "batch2"),
    "addbmm": _blas_scalars("batch1", "batch2", True), "addbmm_": _blas_scalars("batch1", "batch2", True),
    **{f"{kind}_pad{n}d_backward": _pad_backward(kind, n) for kind in ("replication", "reflection") for n in (1, 2, 3)},
    "lerp": _LERP, "lerp_": _LERP, "_foreach_lerp": _foreach_lerp(False),
    "_foreach_lerp_": _foreach_lerp(True),
    "addcmul": _scalar_of(("self", "tensor1", "tensor2"), "value", "fic"),
    "addcmul_": _scalar_of(("self", "tensor1", "tensor2"), "value", "fic"),
    "addcdiv": _scalar_of(("self", "tensor1", "tensor2"), "value", "fc"),
    "addcdiv_": _scalar_of(("self", "tensor1", "tensor2"), "value", "fc"), "linalg_vector_norm": _vector_norm,
    "hardtanh_backward": _hardtanh_backward, "full": _full, "_pdist_backward": _pdist_backward,
    "_prelu_kernel": _prelu_kernel, "cumprod": _int_dim, "mode": _mode_dim, "nansum": _nansum,
    "std": _std_var, "var": _std_var, "var_mean": _std_var_first("var_mean"),
    "std_mean": _std_var_first("std_mean"), "multi_margin_loss": _margin_p,
    "multi_margin_loss_backward": _margin_p, "trace": _trace, "uniform": _uniform, "uniform_": _uniform,
    "lu_unpack": _lu_unpack, "sort": _int_dim, "logsumexp": _logsumexp,
}
