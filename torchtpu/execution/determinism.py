"""ATen's nondeterminism alerts (Context::alertNotDeterministic) for the eager calls of the ops whose CPU kernel
raises them too: under `torch.use_deterministic_algorithms(True)` such a call raises CPU's RuntimeError ("... does
not have a deterministic implementation, but you set 'torch.use_deterministic_algorithms(True)' ..."), or warns
with `warn_only=True`. The C++ launch cache (csrc/fast_launch.cpp) serves nothing while deterministic algorithms
are on, so every call reaches its Python kernel and this check.

Only the alerts CPU raises are raised (the ones ATen raises on CUDA alone, for its atomic-add kernels, are not:
PyTorch's tests expect them on CUDA only, and tpu's programs are deterministic)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._prims_common import alert_not_deterministic


def _put_not_accumulating(args: tuple, kwargs: dict[str, Any]) -> bool:
    accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
    return not accumulate


# base op name -> (the name ATen's alert gives, whether this call alerts)
_ALERTS: dict[str, tuple[str, Callable[[tuple, dict[str, Any]], bool]]] = {
    "put": ("put_", _put_not_accumulating),  # duplicate indices: which write lands is undefined
    "max_unpool2d": ("max_unpooling2d_forward_out", lambda args, kwargs: True),  # (max_unpool1d too)
    "max_unpool3d": ("max_unpooling3d_forward_out", lambda args, kwargs: True),
}


def _base(op_name: str) -> str:
    """"put" for "aten.put_.default", "aten.put.out", "aten::put_"."""
    name = op_name.split("::")[-1]
    if name.startswith("aten."):
        name = name.split(".")[1]
    return name.split(".")[0].rstrip("_")


_RULES: dict[str, tuple[str, Callable[[tuple, dict[str, Any]], bool]] | None] = {}


def alert(op_name: str, args: tuple, kwargs: dict[str, Any]) -> None:
    """ATen's alert for `op_name` called on `args`/`kwargs`, if it has one and deterministic algorithms are on."""
    rule = _RULES.get(op_name, False)
    if rule is False:
        rule = _RULES[op_name] = _ALERTS.get(_base(op_name))
    if rule is not None and torch.are_deterministic_algorithms_enabled() and rule[1](args, kwargs):
        alert_not_deterministic(rule[0])
