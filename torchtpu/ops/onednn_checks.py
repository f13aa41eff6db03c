"""Where CPU's gelu_backward takes its oneDNN path (mkldnn-enabled builds: approximate='none' and a contiguous
float32, bfloat16 or float16 `self` of more than one element) it hands grad_output, self and grad_input to ideep as
they are, without TensorIterator's broadcast or casts, and ideep refuses what it cannot view: a grad_output or
grad_input of a type it has no dense view for ("itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor
inputDouble"), then a grad_output of other sizes than self ("could not create a primitive descriptor for the reorder
primitive"). tpu refuses those calls alike (fuzz seed 14). Merged into ops/arg_order_checks.py's checks behind CPU's
TensorIterator checks; a compiled graph's node (Syms, no strides) is left to the fake-tensor pass, which has them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchtpu.ops.tracing import aten_type_name

Bound = dict[str, Any]

_MKLDNN = (torch.float32, torch.bfloat16, torch.float16)
_VIEWABLE = (*_MKLDNN, torch.int8, torch.float8_e4m3fn, torch.float8_e5m2)
_REORDER = ("could not create a primitive descriptor for the reorder primitive. Run workload with environment "
            "variable ONEDNN_VERBOSE=all to get additional diagnostic information.")


def _mkldnn_enabled() -> bool:
    return bool(torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled)


def _gelu_backward(a: Bound) -> None:
    grad, x, out = a.get("grad_output"), a.get("self"), a.get("grad_input")
    if a.get("approximate", "none") != "none" or not hasattr(x, "is_contiguous") or not hasattr(grad, "dtype"):
        return
    if x.dtype not in _MKLDNN or x.numel() <= 1 or not x.is_contiguous() or not _mkldnn_enabled():
        return
    if out is not None and not (out.dtype.is_floating_point or out.dtype.is_complex):
        return  # TensorIterator's cast check refuses the floating result first
    for t in (grad, out):
        if t is not None and t.dtype not in _VIEWABLE:
            raise RuntimeError(f"itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor input"
                               f"{aten_type_name(t.dtype)} (CPU's oneDNN gelu_backward)")
    if tuple(grad.shape) != tuple(x.shape):
        raise RuntimeError(f"{_REORDER} (CPU's oneDNN gelu_backward: grad_output {list(grad.shape)}, self "
                           f"{list(x.shape)})")


BOUND_CHECKS: dict[str, Callable[[Bound], None]] = {"gelu_backward": _gelu_backward}
