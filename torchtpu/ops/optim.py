"""Lowerings of the fused optimizer kernels (`_fused_adam_`, `_fused_adamw_`, `_fused_sgd_`): each call is one
Program that updates every parameter, gradient-moment and momentum buffer in place.

The per-tensor and foreach optimizer variants need nothing here: their ops (add_, lerp_, addcdiv_, the
`_foreach_*` composites) reach the element-wise lowerings.
"""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.execution import eager
from torchtpu.ops import prims as P
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _adam_step(param: Sym, grad: Sym, exp_avg: Sym, exp_avg_sq: Sym, max_sq: Sym | None, step: Sym, *,
               lr: float, beta1: float, beta2: float, weight_decay: float, eps: float, maximize: bool,
               decoupled: bool) -> tuple[Sym, ...]:
    f32 = torch.float32
    p, g = P.convert(param, f32), P.convert(grad, f32)
    m, v = P.convert(exp_avg, f32), P.convert(exp_avg_sq, f32)
    if maximize:
        g = -g
    if weight_decay:
        if decoupled:
            p = p * (1.0 - lr * weight_decay)
        else:
            g = g + p * weight_decay
    m = m + (g - m) * (1.0 - beta1)
    v = v * beta2 + g * g * (1.0 - beta2)
    s = P.broadcast_to(P.reshape(P.convert(step, f32), ()), p.shape)
    bc1 = 1.0 - P.binary("power", P.full(beta1, p.shape, f32), s)
    bc2 = 1.0 - P.binary("power", P.full(beta2, p.shape, f32), s)
    v_used = v
    new_max = None
    if max_sq is not None:
        new_max = P.emit1("maximum", [P.convert(max_sq, f32), v])
        v_used = new_max
    denom = P.emit1("sqrt", [v_used]) / P.emit1("sqrt", [bc2]) + eps
    p = p - (m / denom) * (lr / 1.0) / bc1
    outs = (P.convert(p, param.dtype), P.convert(m, exp_avg.dtype), P.convert(v, exp_avg_sq.dtype))
    if new_max is not None:
        outs = outs + (P.convert(new_max, max_sq.dtype),)
    return outs


def _fused_adam(decoupled: bool) -> Any:
    name = "aten::_fused_adamw_" if decoupled else "aten::_fused_adam_"

    def lowering(params: list[Sym], grads: list[Sym], exp_avgs: list[Sym], exp_avg_sqs: list[Sym],
                 max_exp_avg_sqs: list[Sym], state_steps: list[Sym], **hp: Any) -> list[Sym]:
        outs: list[Sym] = []
        amsgrad = hp["amsgrad"]
        for i, p in enumerate(params):
            outs.extend(_adam_step(p, grads[i], exp_avgs[i], exp_avg_sqs[i],
                                   max_exp_avg_sqs[i] if amsgrad else None, state_steps[i], lr=hp["lr"],
                                   beta1=hp["beta1"], beta2=hp["beta2"], weight_decay=hp["weight_decay"],
                                   eps=hp["eps"], maximize=hp["maximize"], decoupled=decoupled))
        return outs

    def kernel(params: list[torch.Tensor], grads: list[torch.Tensor], exp_avgs: list[torch.Tensor],
               exp_avg_sqs: list[torch.Tensor], max_exp_avg_sqs: list[torch.Tensor],
               state_steps: list[torch.Tensor], *, lr: float, beta1: float, beta2: float, weight_decay: float,
               eps: float, amsgrad: bool, maximize: bool, grad_scale: Any = None, found_inf: Any = None) -> None:
        if grad_scale is not None or found_inf is not None:
            raise NotImplementedError(f"{name}: grad_scale/found_inf (AMP GradScaler) are not supported on tpu")
        if isinstance(lr, torch.Tensor):
            lr = lr.item()
        targets: list[torch.Tensor] = []
        for i in range(len(params)):
            targets += [params[i], exp_avgs[i], exp_avg_sqs[i]] + ([max_exp_avg_sqs[i]] if amsgrad else [])
        hp = {"lr": lr, "beta1": beta1, "beta2": beta2, "weight_decay": weight_decay, "eps": eps,
              "amsgrad": amsgrad, "maximize": maximize}
        eager.run(name, lowering, (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps), hp,
                  write_into=targets, static=((), frozenset({"weight_decay"}), frozenset()))  # lr, betas, eps: inputs

    return kernel


def _sgd_lowering(params: list[Sym], grads: list[Sym], bufs: list[Sym], **hp: Any) -> list[Sym]:
    outs: list[Sym] = []
    for i, p in enumerate(params):
        g = grads[i]
        if hp["maximize"]:
            g = -g
        if hp["weight_decay"]:
            g = g + p * hp["weight_decay"]
        if hp["momentum"]:
            if hp["is_first_step"]:
                b = g
            else:
                b = bufs[i] * hp["momentum"] + g * (1.0 - hp["dampening"])
            g = g + b * hp["momentum"] if hp["nesterov"] else b
            outs.append(P.convert(b, bufs[i].dtype))
        outs.insert(len(outs) - (1 if hp["momentum"] else 0), P.convert(p - g * hp["lr"], p.dtype))
    return outs


def fused_sgd(params: list[torch.Tensor], grads: list[torch.Tensor], momentum_buffer_list: list[torch.Tensor], *,
              weight_decay: float, momentum: float, lr: float, dampening: float, nesterov: bool, maximize: bool,
              is_first_step: bool, grad_scale: Any = None, found_inf: Any = None) -> None:
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError("_fused_sgd_: grad_scale/found_inf (AMP GradScaler) are not supported on tpu")
    if isinstance(lr, torch.Tensor):
        lr = lr.item()
    targets: list[torch.Tensor] = []
    for i in range(len(params)):
        targets += [params[i]] + ([momentum_buffer_list[i]] if momentum else [])
    hp = {"weight_decay": weight_decay, "momentum": momentum, "lr": lr, "dampening": dampening,
          "nesterov": nesterov, "maximize": maximize, "is_first_step": is_first_step}
    eager.run("aten::_fused_sgd_", _sgd_lowering, (params, grads, momentum_buffer_list if momentum else []), hp,
              write_into=targets,
              static=((), frozenset({"weight_decay", "momentum"}), frozenset()))  # lr, dampening: inputs


def register(kernel: Any) -> None:
    kernel(aten._fused_adam_.default, _fused_adam(False))
    kernel(aten._fused_adamw_.default, _fused_adam(True))
    kernel(aten._fused_sgd_.default, fused_sgd)
