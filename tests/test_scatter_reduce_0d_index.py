"""scatter_reduce with a 0-d index (and a 0-d or full src) into a 1-d self: ATen's ensure_nonempty_dim reads the
0-d index as one element of self's rank, as scatter/scatter_add already did on tpu; scatter_reduce raised an
internal IndexError from the simulator's scatter (fuzz at 40 calls, reported by devgen25). Every reduction, with
and without include_self, equal to CPU in every eager mode and compiled; a 2-d self still refuses the rank."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import assert_refused_as_cpu, results_in_every_mode

REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("src_shape", [(), (3,)])
def test_0d_index_as_cpu(reduce: str, include_self: bool, src_shape: tuple) -> None:
    self = torch.tensor([1.0, 2.0, 3.0])
    index = torch.tensor(1)
    src = torch.full(src_shape, 5.0)

    def fn(s: torch.Tensor, i: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.scatter_reduce(s, 0, i, x, reduce, include_self=include_self)

    expected = fn(self, index, src)
    for mode, got in results_in_every_mode(fn, self, index, src).items():
        assert torch.equal(got, expected), (mode, got, expected)


@pytest.mark.parametrize("mode", ["DEFER_NEVER", "DEFER_AND_FUSE"])
def test_0d_index_into_2d_self_refused_as_cpu(mode: str) -> None:
    assert_refused_as_cpu(lambda d: torch.scatter_reduce(
        torch.ones(1, 3, device=d), 0, torch.tensor(0, device=d), torch.tensor(5.0, device=d), "sum"), mode)
