"""CPU's checks that come before the dtype refusal (the kernel's AT_DISPATCH) or the lowering's own rule, for ops
whose invalid input used to raise another exception class on tpu than on CPU (issue 17, the schema fuzzer's
error_class groups "both raise, different exception classes", "IndexError vs RuntimeError" and "CPU has no kernel
for the dtype; tpu rejects the input otherwise"). Merged with the other `BOUND_CHECKS` by ops/arg_order_checks.py,
so they run before the refusal table and the lowering, in eager mode and for a compiled graph's node (only `shape`
and `dtype` are read).

- In-place binary TensorIterator ops (__ilshift__, __irshift__, floor_divide_): self must not overlap itself
  (assert_no_internal_overlap), the broadcast shape must be
  self's ("output with shape ... doesn't match the broadcast shape ..."), then the common dtype must cast to
  self's ("result type Float can't be cast to the desired output type Int"), both before the kernel's dispatch.
- elu.out: unary_op's check_all_same_dtype ("Found dtype Float but expected Char") before elu_cpu's dispatch.
- huber_loss: the delta > 0 check, the broadcast of input and target and the cast of their common dtype to the
  loss (input's dtype, or out='s), then huber_cpu's dispatch on the common dtype.
- im2col: the kernel_size/dilation/padding/stride checks, then `input.size(1)` and `input.size(2)` read before
  the rank check (IndexError for a 0-d, 1-d or 2-d input; a 0 size(1) skips the second read), then the rank check.
- narrow_copy.out (narrow_copy_dense_cpu_out): a 0-d self, out='s dtype, then a non-negative dim checked with a
  bare TORCH_CHECK (RuntimeError), a negative one wrapped (IndexError), then start and length.
- linalg_lu.out: the meta's rank check, then each out's dtype (P, L, U) before lu_cpu's dispatch.
- _ctc_loss / _ctc_loss_backward: ctc_loss_cpu's AT_DISPATCH_FLOATING_TYPES on log_probs comes first (float32
  and float64, as CPU and CUDA: half and bfloat16 are refused too), then the forward's empty log_probs, targets of
  Long or Int, their ranks (ctc_loss_allocate_outputs), the backward's template's reads of log_probs.size(0..2).
- igamma_ / igammac_: the in-place TensorIterator's checks, then the floating dispatch on self's dtype.
- batch_norm_backward (batch_norm_backward_cpu): the dispatch on input, the mixed-type rules (only where the first
  defined parameter's dtype is not input's), input.size(1).
- threshold_: its TensorIterator skips the overlap check (threshold is idempotent), so threshold_cpu's dispatch
  (no bool, no complex) comes before tpu's refusal of a self that overlaps itself.
- _fused_sgd_: grad_scale and found_inf read as float* (data_ptr<float>) before anything else.
- avg_pool2d: its meta's checks (ops/pool_checks.py) before the kernel's dispatch (a uint8 input).
- baddbmm.dtype / .dtype_out: CPU has no kernel (NotImplementedError for any input); upstream's baddbmm
  decomposition, which tpu ran for them, reads out_dtype as beta (a TypeError): refused as CPU does.
- _foreach_abs.out: the functional _foreach_abs (abs_cpu's Bool refusal) before the out list's checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchtpu.dtypes import FLOATS
from torchtpu.ops import cpu_raise_checks2, pool_checks
from torchtpu.ops.arg_checks import dim_size, legacy_type_name, sizes_text, wrap_dim
from torchtpu.ops.cpu_raise_checks import broadcast, cast_to
from torchtpu.ops.norm_checks import _check_dtypes as check_param_dtypes
from torchtpu.ops.tracing import aten_meta_name, aten_type_name

Bound = dict[str, Any]
_CHECK_WORDS = ("to be true, but got false.  (Could this error message be improved?  If so, please report an "
                "enhancement request to PyTorch.)")


def _is_tensor(v: Any) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype")


def _meta(v: Any) -> Any:
    """A stand-in for type promotion: a tensor's dtype and whether it is 0-d; a Python scalar as itself."""
    if _is_tensor(v):
        return torch.empty([1] * min(len(v.shape), 1), dtype=v.dtype, device="meta")
    return v


def inplace_binary(a: Bound) -> None:  # TensorIterator::binary_op(self, self, other): overlap, shape, cast
    x, other = a["self"], a["other"]
    if isinstance(x, torch.Tensor):
        from torchtpu.execution import eager

        eager.refuse_internal_overlap("in-place op", x)
    if _is_tensor(other):
        shape = broadcast(x.shape, other.shape)
        if shape != [int(s) for s in x.shape]:
            raise RuntimeError(f"output with shape {sizes_text(x.shape)} doesn't match the broadcast shape "
                               f"{sizes_text(shape)}")
    cast_to(torch.result_type(_meta(x), _meta(other)), x.dtype)


