"""The fused optimizer steps' per-parameter layout check (issue 17, fuzz seed 33): CPU's kernels
(FusedSGDKernel.cpp, FusedAdamKernel.cpp) read and write `param.numel()` elements at each grad's and state's
data_ptr with no shape check. A grad or state tensor of another shape than its param is read past its end or
written past it (a momentum buffer float32[3] for a param float32[2, 4] corrupted CPU's heap), one of another layout
in memory order; tpu broadcast them and gave a result. CUDA's fused kernels refuse both
(check_fast_path_restrictions); tpu now refuses them too, naming the tensors, where CPU's list-length and dtype
checks pass (those come first: ops/cpu_raise_checks2.py and the kernel's own dtype refusal).

Merged with the other `BOUND_CHECKS` by ops/arg_order_checks.py (eager kernels and a compiled graph's node, where
only shapes are known: the layout part is checked on real tensors only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchtpu.dtypes import FLOATS
from torchtpu.execution import out_layout

Bound = dict[str, Any]



def _strides(t: torch.Tensor) -> tuple[int, ...]:
    """The strides of the dims with more than one element (a size-1 dim's stride is never stepped over)."""
    return tuple(int(st) for st, sz in zip(t.stride(), t.shape, strict=True) if sz != 1)


def _same_layout(param: Any, other: Any) -> bool:
    if tuple(param.shape) != tuple(other.shape):
        return False
    if not isinstance(param, torch.Tensor) or not isinstance(other, torch.Tensor):
        return True  # a compiled graph's node: shapes only
    return out_layout.dense(param.shape, param.stride()) and _strides(param) == _strides(other)


def _layout_check(read: Callable[[Bound], tuple[str, ...]]) -> Callable[[Bound], None]:
    """For each param in order: where its group's dtypes are ones the kernel takes (else its dtype refusal comes
    first) and it has elements, every list `read(a)` names holds a tensor of param's shape and layout."""
    def check(a: Bound) -> None:
        if a.get("found_inf") is not None:
            return  # the kernel may return before reading any tensor
        params = a.get("self")
        lists = read(a)
        if not isinstance(params, list | tuple) or any(not isinstance(a.get(n), list | tuple)
                                                       or len(a[n]) != len(params) for n in lists):
            return  # the list-length checks raise first
        for i, p in enumerate(params):
            group = [a[n][i] for n in lists]
            if p.dtype not in FLOATS or any(t.dtype != p.dtype for t in group):
                return  # the kernel's dtype dispatch or data_ptr<scalar_t> refuses this param first
            if not any(int(s) == 0 for s in p.shape) and not all(_same_layout(p, t) for t in group):
                shapes = ", ".join(f"{n}[{i}] {list(map(int, t.shape))}" for n, t in zip(lists, group, strict=True))
                raise RuntimeError(f"params, {', '.join(lists)} must have the same shape and layout: params[{i}] "
                                   f"{list(map(int, p.shape))}, {shapes} (CPU's fused kernel reads them as "
                                   f"params[{i}]'s memory unchecked; tpu refuses it)")
    return check


def _sgd_lists(a: Bound) -> tuple[str, ...]:
    return ("grads", "momentum_buffer_list") if a.get("momentum", 0.0) != 0.0 else ("grads",)


def _adam_lists(a: Bound) -> tuple[str, ...]:
    return ("grads", "exp_avgs", "exp_avg_sqs") + (("max_exp_avg_sqs",) if a.get("amsgrad") else ())


_SGD = _layout_check(_sgd_lists)
_ADAM = _layout_check(_adam_lists)

BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {
    "_fused_sgd_": _SGD, "_fused_sgd": _SGD, "_fused_adam_": _ADAM, "_fused_adamw_": _ADAM, "_fused_adam": _ADAM,
    "_fused_adamw": _ADAM,
}
