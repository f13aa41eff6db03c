"""Issue 17 (test_torch's test_invalid_shapes_grid_sampler): grid_sampler_2d / 3d and their backward refuse a
mismatched batch, grid size or rank as CPU does, with CPU's class and words (ops/grid_checks.py), in every eager
mode; before, tpu failed inside the lowering with a ValueError (a reshape's element count). Valid calls still
equal CPU's."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu

import torchtpu  # noqa: F401

aten = torch.ops.aten


def _r(*shape: int, d: str) -> torch.Tensor:
    return torch.linspace(-1.2, 1.2, steps=max(1, int(torch.tensor(shape).prod())), dtype=torch.float64,
                          device=d).reshape(shape)


CASES: dict[str, Callable[[str], object]] = {
    "composite_3d_batch": lambda d: torch.grid_sampler(_r(5, 5, 5, 5, 5, d=d), _r(1, 1, 1, 4, 4, d=d), 0, 0, True),
    "composite_2d_batch": lambda d: torch.grid_sampler(_r(5, 5, 5, 5, d=d), _r(1, 1, 4, 4, d=d), 0, 0, True),
    "2d_batch": lambda d: torch.grid_sampler_2d(_r(5, 5, 5, 5, d=d), _r(1, 1, 4, 4, d=d), 0, 0, True),
    "2d_on_5d_batch": lambda d: torch.grid_sampler_2d(_r(5, 5, 5, 5, 5, d=d), _r(1, 1, 1, 4, 4, d=d), 0, 0, True),
    "3d_on_4d_batch": lambda d: torch.grid_sampler_3d(_r(5, 5, 5, 5, d=d), _r(1, 1, 4, 4, d=d), 0, 0, True),
    "2d_last_dim": lambda d: torch.grid_sampler_2d(_r(2, 1, 3, 3, d=d), _r(2, 2, 2, 3, d=d), 0, 0, False),
    "2d_empty_spatial": lambda d: torch.grid_sampler_2d(_r(2, 1, 0, 3, d=d), _r(2, 2, 2, 2, d=d), 0, 0, False),
    "2d_rank": lambda d: torch.grid_sampler_2d(_r(2, 1, 3, 3, 3, d=d), _r(2, 2, 2, 2, 3, d=d), 0, 0, False),
    "3d_rank": lambda d: torch.grid_sampler_3d(_r(2, 1, 3, 3, d=d), _r(2, 2, 2, 2, d=d), 0, 0, False),
    "3d_bicubic": lambda d: torch.grid_sampler_3d(_r(2, 1, 3, 3, 3, d=d), _r(2, 2, 2, 2, 3, d=d), 2, 0, False),
    "2d_backward_batch": lambda d: aten.grid_sampler_2d_backward(
        _r(1, 5, 1, 4, d=d), _r(5, 5, 5, 5, d=d), _r(1, 1, 4, 2, d=d), 0, 0, True, [True, True]),
    "3d_backward_batch": lambda d: aten.grid_sampler_3d_backward(
        _r(1, 5, 1, 1, 4, d=d), _r(5, 5, 5, 5, 5, d=d), _r(1, 1, 1, 4, 3, d=d), 0, 0, True, [True, True]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)


@pytest.mark.parametrize("mode", MODES)
def test_pytorch_words(mode: str) -> None:
    """The words test_invalid_shapes_grid_sampler looks for."""
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="expected grid and input to have same batch"):
        CASES["composite_3d_batch"]("tpu")
        torch.tpu.synchronize()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nd", [2, 3])
def test_valid_equals_cpu(nd: int, mode: str) -> None:
    shapes = ((2, 3, 4, 5), (2, 3, 2, 2)) if nd == 2 else ((2, 3, 4, 5, 3), (2, 3, 2, 2, 3))
    fn = torch.grid_sampler_2d if nd == 2 else torch.grid_sampler_3d
    expected = fn(_r(*shapes[0], d="cpu"), _r(*shapes[1], d="cpu"), 0, 1, False)
    with torch.tpu.eager_mode(mode):
        got = fn(_r(*shapes[0], d="tpu"), _r(*shapes[1], d="tpu"), 0, 1, False).cpu()
    torch.testing.assert_close(got, expected)
