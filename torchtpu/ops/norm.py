"""Lowerings of batch normalization (training and eval, with running statistics) and its backward; group,
instance and RMS norm reach these or the accepted decompositions.

The training forms update `running_mean` / `running_var` in place: their kernels run the functional lowering
(`_native_batch_norm_legit_functional`, which returns the new running statistics) and copy those back.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchtpu.execution import eager, out_layout
from torchtpu.ops import norm_checks, weight_norm_checks
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _wide(x: Sym) -> Sym:
    return P.convert(x, torch.float64 if x.dtype == torch.float64 else torch.float32)


def _channel(v: Sym, x: Sym) -> Sym:
    """A per-channel (C,) vector broadcast against x (N, C, *)."""
    return P.broadcast_to(P.reshape(v, (1, -1) + (1,) * (x.ndim - 2)), x.shape)


def _dims(x: Sym) -> tuple[int, ...]:
    return (0, *range(2, x.ndim))


def _stats_dtype(x: Sym, *params: Sym | None) -> torch.dtype:
    for p in params:
        if p is not None:
            return p.dtype
    return x.dtype


def _forward(input: Sym, weight: Sym | None, bias: Sym | None, running_mean: Sym | None,  # noqa: A002
             running_var: Sym | None, training: bool, momentum: float, eps: float
             ) -> tuple[Sym, Sym, Sym, Sym | None, Sym | None]:
    x = _wide(input)
    dims = _dims(x)
    count = 1
    for d in dims:
        count *= x.shape[d]
    stats = _stats_dtype(input, running_mean, weight)
    if not training and not input.numel():  # CPU returns before reading the vectors (of any rank or size: seed 53)
        return P.full(0, input.shape, input.dtype), P.full(0, (0,), stats), P.full(0, (0,), stats), None, None
    new_rm = new_rv = None
    if training:
        mean = P.reduce(x, "sum", dims) / float(max(count, 1))
        centered = x - _channel(mean, x)
        var = P.reduce(centered * centered, "sum", dims) / float(max(count, 1))
        invstd = P.emit1("rsqrt", [var + eps])
        if running_mean is not None:
            new_rm = P.convert(_wide(running_mean) * (1.0 - momentum) + mean * momentum, running_mean.dtype)
        if running_var is not None:
            # ATen's var_sum / (n - 1): one value per channel is 0 / 0, NaN (CPU's running_var then is NaN)
            unbiased = var * (float(count) / float(count - 1)) if count > 1 else var * math.nan
            new_rv = P.convert(_wide(running_var) * (1.0 - momentum) + unbiased * momentum, running_var.dtype)
        save_mean, save_invstd = P.convert(mean, stats), P.convert(invstd, stats)
    else:
        mean, invstd = _wide(running_mean), P.emit1("rsqrt", [_wide(running_var) + eps])
        centered = x - _channel(mean, x)
        save_mean = save_invstd = P.full(0, (0,), stats)  # ATen returns empty statistics in eval mode
    y = centered * _channel(invstd, x)
    if weight is not None:
        y = y * _channel(_wide(weight), x)
    if bias is not None:
        y = y + _channel(_wide(bias), x)
    return P.convert(y, input.dtype), save_mean, save_invstd, new_rm, new_rv


@lower(aten._native_batch_norm_legit_functional.default, prepare=norm_checks.strided)
def batch_norm_functional(input: Sym, weight: Sym | None, bias: Sym | None, running_mean: Sym,  # noqa: A002
                          running_var: Sym, training: bool, momentum: float, eps: float, *,
                          _strided: bool = False) -> tuple[Sym, ...]:
    norm_checks.check_forward("_native_batch_norm_legit_functional", input, weight, bias, running_mean,
                              running_var, training, _strided)
    y, m, s, rm, rv = _forward(input, weight, bias, running_mean, running_var, training, momentum, eps)
    return y, m, s, rm if rm is not None else running_mean, rv if rv is not None else running_var


@lower(aten._native_batch_norm_legit_no_training.default, prepare=norm_checks.strided)
def batch_norm_no_training(input: Sym, weight: Sym | None, bias: Sym | None, running_mean: Sym,  # noqa: A002
                           running_var: Sym, momentum: float, eps: float, *,
                           _strided: bool = False) -> tuple[Sym, Sym, Sym]:
    norm_checks.check_forward("_native_batch_norm_legit_no_training", input, weight, bias, running_mean,
                              running_var, False, _strided)
    return _forward(input, weight, bias, running_mean, running_var, False, momentum, eps)[:3]


@lower(aten._native_batch_norm_legit.no_stats, prepare=norm_checks.strided)
def batch_norm_no_stats(input: Sym, weight: Sym | None, bias: Sym | None, training: bool,  # noqa: A002
                        momentum: float, eps: float, *, _strided: bool = False) -> tuple[Sym, Sym, Sym]:
    norm_checks.check_forward("_native_batch_norm_legit", input, weight, bias, None, None, training, _strided)
    return _forward(input, weight, bias, None, None, True, momentum, eps)[:3]


@lower(aten._batch_norm_no_update.default, prepare=norm_checks.strided)
def batch_norm_no_update(input: Sym, weight: Sym | None, bias: Sym | None, running_mean: Sym | None,  # noqa: A002
                         running_var: Sym | None, momentum: float, eps: float, *,
                         _strided: bool = False) -> tuple[Sym, Sym, Sym, Sym]:
    training = running_mean is None or running_var is None
    norm_checks.check_forward("_batch_norm_no_update", input, weight, bias, running_mean, running_var, training,
                              _strided)
    y, m, s, _, _ = _forward(input, weight, bias, running_mean, running_var, training, momentum, eps)
    return y, m, s, P.full(0, (0,), torch.uint8)


def _stats_kernel(name: str, training_arg: bool, reserve: bool) -> Any:
    """Kernel of a batch norm that may update running statistics in place."""
    op = name.removeprefix("aten::")

    def kernel(input: torch.Tensor, weight: Any, bias: Any, running_mean: Any, running_var: Any,  # noqa: A002
               *rest: Any) -> Any:
        training, momentum, eps = rest if training_arg else (True, *rest)
        norm_checks.check_forward(op, input, weight, bias, running_mean, running_var, training, any(
            isinstance(t, torch.Tensor) and not t.is_contiguous() for t in (input, weight, bias, running_mean,
                                                                            running_var)))
        if not training or running_mean is None:
            outs = eager.run(name, _forward_3, (input, weight, bias, running_mean, running_var), {
                "training": training or running_mean is None, "momentum": momentum, "eps": eps},
                meta=out_layout.suggested_like(input, 3))
        else:
            *outs, new_rm, new_rv = eager.run(name, batch_norm_functional,
                                              (input, weight, bias, running_mean, running_var, True, momentum,
                                               eps), {}, meta=out_layout.suggested_like(input, 5))
            running_mean.copy_(new_rm)
            running_var.copy_(new_rv)
        outs = tuple(outs)
        if reserve:
            outs = outs + (torch.empty(0, dtype=torch.uint8, device=input.device),)
        return outs

    return kernel


def _forward_3(input: Sym, weight: Sym | None, bias: Sym | None, running_mean: Sym | None,  # noqa: A002
               running_var: Sym | None, *, training: bool, momentum: float, eps: float) -> tuple[Sym, Sym, Sym]:
    return _forward(input, weight, bias, running_mean, running_var, training, momentum, eps)[:3]


def _backward(grad_out: Sym, input: Sym, weight: Sym | None, running_mean: Sym | None,  # noqa: A002
              running_var: Sym | None, save_mean: Sym | None, save_invstd: Sym | None, train: bool, eps: float,
              output_mask: list[bool]) -> tuple[Sym | None, Sym | None, Sym | None]:
    x, g = _wide(input), _wide(grad_out)
    dims = _dims(x)
    count = 1
    for d in dims:
        count *= x.shape[d]
    if train:
        mean, invstd = _wide(save_mean), _wide(save_invstd)
    else:
        mean, invstd = _wide(running_mean), P.emit1("rsqrt", [_wide(running_var) + eps])
    xhat = (x - _channel(mean, x)) * _channel(invstd, x)
    w = _channel(_wide(weight), x) if weight is not None else None
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        gw = g * w if w is not None else g
        if train:
            mean_g = P.reduce(gw, "sum", dims) / float(max(count, 1))
            mean_gx = P.reduce(gw * xhat, "sum", dims) / float(max(count, 1))
            dx = (gw - _channel(mean_g, x) - xhat * _channel(mean_gx, x)) * _channel(invstd, x)
        else:
            dx = gw * _channel(invstd, x)
        grad_input = P.convert(dx, input.dtype)
    stats = weight.dtype if weight is not None else input.dtype
    if output_mask[1]:
        grad_weight = P.convert(P.reduce(g * xhat, "sum", dims), stats)
    if output_mask[2]:
        grad_bias = P.convert(P.reduce(g, "sum", dims), stats)
    return grad_input, grad_weight, grad_bias


@lower(aten.native_batch_norm_backward.default)
def native_batch_norm_backward(grad_out: Sym, input: Sym, weight: Sym | None, running_mean: Sym | None,  # noqa: A002
                               running_var: Sym | None, save_mean: Sym | None, save_invstd: Sym | None,
                               train: bool, eps: float, output_mask: list[bool]) -> tuple[Sym | None, ...]:
    norm_checks.check_backward("native_batch_norm_backward", grad_out, input, weight, running_mean, running_var,
                               save_mean, save_invstd, train)
    return _backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps,
                     output_mask)


@lower(aten.batch_norm_backward.default)
def batch_norm_backward(grad_out: Sym, input: Sym, weight: Sym, running_mean: Sym | None,  # noqa: A002
                        running_var: Sym | None, save_mean: Sym | None, save_var: Sym | None, update: bool,
                        eps: float, output_mask: list[bool], reserve: Sym) -> tuple[Sym | None, ...]:
    train = update or running_mean is None
    norm_checks.check_backward("batch_norm_backward", grad_out, input, weight, running_mean, running_var, save_mean,
                               save_var, train)
    return _backward(grad_out, input, weight, running_mean, running_var, save_mean, save_var, train, eps,
                     output_mask)


def register(kernel: Any) -> None:
    kernel(aten.native_batch_norm.default, _stats_kernel("aten::native_batch_norm", True, False))
    kernel(aten._native_batch_norm_legit.default, _stats_kernel("aten::_native_batch_norm_legit", True, False))
    kernel(aten._batch_norm_with_update.default, _stats_kernel("aten::_batch_norm_with_update", False, True))


# --- weight norm (torch.nn.utils.weight_norm's fused kernel) -------------------------------------------------------

def _other_dims(v: Sym, dim: int) -> tuple[int, ...]:
    if dim == -1:  # the norm over every element
        return tuple(range(v.ndim))
    dim = P.canon_dim(dim, v.ndim)
    return tuple(i for i in range(v.ndim) if i != dim)


def _check_one_per_slice(name: str, t: Sym, slices: int, dim: int) -> None:
    """CPU's fused kernels read g and the norms by slice index unchecked (fewer elements: a read outside the buffer,
    a segfault for none); refused unless there is one per slice of v along `dim`, as weight_norm makes them."""
    if t.numel() != slices:
        raise RuntimeError(f"_weight_norm_interface: {name} must have one element per slice of v along dim {dim} "
                           f"({slices}), but got {name} of shape {list(t.shape)}")


@lower(aten._weight_norm_interface.default)
def weight_norm_interface(v: Sym, g: Sym, dim: int = 0) -> tuple[Sym, Sym]:
    """w = v * g / ||v|| (the norm over every dim but `dim`); the norms are kept (shape of g) in float32 for
    reduced-precision inputs, as on CPU."""
    weight_norm_checks.check_forward(v, g, dim)
    vw = _wide(v)
    dims = _other_dims(v, dim)
    norms = P.emit1("sqrt", [P.reduce(vw * vw, "sum", dims, keepdim=True)])
    _check_one_per_slice("g", g, norms.numel(), dim)
    gk = P.reshape(_wide(g), norms.shape)
    w = P.convert(vw * P.broadcast_to(gk / norms, v.shape), v.dtype)
    return w, P.reshape(norms, g.shape)


@lower(aten._weight_norm_interface_backward.default)
def weight_norm_interface_backward(grad_w: Sym, saved_v: Sym, saved_g: Sym, saved_norms: Sym, dim: int
                                   ) -> tuple[Sym, Sym]:
    weight_norm_checks.check_backward(grad_w, saved_v, saved_g, saved_norms, dim)
    v, gw = _wide(saved_v), _wide(grad_w)
    dims = _other_dims(saved_v, dim)
    kept = tuple(1 if i in dims else d for i, d in enumerate(v.shape))
    for name, t in (("saved_g", saved_g), ("saved_norms", saved_norms)):
        _check_one_per_slice(name, t, math.prod(kept), dim)
    norms = P.reshape(_wide(saved_norms), kept)
    g = P.reshape(_wide(saved_g), kept)
    sums = P.reduce(gw * v, "sum", dims, keepdim=True)
    b = lambda x: P.broadcast_to(x, v.shape)  # noqa: E731
    # CPU's kernel (WeightNormKernel.cpp): grad_g = sum / norm, a = g / norm, b = a * grad_g / norm, grad_v =
    # a * grad_w - b * v: the same value, but the order sets which non-finite comes out (fuzz seed 54: a norm of
    # -0.0 and a grad of -1e30: CPU -inf + inf = NaN, the factored form gave inf)
    grad_g = sums / norms
    a = g / norms
    grad_v = b(a) * gw - b(a * grad_g / norms) * v
    grad_g = P.reshape(grad_g, saved_g.shape)
    return P.convert(grad_v, saved_v.dtype), P.convert(grad_g, saved_g.dtype)
