"""CPU's operand checks of backward kernels that torchtpu's lowerings and accepted decompositions skipped (issue
17, fuzzer seed 2): each input CPU refuses was computed silently.

Most are one TensorIterator built with `check_all_same_dtype` (TensorIterator.cpp): the inputs' shapes broadcast
(compute_shape, infer_size's words), then (compute_types) the operands in
the iterator's order (outputs, then inputs) must share the first input's dtype, else "Found dtype X but expected Y"
for the first that differs; then the kernel's dispatch macro refuses a dtype it has no loop for
(NotImplementedError). Kernels and their iterators (native/Activation.cpp, Loss.cpp, GatedLinearUnit.cpp,
EmbeddingBag.cpp):

- _prelu_kernel_backward: outputs (grad_self: self's dtype, grad_weight: weight's), inputs (self, weight, grad).
- binary_cross_entropy_backward: output grad_input (input's dtype, or the out= tensor), inputs (grad, input,
  target); the kernel dispatches on grad_input's dtype; then grad_input.mul_(weight) (in-place shape and cast).
- log_sigmoid_backward: output grad_input (grad_output's dtype, or the out= tensor), inputs (input, buffer,
  grad_output).
- glu_backward: its rank, dim and even-size checks, then sigmoid_out(grad_input's first half, input's second
  half) (its result dtype cast to grad_input's), then output grad_input, inputs (grad_input, input, grad_output).
- _embedding_bag_per_sample_weights_backward: mode 'sum' only, then its internal asserts on the ranks.

The lowerings call these while tracing (shapes and dtypes), so every eager mode and a compiled graph make them
alike; the decompositions run behind `wrap` (decompositions.define_all).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu.ops.cpu_raise_checks import broadcast as infer_size
from torchtpu.ops.cpu_raise_checks import inplace_shape, result_type
from torchtpu.ops.tracing import aten_type_name

aten = torch.ops.aten

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def broadcast(shapes: Sequence[Sequence[int]]) -> None:
    """TensorIterator's compute_shape, before its dtype checks: the inputs' shapes broadcast in order (infer_size's
    words; the outputs are resized to the result)."""
    acc: Sequence[int] = []
    for shape in shapes:
        acc = infer_size(acc, shape)


def same_dtype(outputs: Sequence[torch.dtype], inputs: Sequence[torch.dtype]) -> None:
    """TensorIterator's check_all_same_dtype: every operand of the first input's dtype (outputs checked first)."""
    expected = inputs[0]
    for dtype in (*outputs, *inputs):
        if dtype != expected:
            raise RuntimeError(f"Found dtype {aten_type_name(dtype)} but expected {aten_type_name(expected)}")


def floating_kernel(kernel: str, dtype: torch.dtype) -> None:
    """AT_DISPATCH_FLOATING_TYPES_AND2(Half, BFloat16, ...): NotImplementedError for any other dtype."""
    if dtype not in _FLOATS:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{aten_type_name(dtype)}'")


def check_prelu_backward(grad_output: Any, self: Any, weight: Any) -> None:
    broadcast((self.shape, weight.shape, grad_output.shape))
    same_dtype((self.dtype, weight.dtype), (self.dtype, weight.dtype, grad_output.dtype))
    floating_kernel("prelu_backward_cpu", self.dtype)


def check_embedding_bag_per_sample_weights_backward(grad: Any, weight: Any, indices: Any, mode: int,
                                                    offset2bag: Any = None) -> None:
    """_embedding_bag_per_sample_weights_backward_cpu_template's checks in its order (the ranks are AT_ASSERTs
    there): grad's rank, indices' types and rank, weight's, then offset2bag's types, its type against indices',
    its rank (fuzz seed 66: a float offset2bag failed in tpu's index_select)."""
    if mode != 0:
        raise RuntimeError("embedding_bag_backward: per_sample_weights only supported for mode='sum'")
    _assert(grad.ndim == 2, "grad.dim() == 2")
    _index_types(indices, "indices")
    _assert(indices.ndim == 1, "indices.dim() == 1")
    _assert(weight.ndim == 2, "weight.dim() == 2")
    if weight.shape[1] != grad.shape[1]:
        raise RuntimeError("weight.sizes()[1] == embedding_features INTERNAL ASSERT FAILED (embedding_bag_backward: "
                           "per_sample_weights)")
    if offset2bag is None:
        return
    _index_types(offset2bag, "offset2bag")
    if offset2bag.dtype != indices.dtype:  # read as indices' index type
        raise RuntimeError(f"expected scalar type {aten_type_name(indices.dtype)} but found "
                           f"{aten_type_name(offset2bag.dtype)}")
    _assert(offset2bag.ndim == 1, "offset2bag.dim() == 1")


def _assert(ok: bool, what: str) -> None:
    if not ok:
        raise RuntimeError(f"{what} INTERNAL ASSERT FAILED (embedding_bag_backward: per_sample_weights)")


def _index_types(t: Any, name: str) -> None:  # checkScalarTypes("embedding_bag", {t, name, 1}, {kLong, kInt})
    from torchtpu.ops.arg_checks import legacy_type_name

    if t.dtype not in (torch.int64, torch.int32):
        raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following scalar types: "
                           f"Long, Int; but got {legacy_type_name(t.dtype)} instead (while checking arguments for "
                           "embedding_bag)")


