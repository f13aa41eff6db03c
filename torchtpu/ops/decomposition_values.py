"""Values where an accepted upstream decomposition and CPU's kernel disagree, corrected around the decomposition
(eager and torch.compile wrap it alike, ops/checked_decompositions.py):

- elu (and so celu, selu): CPU's kernel takes x * scale at x = 0, the decomposition negcoef * expm1(x *
  input_scale), which is NaN at 0 when input_scale or alpha * scale is infinite or NaN (fuzz seed 11: elu of
  bfloat16 zeros with input_scale inf gave NaN, CPU 0). Only such calls pay for the correction.
- slice_scatter: a slice over the whole dim returns src.clone() upstream, in src's dtype; CPU's result has self's
  (fuzz seed 15: bfloat16 self, float64 src gave float64). src is converted to self's dtype first. The same for
  select_scatter, whose upstream `where` promotes (fuzz seed 48: int8 self, int16 src gave int16).
- binary_cross_entropy_backward with a weight of another dtype: CPU's kernel writes grad_input in self's dtype,
  then grad_input.mul_(weight) (computed in the common dtype, cast back) and div_(numel) for a mean; upstream
  multiplies out of place (a float64 weight gave a float64 result, CPU float32). Done in CPU's order around the
  unweighted, unreduced decomposition.
- binary_cross_entropy_backward with grad_output or target of a shape other than self's: CPU's kernel
  (Loss.cpp) iterates over squeezed views (grad.squeeze(), ...) into a squeezed view of grad_input = empty_like(self);
  the iterator resizes that view to the broadcast shape, so grad_input keeps self's shape and holds the broadcast
  result's first elements (fuzz seed 23: grad float32[4, 1], self [1, 1] gave [4, 1], CPU [1, 1]); upstream
  broadcasts the unsqueezed shapes. Computed on squeezed operands, cut to self's count and shape.
- binary_cross_entropy (and .out) with target, weight or out= of a shape other than self's: CPU's kernel
  (Loss.cpp) iterates over squeeze(input), squeeze(target) into a squeezed view of its loss tensor (out=, or
  empty_like(self)), which the iterator resizes, not the loss: the loss keeps its shape and holds the broadcast
  result's first elements (an empty out= stays empty, so a mean is NaN: fuzz seed 3), then loss.mul_(weight) and
  the reduction of that loss; upstream broadcasts the unsqueezed shapes. A non-contiguous out= of another shape,
  or a self with more elements than the result (CPU's loss is then uninitialized), is refused.
- xlogy, special_xlogy, special_xlog1py with a Python number: CPU's TensorIterator casts the wrapped number to the
  common dtype (no overflow check) and the kernel computes from that value; upstream computes with the number in
  the op-math type (fuzz seed 16/18: xlog1py of float16 with 1e6, CPU +-inf, tpu finite; 0.1 an ulp off). The
  number is rounded through the result dtype first. In float16/bfloat16 CPU's log(y) is rounded to that type
  before the product (seed 39).
- huber_loss_backward with delta <= 0 (the forward refuses it, the backward does not): CPU's scalar path tests
  x <= -delta before x >= delta; upstream tests x < -delta before x > delta, which flips the sign at x == -delta
  (fuzz seed 26). CPU's vectorized path gives sign(x) * delta there, for |x| < -delta too (a CPU inconsistency:
  it depends on the element's position and the SIMD width); tpu follows the scalar path, as CPU's one-element
  and float64 results.
- uniform of an expanded self: drawn into a tensor of clone's layout, as CPU's self.clone().uniform_() (seed 38:
  upstream kept the stride-0 dims, which uniform_ refuses).
- nansum.out without dtype=: ATen's nansum_out computes an integral self as sum_out (sum(bool, out=<bool>)
  computes) and a floating one in the out tensor's dtype (a float32 self into a float64 out= is summed in float64,
  a float16 one into a float32 out= does not overflow); upstream sums in the self's dtype and casts (fuzz seeds 25,
  26: refused a bool out=).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from torchtpu.dtypes import opmath, rounded_scalar

aten = torch.ops.aten

_SCALAR_THROUGH_RESULT = frozenset({aten.xlogy, aten.special_xlogy, aten.special_xlog1py})
WRAPPED = frozenset({aten.elu, aten.slice_scatter, aten.select_scatter, aten.binary_cross_entropy_backward,
                     aten.binary_cross_entropy, aten.huber_loss_backward, aten.nansum, aten.uniform}) \
    | _SCALAR_THROUGH_RESULT


def _finite(value: Any) -> bool:
    return not isinstance(value, int | float) or math.isfinite(value)


def _elu_at_zero(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    names = [a.name for a in op._schema.arguments]
    defaults = {"alpha": 1, "scale": 1, "input_scale": 1}

    def kernel(*args: Any, **kwargs: Any) -> Any:
        bound = {**defaults, **dict(zip(names, args)), **kwargs}
        alpha, scale, input_scale = bound["alpha"], bound["scale"], bound["input_scale"]
        if _finite(input_scale) and _finite(alpha) and _finite(scale) and _finite(alpha * scale):
            return fn(*args, **kwargs)
        x = bound["self"]
        zero, at_zero = x == 0, x * scale  # before the call: an out= tensor may be x itself
        result = fn(*args, **kwargs)
        fixed = torch.where(zero, at_zero, result)
        return result.copy_(fixed) if "out" in bound else fixed

    return kernel


def _src_in_self_dtype(fn: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(self: torch.Tensor, src: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, src.to(self.dtype), *args, **kwargs)

    return kernel


def _squeezed(t: torch.Tensor) -> torch.Tensor:
    """`t` without its size-1 dims (Tensor.squeeze(); spelled as a reshape, which a compiled graph traces alike)."""
    return t.reshape([s for s in t.shape if s != 1])


def _bce_backward_weight(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    names = [a.name for a in op._schema.arguments]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        bound = {"weight": None, "reduction": 1, **dict(zip(names, args)), **kwargs}
        x, weight, out = bound["self"], bound["weight"], bound.get("grad_input")
        grad, target = bound["grad_output"], bound["target"]
        same_shapes = grad.shape == x.shape and target.shape == x.shape
        if same_shapes and (weight is None or weight.dtype == x.dtype):
            return fn(*args, **kwargs)
        if same_shapes:
            plain = aten.binary_cross_entropy_backward.default(grad, x, target, None, 0)
        else:  # CPU's iterator over squeezed views: grad_input (self's shape) holds its first elements
            operands = torch.broadcast_tensors(_squeezed(grad), _squeezed(x), _squeezed(target))
            plain = aten.binary_cross_entropy_backward.default(*operands, None, 0)
            if out is not None:  # the out= tensor's own squeezed view is the iterator's output, resized in
                # out's storage: an empty or contiguous out= keeps its shape and reads the first elements (seed 62)
                if _squeezed(out).shape != plain.shape and out.numel() and not out.is_contiguous():
                    raise RuntimeError(
                        f"binary_cross_entropy_backward: a non-contiguous grad_input= of shape {list(out.shape)} with "
                        f"grad_output {list(grad.shape)}, self {list(x.shape)} and target {list(target.shape)} of "
                        "other shapes is not supported on tpu (CPU writes a squeezed view of it); pass a grad_input "
                        f"of shape {list(plain.shape)} or operands of self's shape")
            holder = x if out is None else out
            flat = plain.reshape(-1)
            if out is not None and out.numel() > flat.numel():  # the rest of out keeps its values
                flat = torch.cat([flat, out.reshape(-1)[flat.numel():].to(flat.dtype)])
            plain = flat[:holder.numel()].reshape(holder.shape)
        result = plain if weight is None else (plain * weight).to(plain.dtype)
        if bound["reduction"] == 1:
            result = result / x.numel()
        if out is None:
            return result
        if out.shape != result.shape:
            out.resize_(result.shape)
        return out.copy_(result)

    return kernel


def _bce_range_asserted(x: torch.Tensor, target: torch.Tensor) -> None:
    """CPU's kernel checks each element pair it reads, the input's before the target's: the first pair with a value
    outside [0, 1] (NaN too) names which. Asserted on the device (ops/device_asserts.py), not read back."""
    xs, ts = torch.broadcast_tensors(_squeezed(x), _squeezed(target))
    if not xs.numel():
        return
    bad_x, bad_t = ~((xs >= 0) & (xs <= 1)).reshape(-1), ~((ts >= 0) & (ts <= 1)).reshape(-1)
    first = (bad_x | bad_t).to(torch.int32).argmax(0, keepdim=True)  # [0] where none is bad
    torch._assert_async(~bad_x.gather(0, first).reshape(()), "all elements of input should be between 0 and 1")
    torch._assert_async(~bad_t.any(), "all elements of target should be between 0 and 1")


def _bce_squeezed(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    names = [a.name for a in op._schema.arguments]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        bound = {"weight": None, "reduction": 1, **dict(zip(names, args)), **kwargs}
        x, target, weight, out = bound["self"], bound["target"], bound["weight"], bound.get("out")
        _bce_range_asserted(x, target)
        if target.shape == x.shape and (out is None or out.shape == x.shape) and (
                weight is None or torch.broadcast_shapes(weight.shape, x.shape) == x.shape):
            return fn(*args, **kwargs)
        xs, ts = torch.broadcast_tensors(_squeezed(x), _squeezed(target))
        plain = aten.binary_cross_entropy.default(xs, ts, None, 0)
        if out is None:
            if x.numel() > plain.numel():
                raise RuntimeError(f"binary_cross_entropy: self {list(x.shape)} with target {list(target.shape)} is "
                                   "not supported on tpu (CPU's loss would hold uninitialized memory)")
            loss = plain.reshape(-1)[:x.numel()].reshape(x.shape).clone()
        else:
            if out.dtype != x.dtype:
                from torchtpu.ops.tracing import aten_type_name
                raise RuntimeError(f"Found dtype {aten_type_name(out.dtype)} but expected {aten_type_name(x.dtype)}")
            loss = out
            if _squeezed(out).shape == plain.shape:
                out.copy_(plain.reshape(out.shape))
            elif not out.is_contiguous():
                raise RuntimeError(
                    f"binary_cross_entropy: a non-contiguous out= of shape {list(out.shape)} with a result of shape "
                    f"{list(plain.shape)} is not supported on tpu (CPU writes a resized squeezed view of it); pass an "
                    f"out= of shape {list(x.shape)}")
            elif min(out.numel(), plain.numel()):
                n = min(out.numel(), plain.numel())
                out.view(-1)[:n].copy_(plain.reshape(-1)[:n])
        if weight is not None:  # the iterator's words where the two shapes do not broadcast
            torch.broadcast_tensors(torch.empty(loss.shape, device="meta"), torch.empty(weight.shape, device="meta"))
            loss.mul_(weight)
        reduction = bound["reduction"]
        if reduction not in (1, 2):
            return loss
        reduced = loss.mean() if reduction == 1 else loss.sum()
        if out is None:
            return reduced
        out.resize_(())
        return out.copy_(reduced)

    return kernel


def _number_in_result_dtype(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    names = [a.name for a in op._schema.arguments]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        bound = {**dict(zip(names, args)), **kwargs}
        x, y = bound.get("self"), bound.get("other")
        number, tensor = ("self", y) if isinstance(x, int | float) else ("other", x)
        value = bound.get(number)
        if not isinstance(value, int | float) or isinstance(value, bool) or not isinstance(tensor, torch.Tensor):
            return fn(*args, **kwargs)
        result = torch.result_type(tensor, value)
        if not result.is_floating_point:  # INT_TO_FLOAT promotion
            result = torch.get_default_dtype()
        rounded = rounded_scalar(float(value), result)
        if number in kwargs:
            kwargs = {**kwargs, number: rounded}
        else:
            args = tuple(rounded if i == names.index(number) else a for i, a in enumerate(args))
        return fn(*args, **kwargs)

    return kernel


def _log_of_number(y: float, plus_one: bool) -> float:
    """log(y) (log1p(y)) of a number as a float (C's logf, rounded from the double): -inf at the pole, NaN below."""
    at = y + 1.0 if plus_one else y
    if at == 0:
        return -math.inf
    if at < 0:
        return math.nan
    return rounded_scalar(math.log1p(y) if plus_one else math.log(y), torch.float32)


def _log_in_reduced_type(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """xlogy / xlog1py in float16 / bfloat16: CPU's kernel computes x * std::log(y) in scalar_t, whose log rounds
    to that type before the product; upstream multiplies in float32 (fuzz seed 39: one element in four an ulp
    off). The decomposition runs first (its checks, out= resize); its values are replaced by CPU's."""
    names = [a.name for a in op._schema.arguments]
    out_name = next((a.name for a in op._schema.arguments if a.is_out), None)
    log = torch.log1p if op.overloadpacket is aten.special_xlog1py else torch.log

    def kernel(*args: Any, **kwargs: Any) -> Any:
        bound = {**dict(zip(names, args)), **kwargs}
        x, y = bound.get("self"), bound.get("other")
        tensor = x if isinstance(x, torch.Tensor) else y
        if not isinstance(tensor, torch.Tensor) or isinstance(x, bool) or isinstance(y, bool):
            return fn(*args, **kwargs)
        common = torch.result_type(x, y)
        if common not in (torch.float16, torch.bfloat16):
            return fn(*args, **kwargs)
        if out_name is not None and bound.get(out_name) is not None:  # out= may be an input, written by fn first
            x, y = (v.clone() if isinstance(v, torch.Tensor) else v for v in (x, y))  # (xlogy_ is xlogy.out(.., self))
        result = fn(*args, **kwargs)

        xs = x.to(common) if isinstance(x, torch.Tensor) else x  # a number: rounded to common already
        if isinstance(y, torch.Tensor):
            ys = y.to(common)
            product = xs * log(ys)
            if isinstance(xs, torch.Tensor):
                product = torch.where(xs == 0, 0.0, product)
            elif xs == 0:
                product = torch.zeros_like(ys)
            value = torch.where(torch.isnan(ys), math.nan, product)
        else:  # log of the number in common, in plain Python (a decomposition under torch.compile makes no tensor)
            lg = rounded_scalar(_log_of_number(float(y), log is torch.log1p), common)
            value = torch.where(xs == 0, 0.0, xs * lg) if not math.isnan(y) else torch.full_like(xs, math.nan)
        if out_name is None:
            return value
        return result.copy_(value)

    return kernel


def _dense_template(fn: Callable[..., Any]) -> Callable[..., Any]:
    """uniform of an expanded self: CPU draws into self.clone() (dense strides); upstream keeps self's strides,
    whose stride-0 dims uniform_ refuses to write (fuzz seed 38). A stand-in of clone's layout draws instead."""

    def kernel(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if any(st == 0 and n > 1 for n, st in zip(self.shape, self.stride())):
            self = torch.empty_like(self)
        return fn(self, *args, **kwargs)

    return kernel


def _huber_backward_nonpositive_delta(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    if op is not aten.huber_loss_backward.default:  # .out runs the functional (ops/decompositions.py)
        return fn

    def kernel(grad_output: Any, self: Any, target: Any, reduction: int, delta: float) -> Any:
        if not isinstance(delta, int | float) or delta > 0:
            return fn(grad_output, self, target, reduction, delta)
        dtype = torch.promote_types(torch.promote_types(grad_output.dtype, self.dtype), target.dtype)
        wide = opmath(dtype)
        g, x = grad_output.to(wide), (self.to(wide) - target.to(wide))
        norm = 1.0 / self.numel() if reduction == 1 and self.numel() else 1.0
        result = torch.where(x <= -delta, -norm * g * delta, torch.where(x >= delta, norm * g * delta, norm * x * g))
        return result.to(dtype)

    return kernel


def _nansum_out_dtype(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    if op is not aten.nansum.out:
        return fn
    names = [a.name for a in op._schema.arguments]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        bound = {"dim": None, "keepdim": False, "dtype": None, **dict(zip(names, args)), **kwargs}
        x, out = bound["self"], bound["out"]
        if not isinstance(out, torch.Tensor) or not isinstance(x, torch.Tensor) or x.dtype.is_complex:
            return fn(*args, **kwargs)
        if not x.dtype.is_floating_point:  # ATen's nansum_out: an integral self is sum_out's
            return aten.sum.IntList_out(x, bound["dim"], bound["keepdim"], dtype=bound["dtype"], out=out)
        if bound["dtype"] is not None:
            return fn(*args, **kwargs)
        if not out.dtype.is_floating_point:  # the reduction runs in the out's dtype (get_dtype_from_result)
            from torchtpu.ops.tracing import aten_type_name

            raise NotImplementedError(f'"nansum_cpu" not implemented for {aten_type_name(out.dtype)!r}')
        return fn(x, bound["dim"], bound["keepdim"], dtype=out.dtype, out=out)

    return kernel


def wrap(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (op's upstream decomposition) with CPU's value where the two differ."""
    if op.overloadpacket is aten.nansum:
        return _nansum_out_dtype(op, fn)
    if op.overloadpacket is aten.huber_loss_backward:
        return _huber_backward_nonpositive_delta(op, fn)
    if op.overloadpacket is aten.uniform:
        return _dense_template(fn)
    if op.overloadpacket in (aten.slice_scatter, aten.select_scatter):
        return _src_in_self_dtype(fn)
    if op.overloadpacket is aten.binary_cross_entropy_backward:
        return _bce_backward_weight(op, fn)
    if op.overloadpacket is aten.binary_cross_entropy:
        return _bce_squeezed(op, fn)
    if op.overloadpacket in _SCALAR_THROUGH_RESULT:
        return _number_in_result_dtype(op, _log_in_reduced_type(op, fn))
    return _elu_at_zero(op, fn)
