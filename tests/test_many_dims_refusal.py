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
    "ones_add": lambda dev, n: torch.ones([1] * n, device=dev) + 1,
    "full_sub": lambda dev, n: torch.full([1] * n, 2.0, device=dev) - 1,
    "unsqueeze_mul": lambda dev, n: torch.ones([1] * 64, device=dev).unsqueeze(0).mul(3) if n > 64
    else torch.ones([1] * n, device=dev).mul(3),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_more_than_64_dims_refused_naming_the_limit(mode: str, name: str) -> None:
    assert CALLS[name]("cpu", 65).dim() in (0, 65)  # CPU computes it
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
    def f(x: torch.Tensor) -> torch.Tensor:
        return x * 3 + 1

    assert f(torch.ones([1] * 65)).dim() == 65  # CPU computes it
    fn = torch.compile(f, backend="tpu")
    with pytest.raises(NotImplementedError, match="only tensors with up to 64 dims are supported"):
        fn(torch.ones([1] * 64, device="tpu").unsqueeze(0)).cpu()
