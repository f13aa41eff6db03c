"""Upstream decompositions we accept, listed (never copied): each becomes the PrivateUse1 kernel of its op and
re-dispatches into ops that have lowerings. An op here must not also have a lowering (checked at registration).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._decomp import get_decompositions

from torchtpu.ops import checked_decompositions, linalg_checks, out_checks

aten = torch.ops.aten

ACCEPTED = [
    aten.native_group_norm, aten.native_group_norm_backward, aten.elu, aten.elu_backward, aten.hardsigmoid,
    aten.hardsigmoid_backward, aten.hardswish, aten.hardswish_backward, aten.softplus, aten.softplus_backward,
    aten.mish, aten.glu, aten.glu_backward, aten.huber_loss, aten.huber_loss_backward, aten.smooth_l1_loss,
    aten.smooth_l1_loss_backward, aten.binary_cross_entropy, aten.binary_cross_entropy_backward,
    aten.binary_cross_entropy_with_logits, aten.soft_margin_loss, aten.soft_margin_loss_backward,
    aten.nll_loss2d_forward, aten.nll_loss2d_backward, aten.log_sigmoid_forward, aten.log_sigmoid_backward,
    aten.tril, aten.triu, aten.diag_embed, aten.masked_fill, aten.embedding_dense_backward,
    aten.im2col, aten.col2im, aten._log_softmax_backward_data, aten.addcmul, aten.addcdiv, aten.lerp, aten.frac,
    aten.logaddexp, aten.logaddexp2, aten.xlogy, aten.sinc, aten.deg2rad, aten.rad2deg, aten.trace,
    aten.renorm, aten.aminmax, aten.std_mean, aten.cumsum, aten.rot90, aten.repeat, aten.narrow_copy, aten.new_full,
    aten.new_zeros, aten.new_ones, aten.new_empty, aten.fill, aten.zeros_like, aten.ones_like, aten.full_like,
    aten.empty_like, aten.select_scatter, aten.slice_scatter, aten.diagonal_scatter, aten.clamp_min, aten.clamp_max,
    aten.nan_to_num, aten.threshold, aten.hardshrink, aten.softshrink, aten.silu_backward, aten.gelu_backward,
    aten.constant_pad_nd, aten.linalg_cross, aten.baddbmm, aten.addmv, aten.addr, aten.count_nonzero,
    aten.unfold_backward, aten.unfold_copy, aten.isneginf, aten.isposinf, aten.special_entr, aten.special_log_ndtr,
    aten.special_xlog1py, aten.mse_loss_backward, aten.tanh_backward, aten.sigmoid_backward,
    aten.leaky_relu_backward, aten.hardtanh_backward, aten.threshold_backward, aten.logsumexp, aten.norm, aten.prod,
    aten.var_mean, aten.nansum, aten.take, aten.uniform, aten.bernoulli, aten.native_dropout_backward,
    aten.linspace, aten.full, aten.zero, aten.float_power,
]


# out= decompositions upstream wraps in pw_cast_for_opmath, which casts the out tensor too: a float16/bfloat16
# out= was written in a float32 copy and left as it was (its [0] shape, its old values); and torchgen's generated
# out= kernels (count_nonzero's), which the decomposition's out_wrapper wrote with a cast. These run the
# functional and copy into the out tensor (exact dtype, as CPU's kernel checks).
OUT_VIA_FUNCTIONAL = {aten.huber_loss_backward.out: aten.huber_loss_backward.default,
                      aten.count_nonzero.out: aten.count_nonzero.default,
                      aten.count_nonzero.dim_IntList_out: aten.count_nonzero.dim_IntList}


def _functional_and_out(functional: Any, out_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
                        ) -> tuple[Any, Any]:
    """An out= call's functional result and its out tensor (passed by name or last)."""
    if out_name in kwargs:
        out = kwargs.pop(out_name)
    else:
        out, args = args[-1], args[:-1]
    return functional(*args, **kwargs), out


def _out_via_functional(functional: Any, out_name: str) -> Callable[..., Any]:
    from torch._prims_common.wrappers import _maybe_resize_out, _safe_copy_out

    def out_kernel(*args: Any, **kwargs: Any) -> Any:
        result, out = _functional_and_out(functional, out_name, args, kwargs)
        _maybe_resize_out(out, result.shape)
        out_checks.check_copy_out(result, out)
        return _safe_copy_out(copy_from=result, copy_to=out, exact_dtype=True)

    return out_kernel


# out= kernels that are a TensorIterator promoting its inputs to their common dtype and casting the result into
# any out= tensor that dtype safely casts to (smooth_l1_loss_backward_out: bfloat16 grad_output, float16 input,
# bfloat16 grad_input computes in float32, fuzz seed 7): the functional of the inputs in that dtype, copied in
OUT_IN_COMMON_DTYPE = {aten.smooth_l1_loss_backward.grad_input: aten.smooth_l1_loss_backward.default}


