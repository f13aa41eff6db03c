"""Lowerings of neural-network ops: softmax family, layer norm, embedding, NLL / MSE losses, dropout, and their
backward ops."""

from __future__ import annotations

import math

import torch

from torchtpu.ops import arg_checks, norm_checks
from torchtpu.ops import prims as P
from torchtpu.ops.elementwise import promoted
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym, aten_type_name

aten = torch.ops.aten


def _f32(x: Sym) -> Sym:
    """Widens to the VPU's float32 (float64 stays float64)."""
    return P.convert(x, torch.float64 if x.dtype == torch.float64 else torch.float32)


def _check_half_to_float(self: Sym, dim: int, half_to_float: bool) -> None:
    """_softmax / _log_softmax with half_to_float: CPU's kernel refuses it for every input ("softmax with half to
    float conversion is not supported on CPU"); CUDA's converts a Half input (host_softmax: "conversion is supported
    for Half type only"). tpu does as CUDA: a Half input gives a float32 result, any other input is refused with
    CPU's words (the refusal both devices make for it), after the meta's dim check (a 0-d input's too)."""
    P.canon_dim(dim, self.ndim)
    if half_to_float and self.dtype != torch.float16:
        raise RuntimeError(f"softmax with half to float conversion is not supported on CPU (on tpu, as on CUDA, "
                           f"conversion is supported for Half type only; got {aten_type_name(self.dtype)})")


@lower(aten._softmax.default)
def softmax(self: Sym, dim: int, half_to_float: bool = False) -> Sym:
    d = P.canon_dims(dim, self.ndim)
    _check_half_to_float(self, dim, half_to_float)
    x = _f32(self)
    if not d:
        return P.convert(P.emit1("exponential", [x - x]), self.dtype)
    return P.convert(softmax_f32(x, d), torch.float32 if half_to_float else self.dtype)


def softmax_f32(x: Sym, dims: tuple[int, ...], zero_masked_rows: bool = False) -> Sym:
    """exp(x - max) / sum over `dims` of a widened `x` (the steps of `_softmax` and of compiled `_safe_softmax`,
    ops/safe_softmax.py). With `zero_masked_rows`, a row whose maximum is -inf (every element -inf) is shifted by
    0 instead of its maximum and divided by 1 instead of its sum: +0 where the plain softmax gives NaN; every other
    row is bit-identical to the plain softmax. Empty `dims` (a 0-d input) reduce nothing."""
    m = P.reduce(x, "max", dims, True) if dims else x
    masked = None
    if zero_masked_rows:
        masked = P.compare("EQ", m, float("-inf"))
        m = P.where(masked, P.const(0, x.dtype), m)
    e = P.emit1("exponential", [x - P.broadcast_to(m, x.shape)])
    s = P.reduce(e, "sum", dims, True) if dims else e
    if masked is not None:
        s = P.where(masked, P.const(1, x.dtype), s)
    return e / P.broadcast_to(s, x.shape)


@lower(aten._log_softmax.default)
def log_softmax(self: Sym, dim: int, half_to_float: bool = False) -> Sym:
    d = P.canon_dims(dim, self.ndim)
    _check_half_to_float(self, dim, half_to_float)
    x = _f32(self)
    if not d:
        return P.convert(x - x, self.dtype)
    m = P.broadcast_to(P.reduce(x, "max", d, True), x.shape)
    shifted = x - m
    lse = P.emit1("log", [P.reduce(P.emit1("exponential", [shifted]), "sum", d, True)])
    return P.convert(shifted - P.broadcast_to(lse, x.shape), torch.float32 if half_to_float else self.dtype)