def _igamma_inplace(kernel: str) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # the in-place TensorIterator's checks, then the floating dispatch on self's dtype
        inplace_binary(a)
        x = a["self"]
        if x.dtype not in FLOATS:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{aten_type_name(x.dtype)}'")
    return check


def same_dtype_out(a: Bound) -> None:  # TensorIterator::unary_op: check_all_same_dtype
    out = a.get("out")
    if out is not None and out.dtype != a["self"].dtype:
        raise RuntimeError(f"Found dtype {aten_type_name(out.dtype)} but expected {aten_type_name(a['self'].dtype)}")


def _huber_loss(a: Bound) -> None:  # Loss.cpp huber_loss / huber_loss_out
    if not a.get("delta", 1.0) > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    x, target = a["self"], a["target"]
    broadcast(x.shape, target.shape)
    out = a.get("out")
    common = torch.result_type(_meta(x), _meta(target))
    cast_to(common, out.dtype if out is not None else x.dtype)
    if common not in FLOATS:  # huber_cpu dispatches on the common dtype (bool with int32 is Int, not Bool)
        raise NotImplementedError(f"\"huber_cpu\" not implemented for '{aten_type_name(common)}'")


def _im2col(a: Bound) -> None:  # im2col_out_cpu_template, then im2col_shape_check up to its size reads
    for what in ("kernel_size", "dilation", "padding", "stride"):
        if len(a[what]) != 2:
            raise RuntimeError(f"It is expected {what} equals to 2, but got size {len(a[what])}")
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (a[w] for w in ("kernel_size", "dilation", "padding", "stride"))
    if not (kw > 0 and kh > 0):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kh} kernel_width: {kw}")
    if not (dw > 0 and dh > 0):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dh} dilation_width: "
                           f"{dw}")
    if not (pw >= 0 and ph >= 0):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {ph} pad_width: {pw}")
    if not (sw > 0 and sh > 0):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {sh} stride_width: {sw}")
    shape = [int(v) for v in a["self"].shape]
    valid = dim_size(shape, 1) != 0 and dim_size(shape, 2) != 0  # C++'s && skips size(2) after a 0
    if not ((len(shape) == 3 and shape[0] and valid) or (len(shape) == 4 and valid and shape[3] != 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {sizes_text(shape)}")


def _narrow_copy_out(a: Bound) -> None:  # narrow_copy_dense_cpu_out (the functional's too: fuzz seeds 53, 57)
    x, out, dim = a["self"], a.get("out"), a["dim"]
    if len(x.shape) == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if out is not None and x.dtype != out.dtype:
        raise RuntimeError(f"Expected self.dtype() == output.dtype() {_CHECK_WORDS}")
    if dim < 0:
        dim = wrap_dim(dim, len(x.shape))
    elif dim >= len(x.shape):
        raise RuntimeError(f"Expected dim < static_cast<int64_t>(self_sizes.size()) {_CHECK_WORDS}")
    cur, start, length = int(x.shape[dim]), a["start"], a["length"]
    if not -cur <= start <= cur:
        raise IndexError(f"start out of range (expected to be in range of [{-cur}, {cur}], but got {start})")
    start = start + cur if start < 0 else start
    if not (length >= 0 and start <= cur - length):
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({cur}).")


def _linalg_lu_out(a: Bound) -> None:  # linalg_lu's meta: the rank, then set_output's dtype check of P, L, U
    x = a["A"]
    if len(x.shape) < 2:
        raise RuntimeError(f"linalg.lu: Expected tensor with 2 or more dimensions. Got size: {list(x.shape)} instead")
    for name in ("P", "L", "U"):
        out = a.get(name)
        if out is not None and out.dtype != x.dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {aten_meta_name(x.dtype)}, but got "
                               f"{aten_meta_name(out.dtype)} instead")


def _ctc(kernel: str) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # AT_DISPATCH_FLOATING_TYPES(log_probs) before the template's checks
        log_probs = a["log_probs"]
        if log_probs.dtype not in (torch.float32, torch.float64):
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{aten_type_name(log_probs.dtype)}'")
        targets, shape = a["targets"], log_probs.shape
        if kernel == "ctc_loss_cpu":  # ctc_loss_cpu_template, then ctc_loss_allocate_outputs
            if 0 in shape:
                raise RuntimeError("log_probs tensor must not be empty")
            where = "(while checking arguments for ctc_loss_allocate_outputs)"
            if targets.dtype not in (torch.int64, torch.int32):
                raise RuntimeError("Expected tensor for argument #2 'targets' to have scalar type Int; but got "
                                   f"{legacy_type_name(targets.dtype)} instead {where}")
            if len(shape) != 3:
                raise RuntimeError(f"Expected 3-dimensional tensor, but got {len(shape)}-dimensional tensor for "
                                   f"argument #1 'log_probs' {where}")
            if len(targets.shape) not in (1, 2):
                raise RuntimeError(f"Expected 1 to 2 dimensions, but got {len(targets.shape)}-dimensional tensor "
                                   f"for argument #2 'targets' {where}")
        if kernel == "ctc_loss_backward_cpu":  # the template's first lines: log_probs.size(0), (1), (2)
            for dim in range(3):
                dim_size(log_probs.shape, dim)
    return check


def _batch_norm_backward(a: Bound) -> None:  # batch_norm_backward_cpu: the dispatch, the mixed type, size(1)
    x = a["input"]
    if x.dtype not in FLOATS:
        raise NotImplementedError(f"\"batch_norm_backward_cpu\" not implemented for '{aten_type_name(x.dtype)}'")
    params = [a.get(n) for n in ("weight", "running_mean", "running_var", "save_mean", "save_var")]
    given = [p for p in params if p is not None]
    if given and given[0].dtype != x.dtype:  # is_mixed_type: then checkMixedDataTypes (else no dtype check here)
        check_param_dtypes(x, params)
    dim_size(x.shape, 1)


def _fused_sgd(a: Bound) -> None:  # _fused_sgd_kernel_cpu_: grad_scale, then found_inf, read as float*
    for name in ("grad_scale", "found_inf"):
        t = a.get(name)
        if t is not None and t.dtype != torch.float32:
            raise RuntimeError(f"expected scalar type Float but found {aten_type_name(t.dtype)}")
    found_inf = a.get("found_inf")  # then `if (*found_inf_ptr == 1.0) return;` and the list-length checks
    if isinstance(found_inf, torch.Tensor) and (not found_inf.numel() or float(found_inf.reshape(-1)[0]) != 1.0):
        cpu_raise_checks2.BOUND_CHECKS["_fused_sgd_"]({**a, "found_inf": None})


def _threshold_(a: Bound) -> None:  # threshold's TensorIterator skips the overlap check: the dispatch comes first
    x = a["self"]
    if x.dtype == torch.bool or x.dtype.is_complex:
        raise NotImplementedError(f"\"threshold_cpu\" not implemented for '{aten_type_name(x.dtype)}'")


def baddbmm_out_dtype(a: Bound) -> None:  # baddbmm.dtype / .dtype_out: CUDA's kernels only (run first:
    # ops/arg_order_checks.py's own table, before cpu_raise_checks2's beta/alpha conversion)
    if "out_dtype" in a:
        overload = "dtype_out" if a.get("out") is not None else "dtype"
        raise NotImplementedError(f"Could not run 'aten::baddbmm.{overload}' with arguments from the 'tpu' backend: "
                                  "like CPU, which has no kernel for it, tpu refuses an out_dtype (CUDA's fp16/bf16 "
                                  "-> fp32 form); use baddbmm and .to(out_dtype)")


def _avg_pool2d(a: Bound) -> None:  # avg_pool2d's meta before the kernel's dispatch
    pool_checks.params("avg", 2, a["self"].shape, a["kernel_size"], a.get("stride", ()), a.get("padding", 0), 1,
                       a.get("ceil_mode", False), a.get("divisor_override"))


def _foreach_abs_out(a: Bound) -> None:  # the out= form computes _foreach_abs(self) first, then copies
    if a.get("out") is not None:
        for t in a["self"]:
            if t.dtype == torch.bool:
                raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")


BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {
    "__ilshift__": inplace_binary, "__irshift__": inplace_binary, "floor_divide_": inplace_binary,
    "elu": same_dtype_out, "huber_loss": _huber_loss, "im2col": _im2col, "narrow_copy": _narrow_copy_out,
    "linalg_lu": _linalg_lu_out, "batch_norm_backward": _batch_norm_backward, "_fused_sgd_": _fused_sgd,
    "avg_pool2d": _avg_pool2d, "_foreach_abs": _foreach_abs_out, "_ctc_loss": _ctc("ctc_loss_cpu"),
    "_ctc_loss_backward": _ctc("ctc_loss_backward_cpu"), "igamma_": _igamma_inplace("igamma_cpu"),
    "igammac_": _igamma_inplace("igammac_cpu"), "threshold_": _threshold_,
}