def _out_in_common_dtype(functional: Any, out_name: str) -> Callable[..., Any]:
    from torch._prims_common.wrappers import _maybe_resize_out

    from torchtpu.ops.dtype_refusals import result_dtype
    from torchtpu.ops.tracing import aten_type_name

    def out_kernel(*args: Any, **kwargs: Any) -> Any:
        out = kwargs.pop(out_name)  # keyword-only in the schema
        tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]
        common = result_dtype([t.dtype for t in tensors if t.ndim], [t.dtype for t in tensors if not t.ndim])
        if not torch.can_cast(common, out.dtype):
            raise RuntimeError(f"result type {aten_type_name(common)} can't be cast to the desired output type "
                               f"{aten_type_name(out.dtype)}")
        as_common = lambda v: v.to(common) if isinstance(v, torch.Tensor) else v  # noqa: E731
        result = functional(*map(as_common, args), **{k: as_common(v) for k, v in kwargs.items()})
        _maybe_resize_out(out, result.shape)
        return out.copy_(result)

    return out_kernel


# out= kernels that write through a squeezed view of the out tensor (ATen's binary_cross_entropy_backward_out_cpu:
# TensorIterator resizes the view, not grad_input): the out tensor keeps its shape and the result's elements fill
# its first elements in order (an empty out stays empty; a larger one keeps its other elements).
OUT_KEEPS_SHAPE = {aten.binary_cross_entropy_backward.grad_input: aten.binary_cross_entropy_backward.default}


def _out_keeps_shape(functional: Any, out_name: str) -> Callable[..., Any]:
    def out_kernel(*args: Any, **kwargs: Any) -> Any:
        result, out = _functional_and_out(functional, out_name, args, kwargs)
        out_checks.check_copy_out(result, out)
        n = min(result.numel(), out.numel())
        if result.shape == out.shape:
            out.copy_(result)
        elif n:
            out.view(-1)[:n].copy_(result.reshape(-1)[:n])
        return out

    return out_kernel


# ops ATen computes for a complex tensor as its real and imaginary parts, each written through its view of the
# result (UnaryOps.cpp nan_to_num_out), where upstream's decomposition refuses complex (its isneginf)
BY_PARTS = frozenset({aten.nan_to_num})


def _by_parts(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    from torch._prims_common.wrappers import _maybe_resize_out

    out_name = next((a.name for a in op._schema.arguments if a.is_out), None)
    in_place = op._schema.name.endswith("_")

    def kernel(*args: Any, **kwargs: Any) -> Any:
        self = args[0] if args else kwargs.get("self")
        if not (isinstance(self, torch.Tensor) and self.is_complex()):
            return fn(*args, **kwargs)
        rest = args[1:]
        if out_name is not None:
            out = kwargs.pop(out_name)
            _maybe_resize_out(out, self.shape)
            for part in (torch.real, torch.imag):
                op(part(self), *rest, **kwargs, **{out_name: part(out)})
            return out
        if in_place:
            for part in (torch.real, torch.imag):
                op(part(self), *rest, **kwargs)
            return self
        return torch.complex(*(op(part(self), *rest, **kwargs) for part in (torch.real, torch.imag)))

    return kernel


def define_all(define: Callable[..., Any]) -> None:
    """Makes a "decomposition" record for each overload of an ACCEPTED packet that upstream decomposes and that
    has no eager record of its own (a lowering of the overload, or its derived in-place / out= sibling, is the
    more specific choice; which overloads that leaves is what tests/test_ops_records.py prints and pins)."""
    from torchtpu.ops.registry import TABLE

    for op, fn in get_decompositions(ACCEPTED).items():
        if op in OUT_IN_COMMON_DTYPE:
            fn = _out_in_common_dtype(OUT_IN_COMMON_DTYPE[op], next(a.name for a in op._schema.arguments if a.is_out))
        elif op in OUT_VIA_FUNCTIONAL or op in OUT_KEEPS_SHAPE:
            out_name = next(a.name for a in op._schema.arguments if a.is_out)
            fn = _out_via_functional(OUT_VIA_FUNCTIONAL[op], out_name) if op in OUT_VIA_FUNCTIONAL \
                else _out_keeps_shape(OUT_KEEPS_SHAPE[op], out_name)
        elif any(a.is_out for a in op._schema.arguments):
            fn = out_checks.exact_out(op, fn)
        if op.overloadpacket in BY_PARTS:
            fn = _by_parts(op, fn)
        fn = checked_decompositions.guarded(op, fn, checked_decompositions.EAGER)
        if op.overloadpacket in linalg_checks.CROSS_WRAPPED:
            fn = linalg_checks.wrap_cross(op, fn)
        record = TABLE.get(op)
        if record is not None and record.fn is not None:
            continue
        if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"):
            continue
        define(op, "decomposition", fn, site=f"{__name__}.ACCEPTED ({op.overloadpacket.__name__})")