@lower(aten._softmax_backward_data.default)
def softmax_backward(grad_output: Sym, output: Sym, dim: int, input_dtype: torch.dtype) -> Sym:
    if tuple(grad_output.shape) != tuple(output.shape):  # ATen's checkSameSize, before the dim is wrapped
        raise RuntimeError(f"Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 "
                           f"'output'; but {list(grad_output.shape)} does not equal {list(output.shape)} (while "
                           "checking arguments for softmax_backward)")
    d = P.canon_dims(dim, output.ndim)
    g, y = _f32(grad_output), _f32(output)
    dot = P.broadcast_to(P.reduce(g * y, "sum", d, True), y.shape) if d else g * y
    return P.convert(y * (g - dot), _softmax_grad_dtype(grad_output, output, input_dtype))


@lower(aten._log_softmax_backward_data.default)
def log_softmax_backward(grad_output: Sym, output: Sym, dim: int, input_dtype: torch.dtype) -> Sym:
    d = P.canon_dims(dim, output.ndim)
    g, y = _f32(grad_output), _f32(output)
    total = P.broadcast_to(P.reduce(g, "sum", d, True), g.shape) if d else g
    return P.convert(g - P.emit1("exponential", [y]) * total, _softmax_grad_dtype(grad_output, output, input_dtype))


def _softmax_grad_dtype(grad_output: Sym, output: Sym, input_dtype: torch.dtype) -> torch.dtype:
    """The (log_)softmax backward meta functions' dtype: grad's, but Half for a float grad of a Half input
    (input_dtype decides only that; CPU's kernel then refuses the mix unless it has no elements, CUDA's runs it).
    CPU's kernel reads the output in grad's type and sizes: another dtype is refused in its words, another shape
    (undefined on CPU) too."""
    if tuple(output.shape) != tuple(grad_output.shape):  # CPU reads both by grad's sizes: past a smaller end
        raise RuntimeError(f"softmax backward: grad_output {list(grad_output.shape)} and output "
                           f"{list(output.shape)} must have the same shape")
    if output.dtype != grad_output.dtype:
        raise RuntimeError(f"expected scalar type {aten_type_name(grad_output.dtype)} but found "
                           f"{aten_type_name(output.dtype)}")
    half = grad_output.dtype == torch.float32 and input_dtype == torch.float16
    if half and math.prod(grad_output.shape):  # CPU's kernel reads its Half result as float (fuzz seed 33)
        raise RuntimeError("expected scalar type Float but found Half")
    return torch.float16 if half else grad_output.dtype


def _layer_norm_dims(x: Sym, normalized_shape: list[int], weight: Sym | None,
                     bias: Sym | None) -> tuple[int, ...]:
    """ATen's _check_layer_norm_inputs, in its order; the normalized dims of `x`."""
    if not normalized_shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           f"element, but got normalized_shape = {list(normalized_shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and list(t.shape) != list(normalized_shape):
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(normalized_shape)}")
    return _norm_dims(x, normalized_shape)


def _norm_dims(x: Sym, normalized_shape: list[int]) -> tuple[int, ...]:
    n = len(normalized_shape)
    if tuple(x.shape[x.ndim - n:]) != tuple(normalized_shape):
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{list(x.shape)}")
    return tuple(range(x.ndim - n, x.ndim))


@lower(aten.native_layer_norm.default)
def native_layer_norm(input: Sym, normalized_shape: list[int], weight: Sym | None, bias: Sym | None,  # noqa: A002
                      eps: float) -> tuple[Sym, Sym, Sym]:
    dims = _layer_norm_dims(input, normalized_shape, weight, bias)
    norm_checks.check_layer_norm(input, weight, bias)
    x = _f32(input)
    count = 1
    for d in dims:
        count *= x.shape[d]
    mean = P.reduce(x, "sum", dims, True) / float(max(count, 1))
    centered = x - P.broadcast_to(mean, x.shape)
    var = P.reduce(centered * centered, "sum", dims, True) / float(max(count, 1))
    rstd = P.emit1("rsqrt", [var + eps])
    y = centered * P.broadcast_to(rstd, x.shape)
    if weight is not None:
        y = y * P.broadcast_to(_f32(weight), x.shape)
    if bias is not None:
        y = y + P.broadcast_to(_f32(bias), x.shape)
    stats = norm_checks.layer_norm_stats_dtype(input, weight, bias)
    return P.convert(y, input.dtype), P.convert(mean, stats), P.convert(rstd, stats)


