"""CPU's own checks of invalid input that tpu's lowerings used to fail on first with an internal error (a Python
IndexError from a size read, a ValueError from a reshape or an unpacking, a TypeError from a Scalar compare): the
schema fuzzer's error_class group "tpu fails in its lowering or IR shape rule" (issue 17, message parity). Merged
with the other `BOUND_CHECKS` by ops/arg_order_checks.py, so they run before the dtype refusal and the lowering, in
eager mode and for a compiled graph's node (only `shape` and `dtype` are read).

- max_pool{2,3}d_with_indices (and .out): the kernel size / stride / padding / dilation counts, the input's rank
  and the output shape rules (ops/pool_checks.py `params`), all before the kernel's dtype dispatch; the backward:
  the counts, then gradOutput of the input's dtype, then the forward's rules (upstream's Python meta reads
  `input.size(-3)` before the rank check, an IndexError CPU never raises).
- Scalars c10 cannot convert (a complex with an imaginary part, NaN or inf to an integer): arange's start, end and
  step to double (unless a bool result: the dispatch first), softplus's beta and threshold to a floating self's
  opmath type (after the dispatch); they used to raise Python's TypeError / ValueError in a lowering
  (multi_margin_loss's p and softshrink's lambd: in their checks in ops/cpu_raise_checks*.py).
- bernoulli_(p: Tensor): p.expand(self.sizes()) before the kernel's dispatch (inferExpandGeometry's words, not the
  IR's broadcast ValueError).
- segment_reduce and its backward: segment_reduce_kernel's checks before its dispatch (axis, no indices, lengths or
  offsets given, the reduction's name, then the data's rank and the axis against the lengths/offsets).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchtpu.dtypes import checked_scalar, opmath
from torchtpu.ops import pool_checks
from torchtpu.ops.arg_checks import check_expand, wrap_dim
from torchtpu.ops.tracing import aten_meta_name, aten_type_name

Bound = dict[str, Any]


def _max_pool(nd: int) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:
        pool_checks.params("max", nd, a["self"].shape, a["kernel_size"], a.get("stride", ()),
                           a.get("padding", 0), a.get("dilation", 1), a.get("ceil_mode", False))
    return check


def _max_pool_backward(nd: int) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # DilatedMaxPool{2,3}d.cpp: the counts, gradOutput's dtype, then the shapes
        x, grad = a["self"], a["grad_output"]
        messages = pool_checks.max_pool_messages(nd)
        for what in ("kernel_size", "stride", "padding", "dilation"):
            pool_checks.per_dim(a[what], nd, messages[what], empty_ok=what == "stride")
        if grad.dtype != x.dtype:
            raise RuntimeError(f"expected dtype {aten_meta_name(x.dtype)} for `gradOutput` but got dtype "
                               f"{aten_meta_name(grad.dtype)}")
        if nd == 3 and len(x.shape) in (4, 5) and grad.dim() < 3:  # the template reads gradOutput.size(-3) before
            n = grad.dim()                                            # its shape check (fuzz seed 69)
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got -3)" if n
                             else "Dimension specified as -3 but tensor has no dimensions")
        k, s, p, d = pool_checks.params("max", nd, x.shape, a["kernel_size"], a["stride"], a["padding"],
                                        a["dilation"], a["ceil_mode"], backward=True)
        shape = [int(n) for n in x.shape]
        outs = [pool_checks.output_size(n, *args, a["ceil_mode"]) for n, *args in zip(shape[len(shape) - nd:], k, s,
                                                                                        p, d)]
        for t in (grad, a["indices"]):  # max_pool{2,3}d_backward_shape_check (fuzz seed 55)
            pool_checks.pooled_sizes([int(n) for n in t.shape], shape, nd, outs)
    return check


def _arange(a: Bound) -> None:  # arange_out: AT_DISPATCH on the result type, then start/end/step.to<double>()
    out, dtype = a.get("out"), a.get("dtype")
    result = out.dtype if out is not None else dtype
    if result is not None and (result == torch.bool or result.is_complex):  # the dispatch on the result first
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{aten_type_name(result)}'")
    for what in ("start", "end", "step"):
        if what in a and isinstance(a[what], complex | float | int):
            checked_scalar(a[what], torch.float64)


def _softplus(a: Bound) -> None:  # softplus_kernel: beta and threshold to opmath_t inside the floating dispatch
    x = a["self"]
    if x.dtype.is_floating_point:
        for what in ("beta", "threshold"):
            checked_scalar(a[what], opmath(x.dtype))


def _bernoulli_tensor(a: Bound) -> None:  # bernoulli_(Tensor p): p.expand(self.sizes()), then the dispatch
    p = a.get("p")
    if hasattr(p, "shape"):
        check_expand(p, a["self"].shape)


_REDUCTIONS = ("sum", "prod", "mean", "max", "amax", "min", "amin")  # get_reduction_enum


def _segment_reduce(a: Bound) -> None:  # SegmentReduce.cpp segment_reduce_kernel / _segment_reduce_backward_kernel
    data = a["data"]
    axis = wrap_dim(a.get("axis", 0), len(data.shape))
    if a.get("indices") is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    lengths, offsets = a.get("lengths"), a.get("offsets")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if a["reduce"] not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {a['reduce']}")
    name, given = ("offsets", offsets) if offsets is not None else ("lengths", lengths)
    if len(data.shape) < len(given.shape):
        raise RuntimeError(f"Expected data.dim() >= {name}_value.dim() to be true, but got false.  (Could this error "
                           "message be improved?  If so, please report an enhancement request to PyTorch.)")
    if axis != len(given.shape) - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of {name} but got {axis}.")


BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {
    "segment_reduce": _segment_reduce, "_segment_reduce_backward": _segment_reduce,
    "bernoulli_": _bernoulli_tensor,
    "arange": _arange, "softplus": _softplus,
    "max_pool2d_with_indices": _max_pool(2), "max_pool3d_with_indices": _max_pool(3),
    "max_pool2d_with_indices_backward": _max_pool_backward(2),
    "max_pool3d_with_indices_backward": _max_pool_backward(3),
}
