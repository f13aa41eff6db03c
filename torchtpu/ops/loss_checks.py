"""ATen's argument checks and handling for the losses torchtpu runs by an upstream decomposition
(decompositions.ACCEPTED), where the decomposition differs from CPU's kernel: smooth_l1_loss's beta and reduction,
huber_loss's and soft_margin_loss's reduction, the result dtype of huber_loss, soft_margin_loss (and its backward) and
binary_cross_entropy, nll_loss2d's ranks, sizes, weight, dtypes and (backward)
grad_output / total_weight. Eager mode and torch.compile wrap the same decomposition with `wrap`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from torchtpu.ops import operand_checks
from torchtpu.ops import prims as P
from torchtpu.ops.tracing import Sym, aten_type_name

aten = torch.ops.aten


def _reduction_args(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """ATen's reduction and beta/delta handling for the losses whose upstream decomposition differs: CPU's
    smooth_l1_loss refuses a negative beta and (an internal assert) a reduction other than none/mean/sum, its
    huber_loss takes any other reduction as none (the reference raised ValueError), and huber_loss.out then
    keeps the loss's first element, 0-d."""
    names = [a.name for a in op._schema.arguments]
    at = names.index("reduction")
    get = _getter(names)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        reduction = get(args, kwargs, "reduction", 1)
        if op.overloadpacket is aten.smooth_l1_loss:
            if not get(args, kwargs, "beta", 1.0) >= 0:  # NaN too, as ATen's TORCH_CHECK(beta >= 0)
                raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
            if reduction not in (0, 1, 2):
                raise RuntimeError(f"smooth_l1_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction} "
                                   "(CPU: reduction == Reduction::Mean || reduction == Reduction::Sum INTERNAL ASSERT "
                                   "FAILED)")
        elif reduction not in (0, 1, 2) and op is aten.huber_loss.out:
            # CPU's huber_loss_out computes the unreduced loss into out, "reduces" it with the unknown value (a
            # no-op), resizes out to 0-d and copies the loss into it: it keeps the first element.
            x, target, out = get(args, kwargs, "self"), get(args, kwargs, "target"), get(args, kwargs, "out")
            loss = aten.huber_loss.default(x, target, 0, get(args, kwargs, "delta", 1.0))
            out.resize_(())
            if loss.numel():
                out.copy_(loss.reshape(-1)[0])
            return out
        elif reduction not in (0, 1, 2):
            if at < len(args):
                args = (*args[:at], 0, *args[at + 1:])
            else:
                kwargs = {**kwargs, "reduction": 0}
        return fn(*args, **kwargs)

    return kernel




def _first_element(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """soft_margin_loss with a reduction other than none/mean/sum: CPU's kernel computes the unreduced loss into
    its output, "reduces" it with the unknown value (a no-op returning that output itself), resizes the output to
    0-d and copies it into itself, so the result is 0-d and holds the loss's first element (the upstream
    decomposition returned the unreduced loss: fuzz seed 7, a [1] result where CPU's is 0-d). An empty loss leaves
    CPU's result uninitialized memory (fuzz seed 57: 0.0051 on CPU, -226 on tpu): refused, not a value to match."""
    names = [a.name for a in op._schema.arguments]
    get = _getter(names)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if get(args, kwargs, "reduction", 1) in (0, 1, 2):
            return fn(*args, **kwargs)
        loss = aten.soft_margin_loss.default(get(args, kwargs, "self"), get(args, kwargs, "target"), 0)
        if not loss.numel():
            raise RuntimeError(f"soft_margin_loss: reduction {get(args, kwargs, 'reduction')} is not none, mean or "
                               "sum, and the input has no elements: CPU returns uninitialized memory (its unknown "
                               "reduction keeps the first element of the unreduced loss); refused on tpu")
        first = loss.reshape(-1)[0].clone()
        if "out" not in names:
            return first
        out = get(args, kwargs, "out")
        out.resize_(())
        return out.copy_(first)

    return kernel


def _getter(names: list[str]) -> Callable[[tuple, dict, str, Any], Any]:
    def get(args: tuple, kwargs: dict, name: str, default: Any = None) -> Any:
        i = names.index(name)
        return args[i] if i < len(args) else kwargs.get(name, default)

    return get


def _check_nll_loss2d(x: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None) -> None:
    """check_inputs_nll_loss2d (LossNLL2d.cpp), in its order and words."""
    if target.dim() != 3:
        raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                           f"{target.dim()}")
    if x.dim() != 4:
        raise RuntimeError(f"only batches of spatial inputs supported (4D tensors), but got input of dimension: "
                           f"{x.dim()}")
    if weight is not None and weight.numel() != x.shape[1]:
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    if (x.shape[0], x.shape[2], x.shape[3]) != tuple(target.shape):
        raise RuntimeError(f"size mismatch (got input: {list(x.shape)} , target: {list(target.shape)}")


