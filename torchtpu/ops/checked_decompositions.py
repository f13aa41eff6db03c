"""The one list of modules that put CPU's checks in front of an upstream decomposition (or correct its value where
CPU's kernel computes another: decomposition_values), and the loop that applies them. Each module has `WRAPPED`
(the op packets it guards) and `wrap(op, fn)`; eager's decomposition records (ops/decompositions.py) and compile's
decomposition table (compile/backend.py) both guard through `guarded`. The last module to wrap runs its checks
first. Eager leaves out arg_order_checks: the registry guards every eager record with it already."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

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
    return fn