@lower(aten.native_layer_norm_backward.default)
def native_layer_norm_backward(grad_out: Sym, input: Sym, normalized_shape: list[int], mean: Sym,  # noqa: A002
                               rstd: Sym, weight: Sym | None, bias: Sym | None, output_mask: list[bool]
                               ) -> tuple[Sym | None, Sym | None, Sym | None]:
    dims = _layer_norm_dims(input, normalized_shape, weight, bias)
    norm_checks.check_layer_norm_backward(grad_out, input, mean, rstd, weight, bias)
    outer = tuple(range(input.ndim - len(dims)))
    x, g = _f32(input), _f32(grad_out)
    count = 1
    for d in dims:
        count *= x.shape[d]
    mean_b = P.broadcast_to(_f32(mean), x.shape)
    rstd_b = P.broadcast_to(_f32(rstd), x.shape)
    xhat = (x - mean_b) * rstd_b
    gw = g * P.broadcast_to(_f32(weight), x.shape) if weight is not None else g
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        a = P.broadcast_to(P.reduce(gw, "sum", dims, True), x.shape)
        b = P.broadcast_to(P.reduce(gw * xhat, "sum", dims, True), x.shape)
        grad_input = P.convert(rstd_b * (gw * float(count) - a - xhat * b) / float(count), input.dtype)
    if output_mask[1] and weight is not None:
        grad_weight = P.convert(P.reduce(g * xhat, "sum", outer), weight.dtype)
    if output_mask[2] and bias is not None:
        grad_bias = P.convert(P.reduce(g, "sum", outer), bias.dtype)
    return grad_input, grad_weight, grad_bias