def _nll_loss2d_args(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """CPU's nll_loss2d checks before the decomposition (whose own checks are AssertionErrors or gather errors);
    a weight of any shape with one element per class is read flat, as CPU's kernel reads it."""
    names = [a.name for a in op._schema.arguments]
    get = _getter(names)
    backward = op.overloadpacket is aten.nll_loss2d_backward

    def kernel(*args: Any, **kwargs: Any) -> Any:
        x, target, weight = get(args, kwargs, "self"), get(args, kwargs, "target"), get(args, kwargs, "weight")
        _check_nll_loss2d(x, target, weight)
        if backward:
            total, grad = get(args, kwargs, "total_weight"), get(args, kwargs, "grad_output")
            if total.numel() != 1:
                raise RuntimeError(f"expected total_weight to be a single element tensor, got: {list(total.shape)} "
                                   f"({total.numel()} elements)")
            if get(args, kwargs, "reduction") == 0:
                if grad.dim() != 3:
                    raise RuntimeError(f"grad_output must have same dimension as target (3) but got dimension: "
                                       f"{list(grad.shape)}")
                if tuple(grad.shape) != tuple(target.shape):
                    raise RuntimeError(f"size mismatch (got grad_output: {list(grad.shape)} target: "
                                       f"{list(target.shape)}")
            elif grad.numel() != 1:
                raise RuntimeError(f"Expected a single element grad_output tensor, but got: {list(grad.shape)}")
        else:
            if target.dtype not in (torch.int64, torch.uint8):
                raise RuntimeError(f"expected target dtype to be Long or Byte, but got {aten_type_name(target.dtype)}")
            if not x.dtype.is_floating_point:
                raise NotImplementedError(f"\"nll_loss2d_forward_out_frame\" not implemented for "
                                          f"'{aten_type_name(x.dtype)}'")
        if weight is not None and weight.dim() != 1:
            i = names.index("weight")
            flat = weight.reshape(-1)
            if i < len(args):
                args = (*args[:i], flat, *args[i + 1:])
            else:
                kwargs = {**kwargs, "weight": flat}
        return fn(*args, **kwargs)

    return kernel


def _loss_in_input_dtype(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """CPU's huber_loss, soft_margin_loss and binary_cross_entropy write the unreduced loss into a tensor of the
    input's dtype
    (`at::empty_like(input)` as the TensorIterator's output), multiply it by the weight in place, then reduce it:
    the result has the input's dtype where the upstream decomposition promotes with the target or weight."""
    names = [a.name for a in op._schema.arguments]
    get = _getter(names)
    bce, huber = op.overloadpacket is aten.binary_cross_entropy, op.overloadpacket is aten.huber_loss

    def kernel(*args: Any, **kwargs: Any) -> Any:
        x, target = get(args, kwargs, "self"), get(args, kwargs, "target")
        weight = get(args, kwargs, "weight") if bce else None
        reduction = get(args, kwargs, "reduction", 1)
        if not (bce or huber) and op._overloadname == "default" and reduction in (0, 1, 2) \
                and x.dtype.is_floating_point and not target.dtype.is_complex:
            return _soft_margin_steps(x, target, reduction)
        if op._overloadname != "default" or reduction not in (0, 1, 2) or all(
                t is None or t.dtype == x.dtype for t in (target, weight)):
            return fn(*args, **kwargs)
        loss = fn(x, target, None, 0) if bce else fn(x, target, 0, get(args, kwargs, "delta", 1.0)) if huber \
            else fn(x, target, 0)
        loss = loss.to(x.dtype) if weight is None else (loss.to(x.dtype) * weight).to(x.dtype)
        return loss if reduction == 0 else loss.mean() if reduction == 1 else loss.sum()

    return kernel


def _soft_margin_steps(x: torch.Tensor, target: torch.Tensor, reduction: int) -> torch.Tensor:
    """CPU's soft_margin_loss_out step by step: neg_out(output, input).mul_(target).exp_().log1p_() into a tensor
    of the input's dtype, each step rounded to it (the in-place mul_ computes in the common dtype and casts back),
    then the reduction of that tensor. In float16 exp overflows to inf where the upstream decomposition's float32
    composition (pw_cast_for_opmath, one rounding) stayed finite (fuzz seed 50: CPU inf, tpu 1.69)."""
    loss = torch.mul(torch.neg(x), target).to(x.dtype)
    loss = torch.log1p(torch.exp(loss))
    return loss if reduction == 0 else loss.mean() if reduction == 1 else loss.sum()


def _grad_in_input_dtype(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """CPU's smooth_l1_loss_backward writes into `at::zeros_like(input)`: the gradient has the input's dtype,
    computed in the common dtype of grad, input and target, where the decomposition keeps the promoted one."""
    get = _getter([a.name for a in op._schema.arguments])

    def kernel(*args: Any, **kwargs: Any) -> Any:
        x = get(args, kwargs, "self")
        if op._overloadname != "default":
            return fn(*args, **kwargs)
        result = _smooth_l1_grad(get(args, kwargs, "grad_output"), x, get(args, kwargs, "target"),
                                 get(args, kwargs, "reduction"), get(args, kwargs, "beta"))
        return result if result.dtype == x.dtype else result.to(x.dtype)

    return kernel


def _smooth_l1_grad(grad: torch.Tensor, x: torch.Tensor, target: torch.Tensor, reduction: int, beta: float
                    ) -> torch.Tensor:
    """CPU's (vectorized) smooth_l1_loss_backward kernel: norm * (|d| >= beta ? (d > 0 ? 1 : -1) : d / beta) * grad
    for d = x - target, so a NaN d gives NaN (the upstream decomposition's sign(NaN) gave 0) and d = 0 with beta = 0
    gives -grad; in the operands' promoted dtype (float32 for a narrower float)."""
    promoted = torch.promote_types(torch.promote_types(grad.dtype, x.dtype), target.dtype)
    compute = torch.float32 if promoted in (torch.float16, torch.bfloat16) else promoted
    d = x.to(compute) - target.to(compute)
    norm = (1.0 / x.numel() if x.numel() else math.inf) if reduction == 1 else 1.0  # C++'s 1. / 0 is inf
    unit = torch.where(d > 0, 1.0, -1.0).to(compute)
    out = torch.where(d.abs() >= beta, unit, d / beta)
    return (norm * out * grad.to(compute)).to(promoted)


def _out_in_input_dtype(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """soft_margin_loss.out: CPU's kernel computes into its out tensor through a TensorIterator whose first input is
    `input`, so the out tensor must have the input's dtype ("Found dtype Double but expected Float") and the loss is
    in that dtype whatever the target's; the upstream out= decomposition required the promoted dtype."""
    names = [a.name for a in op._schema.arguments]
    get = _getter(names)
    if "out" not in names:
        return fn

    def kernel(*args: Any, **kwargs: Any) -> Any:
        x, out, reduction = get(args, kwargs, "self"), get(args, kwargs, "out"), get(args, kwargs, "reduction", 1)
        if out.dtype != x.dtype:
            raise RuntimeError(f"Found dtype {aten_type_name(out.dtype)} but expected {aten_type_name(x.dtype)}")
        loss = aten.soft_margin_loss.default(x, get(args, kwargs, "target"), reduction)
        out.resize_(loss.shape)
        return out.copy_(loss)

    return kernel


def _result_in_input_dtype(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """soft_margin_loss_backward: CPU's kernel writes into `at::empty_like(input)`, so the gradient has the input's
    dtype where the upstream decomposition promotes with grad_output and target."""
    get = _getter([a.name for a in op._schema.arguments])

    def kernel(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        if op._overloadname != "default":
            return result
        dtype = get(args, kwargs, "self").dtype
        return result if result.dtype == dtype else result.to(dtype)

    return kernel


_WRAPPERS = {aten.smooth_l1_loss: _reduction_args, aten.smooth_l1_loss_backward: _grad_in_input_dtype,
             aten.soft_margin_loss_backward: _result_in_input_dtype,
             aten.huber_loss: lambda op, fn: _reduction_args(op, _loss_in_input_dtype(op, fn)),
             aten.binary_cross_entropy: _loss_in_input_dtype,
             aten.soft_margin_loss: lambda op, fn: _first_element(
                 op, _out_in_input_dtype(op, _loss_in_input_dtype(op, fn))),
             aten.nll_loss2d_forward: _nll_loss2d_args, aten.nll_loss2d_backward: _nll_loss2d_args}
WRAPPED = frozenset(_WRAPPERS)


def wrap(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (op's upstream decomposition) behind CPU's argument checks and handling for op."""
    return _WRAPPERS[op.overloadpacket](op, fn)


def _numel(shape: Any) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _check_margin_input(x: Any) -> None:
    ndim, shape = len(x.shape), list(x.shape)
    if not ((ndim == 2 and shape[1] != 0) or (ndim == 1 and shape[0] != 0) or ndim == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: {shape}")


def check_multi_margin(x: Any, target: Any, weight: Any | None) -> None:
    """ATen's multi_margin_loss_shape_check (its order and words); `x`, `target`, `weight` have `.shape`."""
    _check_margin_input(x)
    ndim, shape = len(x.shape), list(x.shape)
    nframe, dim = (1, 1 if ndim == 0 else shape[0]) if ndim <= 1 else (shape[0], shape[1])
    if len(target.shape) > 1 or _numel(target.shape) != nframe:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{nframe}], but got {list(target.shape)}. "
                           f"Input has shape {shape}.")
    if weight is not None and (len(weight.shape) > 1 or _numel(weight.shape) != dim):
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got {list(weight.shape)}")


def multilabel_target_in_range(t: Sym, x: Sym, message: str) -> Sym:
    """The data check (a zero to tie in) that every multilabel target value is in [-1, classes), as ATen's
    min/max check (also the values after the first -1)."""
    classes = x.shape[-1] if x.ndim else 1
    return operand_checks.data_check(P.emit1("or", [P.compare("LT", t, -1), P.compare("GE", t, classes)]), message)


def check_multilabel_margin(x: Any, target: Any) -> None:
    """ATen's multilabel_margin_loss_shape_check."""
    _check_margin_input(x)
    ndim, shape, tshape = len(x.shape), list(x.shape), list(target.shape)
    dim = (1 if ndim == 0 else shape[0]) if ndim <= 1 else shape[1]
    ok = len(tshape) <= 1 and _numel(tshape) == dim if ndim <= 1 else tshape == [shape[0], shape[1]]
    if not ok:
        raise RuntimeError(f"inconsistent target size: {tshape} for input of size: {shape}")


def check_multilabel_forward(x: Any, target: Any) -> None:
    """multilabel_margin_loss_forward's shape check, then (an input with elements) the kernel's
    target.const_data_ptr<int64_t>(): CPU refuses a target of another dtype (fuzz seed 47: tpu read a float32
    target as int64). ATen reads the target's range first: a non-long target out of range is refused here in the
    dtype's words, not the range's."""
    check_multilabel_margin(x, target)
    if _numel(x.shape) and target.dtype != torch.int64:
        raise RuntimeError(f"expected scalar type Long but found {aten_type_name(target.dtype)}")
