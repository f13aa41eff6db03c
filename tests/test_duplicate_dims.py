"""A reduction over a dim named twice (PyTorch's test_reductions.py test_dim_multi_duplicate): CPU's
dim_list_to_bitset refuses "dim 0 appears multiple times in the list of dims"; tpu refused none of them (it reduced
each dim once). P.canon_dims, the lowerings' one dim-list helper, now checks, in every eager mode and compiled."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu, assert_refused_as_cpu_compiled

import torchtpu  # noqa: F401

aten = torch.ops.aten


def _x(d: str, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.arange(24, dtype=dtype, device=d).reshape(2, 3, 4)


CASES: dict[str, Callable[[str], object]] = {
    "sum": lambda d: _x(d).sum(dim=[0, 0]),
    "sum_negative": lambda d: _x(d).sum(dim=[1, -2]),
    "mean": lambda d: _x(d).mean(dim=[0, 0]),
    "prod_dims": lambda d: aten.amax(_x(d), [2, -1]),
    "amin": lambda d: _x(d).amin(dim=[0, 0], keepdim=True),
    "var": lambda d: _x(d).var(dim=[0, 0]),
    "std": lambda d: _x(d).std(dim=[1, 1]),
    "var_mean": lambda d: torch.var_mean(_x(d), dim=[0, 0]),
    "logsumexp": lambda d: _x(d).logsumexp(dim=[0, 0]),
    "norm": lambda d: torch.linalg.vector_norm(_x(d), dim=[0, 0]),
    "nansum": lambda d: _x(d).nansum(dim=[2, 2]),
    "any": lambda d: _x(d, torch.bool).any(dim=(0, 0)),
    "count_nonzero": lambda d: torch.count_nonzero(_x(d), dim=[0, 0]),
    "zero_dim": lambda d: torch.ones((), device=d).sum(dim=[0, -1]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_duplicate_dim_refused(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)


@pytest.mark.parametrize("name", ["sum", "var"])
def test_duplicate_dim_refused_compiled(name: str) -> None:
    # PyTorch's own reference decomposition refuses first, in its words ("duplicate value in the list of dims")
    assert_refused_as_cpu_compiled(CASES[name], words=False)


def test_distinct_dims_computed() -> None:
    x = _x("cpu")
    got = _x("tpu").sum(dim=[0, -1]).cpu()
    assert torch.equal(got, x.sum(dim=[0, -1]))