@lower(aten.embedding.default)
def embedding(weight: Sym, indices: Sym, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Sym:
    arg_checks.check_embedding(weight, indices)
    n = weight.shape[0]
    flat = P.check_index(P.reshape(indices, (indices.numel(),)), n,
                         f"embedding(): index {{}} is out of range for a weight of {n} rows (index out of range "
                         "in self)")
    rows = P.emit1("index_select", [weight, flat], dimension=0)
    return P.reshape(rows, (*indices.shape, weight.shape[1]))


@lower(aten.embedding_dense_backward.default)
def embedding_dense_backward(grad_output: Sym, indices: Sym, num_weights: int, padding_idx: int,
                             scale_grad_by_freq: bool) -> Sym:
    arg_checks.check_embedding_backward(grad_output, indices, num_weights)
    dim = grad_output.shape[-1]
    # CPU's kernel writes row indices[i] unchecked (one out of range corrupts its heap): refused here as embedding is
    flat_idx = P.check_index(P.reshape(indices, (indices.numel(),)), num_weights,
                             f"embedding_dense_backward(): index {{}} is out of range for {num_weights} weight rows "
                             "(index out of range in self)")
    grads = P.reshape(grad_output, (indices.numel(), dim))
    grads = grads if grads.dtype.is_complex else _f32(grads)  # a complex grad keeps its imaginary part (seed 71)
    if padding_idx >= 0:
        keep = P.broadcast_to(P.reshape(P.compare("NE", flat_idx, padding_idx), (-1, 1)), grads.shape)
        grads = P.where(keep, grads, P.zeros_like(grads))
    if scale_grad_by_freq:
        count_dtype = grads.dtype.to_real() if grads.dtype.is_complex else grads.dtype
        ones = P.full(1.0, (indices.numel(),), count_dtype)
        counts = P.emit1("index_add", [P.full(0.0, (num_weights,), count_dtype), flat_idx, ones], dimension=0)
        per_row = P.emit1("index_select", [counts, flat_idx], dimension=0)
        if grad_output.dtype.is_floating_point or grad_output.dtype.is_complex:
            grads = grads / P.broadcast_to(P.reshape(per_row, (-1, 1)), grads.shape)
        else:  # ATen's scale 1/count taken in the integer type: a row seen once keeps its gradient, others get 0
            once = P.broadcast_to(P.reshape(P.compare("EQ", per_row, 1.0), (-1, 1)), grads.shape)
            grads = P.where(once, grads, P.zeros_like(grads))
    zeros = P.full(0.0, (num_weights, dim), grads.dtype)  # float64 grads accumulate in float64
    return P.convert(P.emit1("index_add", [zeros, flat_idx, grads], dimension=0), grad_output.dtype)


_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _nll_parts(self: Sym, target: Sym, weight: Sym | None, ignore_index: int) -> tuple[Sym, Sym, Sym]:
    """(picked -log p weighted, per-sample weight, class dim) for 1-D or 2-D (N, C) input."""
    cdim = 0 if self.ndim == 1 else 1
    nclass = self.shape[cdim]
    tgt = target if self.ndim > 1 else P.reshape(target, (1,))
    if tgt.dtype == torch.uint8:  # CPU's kernel reads a Byte target as int64 (ignore_index never matches it)
        tgt = P.convert(tgt, torch.int64)
    x = self if self.ndim > 1 else P.reshape(self, (1, nclass))
    tgt = P.check_index(tgt, nclass, "Target {} is out of bounds.", ignore=ignore_index)
    valid = P.compare("NE", tgt, ignore_index)
    safe = P.where(valid, tgt, P.zeros_like(tgt))
    picked = P.reshape(P.emit1("gather_axis", [x, P.reshape(safe, (-1, 1))], dimension=1), (-1,))
    w = P.emit1("index_select", [weight, safe], dimension=0) if weight is not None else \
        P.full(1.0, tgt.shape, self.dtype)
    w = P.where(valid, w, P.zeros_like(w))
    return -(picked * w), w, safe


def _check_nll_loss(self: Sym, target: Sym, weight: Sym | None) -> None:
    """ATen's nll_loss_forward checks, in its order (a 2-D input reads target.size(0): IndexError when 0-d)."""
    if self.ndim not in (1, 2):
        raise RuntimeError("input tensor should be 1D or 2D")
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dtype not in (torch.int64, torch.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {aten_type_name(target.dtype)}")
    if self.ndim == 1 and target.ndim == 1 and target.shape[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
    if self.ndim == 2:
        if target.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if self.shape[0] != target.shape[0]:
            raise RuntimeError(f"size mismatch (got input: {list(self.shape)}, target: {list(target.shape)})")
    classes = self.shape[-1]
    if weight is not None and (weight.ndim != 1 or weight.numel() != classes):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")
    if weight is not None and weight.dtype != self.dtype and self.dtype in (
            torch.float32, torch.float64, torch.float16, torch.bfloat16):  # the kernel's weight.data_ptr<scalar_t>
        raise RuntimeError(f"expected scalar type {aten_type_name(self.dtype)} but found "
                           f"{aten_type_name(weight.dtype)}")  # (fuzz seed 56: an int8 weight was cast)


@lower(aten.nll_loss_forward.default)
def nll_loss_forward(self: Sym, target: Sym, weight: Sym | None, reduction: int, ignore_index: int
                     ) -> tuple[Sym, Sym]:
    _check_nll_loss(self, target, weight)
    losses, w, _ = _nll_parts(self, target, weight, ignore_index)
    total_weight = P.reduce(w, "sum", (0,))
    if reduction == 0:
        out = losses if self.ndim > 1 else P.reshape(losses, ())
        return out, P.full(0.0, (), self.dtype)
    total = P.reduce(losses, "sum", (0,))
    if reduction == 1:
        total = total / total_weight
    return total, total_weight


@lower(aten.nll_loss_backward.default)
def nll_loss_backward(grad_output: Sym, self: Sym, target: Sym, weight: Sym | None, reduction: int,
                      ignore_index: int, total_weight: Sym) -> Sym:
    _, w, safe = _nll_parts(self, target, weight, ignore_index)
    n = w.shape[0]
    nclass = self.shape[-1]
    g = P.reshape(grad_output, (-1,)) if reduction == 0 else P.broadcast_to(P.reshape(grad_output, (1,)), (n,))
    if reduction == 1:
        g = g / P.broadcast_to(P.reshape(total_weight, (1,)), (n,))
    per = -(g * w)
    cols = P.iota((n, nclass), 1)
    hit = P.compare("EQ", cols, P.broadcast_to(P.reshape(safe, (n, 1)), (n, nclass)))
    grad = P.where(hit, P.broadcast_to(P.reshape(per, (n, 1)), (n, nclass)), P.full(0, (n, nclass), self.dtype))
    return P.reshape(grad, self.shape)


@lower(aten.mse_loss.default)
def mse_loss(self: Sym, target: Sym, reduction: int = 1) -> Sym:
    if reduction not in (0, 1, 2):  # CPU: an internal assert (RuntimeError); any other value gave a sum here
        raise RuntimeError(f"mse_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction} (CPU: "
                           "reduction == Reduction::Mean || reduction == Reduction::Sum INTERNAL ASSERT FAILED)")
    d = self - target
    sq = d * d
    if reduction == 0:
        return sq
    total = P.reduce(_f32(sq), "sum", tuple(range(sq.ndim)))
    if reduction == 1:  # the mean of no elements is NaN, as on CPU
        total = total / float(sq.numel()) if sq.numel() else P.full(math.nan, total.shape, total.dtype)
    return P.convert(total, sq.dtype)  # CPU: the mean/sum of the promoted loss


@lower(aten.mse_loss_backward.default)
def mse_loss_backward(grad_output: Sym, self: Sym, target: Sym, reduction: int, *,
                      dtype: torch.dtype | None = None) -> Sym:
    # ATen: one TensorIterator over (self, target, grad_output) in their common dtype, norm read as that dtype:
    # norm * (self - target) * grad_output, cast to grad_input's dtype: zeros_like(self)'s, or the grad_input=
    # tensor's (`dtype`, out_rules.RESULT_IN_OUT_DTYPE)
    norm = 2.0 / self.numel() if reduction == 1 and self.numel() else (math.inf if reduction == 1 else 2.0)
    (x, t, g), common = promoted(self, target, grad_output)
    out = dtype or self.dtype
    if not torch.can_cast(common, out):
        raise RuntimeError(f"result type {aten_type_name(common)} can't be cast to the desired output type "
                           f"{aten_type_name(out)}")
    return P.convert(P.convert(norm, common) * (x - t) * g, out)


@lower(aten.native_dropout.default, random=True, static=("p",))
def native_dropout(input: Sym, p: float, train: bool | None, *, rng: Sym) -> tuple[Sym, Sym]:  # noqa: A002
    training = train is not False  # ATen: train=None trains
    if input.numel() == 0:  # CPU's native_dropout returns before its mode: the mask is empty_like(input)
        return input, P.full(0, input.shape, input.dtype)
    if training and input.numel() and not 0.0 <= 1.0 - p <= 1.0:  # CPU's mask.bernoulli_(1 - p)
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1.0 - p:g}")
    if training and input.numel() and not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{aten_type_name(input.dtype)}")  # CPU's native_dropout: input * mask * scale, in place
    if not training or p == 0:
        return input, P.full(True, input.shape, torch.bool)
    if p >= 1:
        return P.zeros_like(input), P.full(False, input.shape, torch.bool)
    u = P.emit1("rng", [rng], shape=input.shape, dtype="float32", distribution="uniform")
    keep = P.compare("GE", u, p)
    scaled = P.convert(_f32(input) * (1.0 / (1.0 - p)), input.dtype)
    return P.where(keep, scaled, P.zeros_like(input)), keep


@lower(aten.native_dropout_backward.default)
def native_dropout_backward(grad_output: Sym, mask: Sym, scale: float) -> Sym:
    return grad_output * P.convert(mask, grad_output.dtype) * scale

