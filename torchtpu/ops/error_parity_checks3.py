"""CPU's checks of invalid input that come before the dtype refusal (the kernel's AT_DISPATCH) or before the
lowering's own rule, for the schema fuzzer's error_class findings of seeds 53-57 (issue 17, message parity): tpu
refused the dtype first, or failed in its lowering, with another exception class than CPU's. Merged with the other
`BOUND_CHECKS` by ops/arg_order_checks.py, so they run before the refusal table and the lowering, in every eager
mode and for a compiled graph's node (only `shape` and `dtype` are read).

- mean (meta): a dtype that is not floating or complex ("could not infer output dtype") before the dims are read.
- amax / amin (meta): an out= tensor of another dtype than self's before the dims are read.
- native_group_norm: ops/norm_checks.py's checks (check_group_norm_inputs, the mixed dtypes, the dispatch, the
  size) before the refusal table.
- round.out / round.decimals_out: build_borrowing_unary_op's check_all_same_dtype before round's dispatch.
- floor / ceil / trunc (.out too), clamp_min / clamp_max / relu with out=: the meta's complex refusal
  (NotImplementedError) before the out= dtype check.
- geqrf (and .a): the rank, each out's checkLinalgCompatibleDtype against the input's dtype, then geqrf_cpu's
  dispatch on LAPACK's types (an integer input computed a float result before: a missing check).
- lcm / lcm.out / lcm_: the TensorIterator's broadcast (an in-place op's shape and cast) before lcm_cpu's integer
  dispatch (no Bool).
- hardshrink: hardshrink_cpu's floating dispatch (after build_unary_op's same dtype) before the out= cast.
- _pdist_forward: pdist's floating dispatch (float and double), where the kernel runs (more than one row, columns).
- max_pool2d_with_indices.out / adaptive_max_pool{2,3}d.out: set_output's exact dtypes (the values of the input's,
  the indices Long) before the kernel's dispatch.
- addmv / addmv_ / addmv.out (meta): the ranks, then the sizes, before the dispatch.
- convolution / _convolution: the weight's rank and a positive group count first.
- complex.out / polar (and .out): complex_check_floating and complex_check_dtype (ops/complex_checks.py) before
  the dispatch and the complex32 storage refusal.
- mse_loss.out: the common dtype's cast to the out= tensor before mse_cpu's dispatch.
- log_sigmoid_backward: its TensorIterator's checks (ops/backward_checks.py) before the refusal table.
- mish.out: check_all_same_dtype; clamp with Scalar bounds: the complex refusal; bernoulli_(float p): p in
  [0, 1]; histc: min and max converted to double; unique_dim: its dispatch (no complex); count_nonzero: every dim
  wrapped before the repeated-dim check; linalg_lstsq.out with an rcond: linalg_lstsq_cpu's dispatch first;
  _cdist_backward.out: the result's dtype (x1's) exactly (CPU computes the functional first; tpu's lowering failed
  on the shapes). scatter_reduce: CPU's scatter_shape_check (src's sizes read unchecked) before the
  refusal table's upstream meta.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchtpu.dtypes import FLOATS
from torchtpu.ops import backward_checks, error_class_checks, index_checks, norm_checks
from torchtpu.ops.arg_checks import wrap_dim
from torchtpu.ops.complex_checks import check_out, check_parts, complex_of
from torchtpu.ops.cpu_raise_checks import broadcast, cast_to, result_type
from torchtpu.ops.tracing import aten_meta_name, aten_type_name, dispatch_refusal

Bound = dict[str, Any]
_LAPACK = (torch.float32, torch.float64, torch.complex64, torch.complex128)



def _mean(a: Bound) -> None:  # mean.dim's meta: get_dtype_from_self before resize_reduction reads the dims
    x, dtype = a["self"], a.get("dtype")
    if not (x.dtype.is_floating_point or x.dtype.is_complex) and dtype is None:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {aten_type_name(x.dtype)}")
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError("mean(): could not infer output dtype. Optional dtype must be either a floating point or "
                           f"complex dtype. Got: {aten_type_name(dtype)}")


def _amax_out(a: Bound) -> None:  # amax / amin meta: the out's dtype before the dims
    x, out = a["self"], a.get("out")
    if out is not None and out.dtype != x.dtype:
        raise RuntimeError(f"Expected the dtype for input and out to match, but got {aten_type_name(x.dtype)} for "
                           f"input's dtype and {aten_type_name(out.dtype)} for out's dtype.")


def _group_norm(a: Bound) -> None:  # native_group_norm's checks before the refusal table (ops/norm_checks.py)
    norm_checks.check_group_norm(a["input"], a.get("weight"), a.get("bias"), a["N"], a["C"], a["HxW"], a["group"])


def _no_complex(words: str, binary: bool = False) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), ...) in the meta
        bounds = [a[k] for k in ("min", "max") if _is_tensor(a.get(k))]
        if bounds:  # the Tensor overloads: clamp_min/clamp_max's binary iterator (its broadcast) first
            if binary:  # the shape, then the common dtype's cast to the out= tensor
                broadcast(a["self"].shape, bounds[0].shape)
                if a.get("out") is not None:
                    cast_to(result_type([a["self"], bounds[0]]), a["out"].dtype)
            return
        if a["self"].dtype.is_complex:
            raise NotImplementedError(words)
    return check


def _geqrf(a: Bound) -> None:  # geqrf_out: the rank, the outs' dtypes (checkLinalgCompatibleDtype), the dispatch
    x = a["self"]
    if len(x.shape) < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    for name in ("a", "tau"):
        out = a.get(name)
        if out is not None and not torch.can_cast(x.dtype, out.dtype):
            raise RuntimeError(f"torch.geqrf: Expected {name} to be safely castable from {aten_type_name(x.dtype)} "
                               f"dtype, but got {name} with dtype {aten_type_name(out.dtype)}")
    if x.dtype not in _LAPACK:
        raise dispatch_refusal("geqrf_cpu", x.dtype)


def _lcm(a: Bound) -> None:  # TensorIterator::borrowing_binary_op, then lcm_cpu's AT_DISPATCH_INTEGRAL_TYPES
    x, other, out = a["self"], a["other"], a.get("out")
    broadcast(x.shape, other.shape)
    common = result_type([x, other])
    if out is not None:
        cast_to(common, out.dtype)
    if common is not None and (common == torch.bool or common.is_floating_point or common.is_complex):
        raise dispatch_refusal("lcm_cpu", common)


def _lcm_inplace(a: Bound) -> None:  # the in-place iterator: self's overlap, shape and cast, then the dispatch
    error_class_checks.inplace_binary(a)
    _lcm(a)


def _hardshrink(a: Bound) -> None:  # hardshrink_cpu: AT_DISPATCH_FLOATING_TYPES_AND2(BFloat16, Half)
    x = a["self"]
    if x.dtype not in FLOATS:
        raise dispatch_refusal("hardshrink_cpu", x.dtype)


def _pdist_forward(a: Bound) -> None:  # pdist_forward_stub runs for n > 1 rows of m > 0 columns
    x = a["self"]
    shape = [int(s) for s in x.shape]
    if getattr(x, "is_contiguous", lambda: True)() is False:  # "_pdist_forward requires contiguous input" first
        return
    if len(shape) == 2 and shape[0] > 1 and shape[1] > 0 and x.dtype not in (torch.float32, torch.float64):
        raise dispatch_refusal("pdist", x.dtype)


def _exact_outs(values: str, indices: str) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # the structured kernel's set_output: each out= tensor's dtype exactly
        x = a["self"]
        for name, dtype in ((values, x.dtype), (indices, torch.int64)):
            out = a.get(name)
            if out is not None and out.dtype != dtype:
                raise RuntimeError(f"Expected out tensor to have dtype {aten_meta_name(dtype)}, but got "
                                   f"{aten_meta_name(out.dtype)} instead")
    return check


def _addmv(a: Bound) -> None:  # addmv's meta: the ranks, then the sizes (self.size(0) read for the words)
    x, mat, vec = a["self"], a["mat"], a["vec"]
    if not (len(mat.shape) == 2 and len(vec.shape) == 1 and len(x.shape) <= 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got {len(x.shape)}, {len(mat.shape)}, "
                           f"{len(vec.shape)}")
    numel = 1 if not x.shape else int(x.shape[0])
    if not (mat.shape[1] == vec.shape[0] and (mat.shape[0] == numel or numel == 1)):
        if not x.shape:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        raise RuntimeError(f"size mismatch, got input ({numel}), mat ({mat.shape[0]}x{mat.shape[1]}), vec "
                           f"({vec.shape[0]})")


def _convolution(a: Bound) -> None:  # _convolution's first checks
    if len(a["weight"].shape) < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if a["groups"] <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _complex_parts(first: str, second: str) -> Callable[[Bound], None]:
    def check(a: Bound) -> None:  # complex_check_floating, then complex_check_dtype (the out= exactly)
        x, y, out = a[first], a[second], a.get("out")
        check_parts(x, y)
        if out is not None:
            check_out(complex_of(x.dtype), out.dtype)
    return check


def _scatter_reduce(a: Bound) -> None:  # scatter_meta_impl's checks (ops/index_checks.py) before the refusal
    x = a["self"]
    index_checks.check_scatter(x, wrap_dim(a["dim"], len(x.shape)), a["index"], a["src"])


def _mse_loss_out(a: Bound) -> None:  # the iterator's enforce_safe_casting_to_output before mse_cpu's dispatch
    out = a.get("out")
    if out is not None:
        cast_to(result_type([a["self"], a["target"]]), out.dtype)


def _bernoulli_float(a: Bound) -> None:  # bernoulli_(float p): the range check before the dispatch
    p = a.get("p")
    if isinstance(p, float) and not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")


def _histc(a: Bound) -> None:  # bins > 0, then min.to<double>() and max.to<double>(), before the dispatch
    if isinstance(a.get("bins"), int) and a["bins"] <= 0:
        return  # the bins check that follows raises CPU's words
    for name in ("min", "max"):
        v = a.get(name)
        if isinstance(v, complex) and v.imag != 0:
            raise RuntimeError("value cannot be converted to type double without overflow")


def _count_nonzero(a: Bound) -> None:  # every dim wrapped (IndexError) before the repeated-dim check
    dims = a.get("dim")
    for d in dims if isinstance(dims, list | tuple) else ([] if dims is None else [dims]):
        wrap_dim(d, len(a["self"].shape))


def _unique_dim(a: Bound) -> None:  # unique_dim's dispatch (no complex) before the dim is wrapped
    if a["self"].dtype.is_complex:
        raise dispatch_refusal("unique_dim", a["self"].dtype)


def _cdist_backward_out(a: Bound) -> None:  # the out= wrapper's copy_arg: the result is x1's dtype
    out = a.get("out")
    if out is not None and out.dtype != a["x1"].dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {aten_meta_name(a['x1'].dtype)}, but got "
                           f"{aten_meta_name(out.dtype)} instead")


def _lstsq_out(a: Bound) -> None:  # linalg_lstsq.out: linalg_lstsq_cpu's dispatch before the outs' checks
    x, b = a["self"], a["b"]
    diff = len(x.shape) - len(b.shape)
    if len(x.shape) < 2 or not b.shape or diff not in (0, 1) or x.shape[-2] != (b.shape[-1] if diff else b.shape[-2]):
        return  # linalg_lstsq's rank and size checks come first (made by the lowering)
    broadcast(x.shape[:-2], b.shape[:-2] if not diff else b.shape[:-1])  # the batch dims' broadcast too
    # rcond None: its default, the dtype's epsilon, is read first ("doesn't handle types other than float and double")
    if a.get("solution") is not None and a.get("rcond") is not None and x.dtype == b.dtype and x.dtype not in _LAPACK:
        raise dispatch_refusal("linalg_lstsq_cpu", x.dtype)


def _is_tensor(v: Any) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype")


_SAME_DTYPE_OUT = error_class_checks.same_dtype_out
BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {
    "mean": _mean, "amax": _amax_out, "amin": _amax_out, "native_group_norm": _group_norm,
    "round": _SAME_DTYPE_OUT, "mish": _SAME_DTYPE_OUT,
    "floor": _no_complex("floor is not supported for complex inputs"),
    "ceil": _no_complex("ceil is not supported for complex inputs"),
    "trunc": _no_complex("trunc is not supported for complex inputs"),
    "clamp_min": _no_complex("clamp is not supported for complex types", binary=True),
    "clamp_max": _no_complex("clamp is not supported for complex types", binary=True),
    "relu": _no_complex("clamp is not supported for complex types"),
    "geqrf": _geqrf, "lcm": _lcm, "lcm_": _lcm_inplace, "hardshrink": _hardshrink, "_pdist_forward": _pdist_forward,
    "max_pool2d_with_indices": _exact_outs("out", "indices"),
    "adaptive_max_pool2d": _exact_outs("out", "indices"), "adaptive_max_pool3d": _exact_outs("out", "indices"),
    "addmv": _addmv, "addmv_": _addmv, "convolution": _convolution, "_convolution": _convolution,
    "complex": _complex_parts("real", "imag"), "polar": _complex_parts("abs", "angle"),
    "clamp": _no_complex("clamp is not supported for complex types"), "bernoulli_": _bernoulli_float,
    "histc": _histc, "count_nonzero": _count_nonzero, "unique_dim": _unique_dim,
    "_cdist_backward": _cdist_backward_out, "linalg_lstsq": _lstsq_out, "mse_loss": _mse_loss_out,
    "log_sigmoid_backward": backward_checks.check_log_sigmoid_backward,
    "scatter_reduce": _scatter_reduce,
    "scatter_reduce_": _scatter_reduce,
}
