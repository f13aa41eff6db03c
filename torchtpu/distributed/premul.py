"""`ReduceOp.PREMUL_SUM` for "tpu_dist": each rank's input times its factor, then summed (NCCL's semantics).

FSDP2 reduce-scatters gradients with `ReduceOp.PREMUL_SUM(1 / factor)` whenever a gradient divide factor other
than the group size is set (TorchTitan sets 1.0: it normalises the loss by the global token count), in fp32/bf16.
gloo has no such op, so the host side does what NCCL does: the factor (a Python scalar, rounded to the input's
dtype, or a 1-element tensor of the input's dtype; each rank may pass its own) multiplies every input element in
the input's dtype, and the products go through gloo's SUM. The simulated clock charges the sum collective plus
one elementwise pass over the input (read and write at the chip's HBM bandwidth).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_OPTION_FIELDS = ("rootRank", "rootTensor", "timeout", "asyncOp")


def factor_of(op: Any) -> float | torch.Tensor | None:
    """The factor of a `ReduceOp.PREMUL_SUM(factor)`; None for any other op."""
    if getattr(op, "op", op) != dist.ReduceOp.RedOpType.PREMUL_SUM:
        return None
    state = op.__getstate__() if hasattr(op, "__getstate__") else ()
    if not isinstance(state, tuple) or len(state) != 2:
        raise ValueError("tpu_dist: ReduceOp.PREMUL_SUM without a factor; make it with ReduceOp.PREMUL_SUM(factor)")
    return state[1]


def check(factor: float | torch.Tensor, tensors: Sequence[torch.Tensor]) -> str:
    """Why `factor` cannot premultiply `tensors` ("" when it can): NCCL's rules (floating dtypes only; a tensor
    factor has one element of the inputs' dtype)."""
    dtypes = {t.dtype for t in tensors}
    bad = sorted(str(d) for d in dtypes if d not in _FLOATS)
    if bad:
        return (f"ReduceOp.PREMUL_SUM takes floating tensors ({', '.join(map(str, _FLOATS))}), got {', '.join(bad)}")
    if isinstance(factor, torch.Tensor):
        if factor.numel() != 1:
            return f"ReduceOp.PREMUL_SUM's tensor factor must have one element, got shape {list(factor.shape)}"
        if dtypes and dtypes != {factor.dtype}:
            return (f"ReduceOp.PREMUL_SUM's tensor factor is {factor.dtype}, the inputs are "
                    f"{', '.join(sorted(map(str, dtypes)))}: give it the inputs' dtype")
    return ""


def _scalar(factor: float | torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The factor as a host 0-dim tensor of `dtype` (a Python factor rounded to it, as NCCL's T(double) does)."""
    if isinstance(factor, torch.Tensor):
        return factor.detach().to("cpu").reshape(()).to(dtype)
    return torch.tensor(factor, dtype=dtype)


def scaled(x: Any, factor: float | torch.Tensor, in_place: bool) -> Any:
    """`x` (a host tensor or nested lists of them) times `factor` in its dtype: in place, or as new tensors."""
    if isinstance(x, torch.Tensor):
        s = _scalar(factor, x.dtype)
        return x.mul_(s) if in_place else x.mul(s)
    if isinstance(x, list):
        return [scaled(t, factor, in_place) for t in x]
    return x


def sum_options(opts: Any) -> Any:
    """A copy of the options `opts` of a reduction with its op replaced by SUM."""
    new = type(opts)()
    for name in _OPTION_FIELDS:
        if hasattr(opts, name):
            setattr(new, name, getattr(opts, name))
    new.reduceOp = dist.ReduceOp.SUM
    return new


def scale_seconds(nbytes: float, chip: Any) -> float:
    """Simulated seconds of the premultiply: one elementwise pass (read + write of `nbytes`) at HBM bandwidth."""
    return 2.0 * nbytes / float(chip.hbm_bw)
