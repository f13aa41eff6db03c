"""threshold_ on a tensor that overlaps itself (an expanded view), as ATen allows it.

ATen's threshold meta builds its TensorIterator with `set_check_mem_overlap(false)` ("threshold is idempotent, so
overlap is okay"): `x.expand(6, 6).threshold_(t, v)` thresholds each memory location once (a later alias reads
the thresholded value and thresholds it again to the same value). On tpu, threshold_ otherwise reaches the
threshold.out decomposition, whose copy_ into the expanded `self` refuses the internal overlap. This kernel
thresholds the view with each stride-0 dimension narrowed to one element instead: every memory location once,
with the value all its aliases get on CPU.
"""

from __future__ import annotations

import torch

from torchtpu.execution.eager import overlaps_itself
from torchtpu.ops.registry import kernel

aten = torch.ops.aten


def _distinct(t: torch.Tensor) -> torch.Tensor:
    """`t` with each expanded dimension (size > 1, stride 0) narrowed to its first element: each memory location
    once."""
    for d, (n, st) in enumerate(zip(t.shape, t.stride())):
        if st == 0 and n > 1:
            t = t.narrow(d, 0, 1)
    return t


def threshold_(self: torch.Tensor, threshold: float | int | bool, value: float | int | bool) -> torch.Tensor:
    """aten::threshold_ as threshold.out into `self` (the way it ran before: ATen's checks and words), an expanded
    `self` through its distinct view (threshold is elementwise: the same values in the same memory)."""
    target = _distinct(self) if overlaps_itself(self) else self
    aten.threshold.out(target, threshold, value, out=target)
    return self


kernel(aten.threshold_.default, threshold_)
