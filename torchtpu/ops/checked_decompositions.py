"""The one list of modules that put CPU's checks in front of an upstream decomposition (or correct its value where
CPU's kernel computes another: decomposition_values), and the loop that applies them. Each module has `WRAPPED`
(the op packets it guards) and `wrap(op, fn)`; eager's decomposition records (ops/decompositions.py) and compile's
decomposition table (compile/backend.py) both guard through `guarded`. The last module to wrap runs its checks
first. Eager leaves out arg_order_checks: the registry guards every eager record with it already. Every guarded
decomposition also refuses complex32 as CPU does where the op is none of its ComplexHalf ops."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import torch

from torchtpu import dtypes
from torchtpu.ops import (
    activation_checks,
    arg_order_checks,
    backward_checks,
    decomposition_values,
    loss_checks,
    norm_checks,
    out_checks,
)

EAGER: tuple[ModuleType, ...] = (decomposition_values, loss_checks, norm_checks, activation_checks, backward_checks,
                                 out_checks)
COMPILE: tuple[ModuleType, ...] = (decomposition_values, loss_checks, backward_checks, out_checks, activation_checks,
                                   arg_order_checks)


def guarded(op: Any, fn: Callable[..., Any], modules: Sequence[ModuleType]) -> Callable[..., Any]:
    """`fn` (op's upstream decomposition) behind the checks of each of `modules` that guards op's packet."""
    for checks in modules:
        if op.overloadpacket in checks.WRAPPED:
            fn = checks.wrap(op, fn)
    return _complex32_guarded(op, fn)


def _complex32_guarded(op: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, refusing a complex32 operand or result as CPU does where `op` is none of CPU's ComplexHalf ops (take,
    trace, cumsum, sigmoid_backward...): the decomposition's own ops would take it."""
    if op.overloadpacket.__name__ in dtypes.COMPLEX32_OPS:
        return fn

    def refuse(values: Any) -> None:
        for a in values:
            for t in (a if isinstance(a, list | tuple) else (a,)):
                if isinstance(t, torch.Tensor) and t.dtype == torch.complex32:
                    raise dtypes.complex32_refusal(str(op))

    def kernel(*args: Any, **kwargs: Any) -> Any:
        refuse((*args, *kwargs.values()))
        result = fn(*args, **kwargs)
        refuse(result if isinstance(result, list | tuple) else (result,))  # float16 with a complex Scalar
        return result

    return kernel