def _sigmoid_result(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype.is_floating_point or dtype.is_complex else torch.get_default_dtype()


def _bound(op: Any, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    bound = dict(zip([a.name for a in op._schema.arguments], args))
    bound.update(kwargs)
    return bound


def _check_bce_backward(b: dict[str, Any]) -> None:
    out = b["grad_input"] if b.get("grad_input") is not None else b["self"]
    grad_input = out.dtype
    broadcast([[s for s in b[k].shape if s != 1] for k in ("grad_output", "self", "target")])  # squeezed
    same_dtype((grad_input,), (b["grad_output"].dtype, b["self"].dtype, b["target"].dtype))
    floating_kernel("binary_cross_entropy_backward", grad_input)
    weight = b.get("weight")
    if weight is not None:  # grad_input.mul_(weight): the iterator filled a squeezed view, grad_input kept its shape
        inplace_shape(out.shape, weight.shape)
        result = result_type([out, weight])
        if result is not None and not torch.can_cast(result, grad_input):
            raise RuntimeError(f"result type {aten_type_name(result)} can't be cast to the desired output type "
                               f"{aten_type_name(grad_input)}")


def check_log_sigmoid_backward(b: dict[str, Any]) -> None:
    grad_input = b["grad_input"].dtype if b.get("grad_input") is not None else b["grad_output"].dtype
    broadcast((b["self"].shape, b["buffer"].shape, b["grad_output"].shape))
    same_dtype((grad_input,), (b["self"].dtype, b["buffer"].dtype, b["grad_output"].dtype))
    floating_kernel("log_sigmoid_backward_cpu", grad_input)


def _check_glu_backward(b: dict[str, Any]) -> None:
    x = b["self"]
    if x.ndim == 0:  # glu_backward_cpu_out's own checks first
        raise RuntimeError("glu does not support 0-dimensional tensors")
    n = x.ndim
    if not -n <= b["dim"] < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {b['dim']})")
    dim = b["dim"] % n
    if x.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size {x.shape[dim]}")
    grad_input = b["grad_input"].dtype if b.get("grad_input") is not None else x.dtype
    result = _sigmoid_result(x.dtype)
    if not torch.can_cast(result, grad_input):
        raise RuntimeError(f"result type {aten_type_name(result)} can't be cast to the desired output type "
                           f"{aten_type_name(grad_input)}")
    half = [s // 2 if i == dim else s for i, s in enumerate(x.shape)]
    broadcast((half, half, b["grad_output"].shape))
    same_dtype((grad_input,), (grad_input, x.dtype, b["grad_output"].dtype))
    floating_kernel("glu_backward_cpu", grad_input)


_CHECKS: dict[Any, Callable[[dict[str, Any]], None]] = {
    aten.binary_cross_entropy_backward: _check_bce_backward,
    aten.log_sigmoid_backward: check_log_sigmoid_backward,
    aten.glu_backward: _check_glu_backward,
}
WRAPPED = frozenset(_CHECKS)


def wrap(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (op's upstream decomposition) behind CPU's operand checks for op."""
    check = _CHECKS[op.overloadpacket]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        check(_bound(op, args, kwargs))
        return fn(*args, **kwargs)

    return kernel
