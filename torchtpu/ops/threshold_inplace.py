"""threshold_ on a tensor that overlaps itself (an expanded view), as ATen allows it.

ATen's threshold meta builds its TensorIterator with `set_check_mem_overlap(false)` ("threshold is idempotent, so
overlap is okay"): `x.expand(6, 6).threshold_(t, v)` thresholds each memory location once (a later alias reads
the thresholded value and thresholds it again to the same value). On tpu, threshold_ otherwise reaches the
threshold.out decomposition, whose copy_ into the expanded `self` refuses the internal overlap. This kernel
computes the functional threshold and writes it through the view with each stride-0 dimension narrowed to one
element: every memory location once, with the value all its aliases have.
"""

from __future__ import annotations

import torch

from torchtpu.execution.eager import overlaps_itself
from torchtpu.ops.registry import kernel

aten = torch.ops.aten


def _expanded_dims(t: torch.Tensor) -> list[int]:
    """The dimensions of size > 1 and stride 0."""
    return [d for d, (n, st) in enumerate(zip(t.shape, t.stride())) if st == 0 and n > 1]


def _first(t: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """`t` narrowed to its first element along `dims`."""
    for d in dims:
        t = t.narrow(d, 0, 1)
    return t


def threshold_(self: torch.Tensor, threshold: float | int | bool, value: float | int | bool) -> torch.Tensor:
    """aten::threshold_: the functional op written into `self`, an expanded `self` through its distinct view."""
    result = aten.threshold.default(self, threshold, value)
    dims = _expanded_dims(self) if overlaps_itself(self) else []
    _first(self, dims).copy_(_first(result, dims))
    return self


kernel(aten.threshold_.default, threshold_)
