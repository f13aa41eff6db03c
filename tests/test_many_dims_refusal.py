"""Tensors of more than 64 dimensions on the simulator (the rank numpy's memory views hold, NPY_MAXDIMS): a
refusal that names the limit (NotImplementedError; in DEFER_AND_FUSE the region's RuntimeError with its words),
in every eager mode, where numpy's own ValueError ("number of dimensions must be
within [0, 64]") leaked out before. CPU computes these; 64 dimensions stay computed as on CPU. What needs no N-d
view (factories, fills, copies, reductions over every element) is computed past the limit: tests/test_many_dims.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]

CALLS: dict[str, Callable[[str, int], torch.Tensor]] = {
    "add_broadcast": lambda dev, n: torch.ones([1] * n, device=dev) + torch.ones(2, device=dev),
    "roll": lambda dev, n: torch.roll(torch.arange(2.0, device=dev).reshape([2] + [1] * (n - 1)), 1, 0),
    "cat": lambda dev, n: torch.cat([torch.ones([1] * n, device=dev)] * 2),
    "unsqueeze_softmax": lambda dev, n: torch.ones([1] * 64, device=dev).unsqueeze(0).softmax(0) if n > 64
    else torch.ones([1] * n, device=dev).softmax(0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_more_than_64_dims_refused_naming_the_limit(mode: str, name: str) -> None:
    assert CALLS[name]("cpu", 65).dim() == 65  # CPU computes it
    with torch.tpu.eager_mode(mode):
        # DEFER_AND_FUSE reports a region's failure as RuntimeError (the base class), with the refusal's words
        expected = RuntimeError if mode == "DEFER_AND_FUSE" else NotImplementedError
        with pytest.raises(expected, match="only tensors with up to 64 dims are supported"):
            CALLS[name]("tpu", 65).cpu()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_64_dims_computed_as_cpu(mode: str, name: str) -> None:
    expected = CALLS[name]("cpu", 64)
    with torch.tpu.eager_mode(mode):
        got = CALLS[name]("tpu", 64).cpu()
    assert got.shape == expected.shape
    assert torch.equal(got, expected)


def test_more_than_64_dims_refused_compiled() -> None:
    """Such a graph runs op by op on tpu (compile/rank_limit.py), where an op needing an N-d view is refused."""
    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.roll(x * 3 + 1, 1, 0)

    assert f(torch.ones([2] + [1] * 64)).dim() == 65  # CPU computes it
    fn = torch.compile(f, backend="tpu")
    with pytest.raises(NotImplementedError, match="only tensors with up to 64 dims are supported"):
        fn(torch.ones([2] + [1] * 63, device="tpu").unsqueeze(1)).cpu()
