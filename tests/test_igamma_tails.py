"""igamma / igammac over their whole domain against CPU (drivers/ir_lowerings_igamma.py ports ATen's algorithm):
a dense log-spaced grid of a and x over 1e-30..1e30 with the boundaries (0, the smallest subnormal, the
thresholds 1.1, 20, 200 of ATen's choice of expansion, inf, NaN), and a band of x near a for the asymptotic
expansion up to a = 1e30. Relative to CPU's value (the tails are tiny: igammac(1e-30, 0.5) is 1.1e-30), in float32
and float64, in every eager mode and compiled, each bit-identical to DEFER_NEVER."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from refusal_cases import results_in_every_mode

import torchtpu  # noqa: F401

# float32: lgamma's few ulps at 60 (a = 1e-26) and a log x - x - lgamma(a) near -64 (a ~ 300) scale the result by
# e^(error): 4e-6 and 1.2e-4 relative seen; float64 the same at 1e-13 and 1.4e-12
RTOL = {torch.float32: 3e-4, torch.float64: 5e-12}


def _grid(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    tiny = 1e-45 if dtype == torch.float32 else 5e-324
    v = np.concatenate([[0.0, tiny], np.logspace(-30, 30, 121), [0.5, 1, 1.1, 2, 20, 20.5, 199, 200, 201, 1e4,
                                                                   np.inf, np.nan]])
    a, x = (g.ravel() for g in np.meshgrid(v, v, indexing="ij"))
    near_a, ratio = np.meshgrid(np.logspace(0, 30, 61), [0.5, 0.7, 0.9, 0.99, 1, 1.01, 1.1, 1.3, 2], indexing="ij")
    a = np.concatenate([a, near_a.ravel(), [-1.0, 1.0]])
    x = np.concatenate([x, (near_a * ratio).ravel(), [1.0, -1.0]])
    return torch.tensor(a, dtype=dtype), torch.tensor(x, dtype=dtype)


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dense_grid_matches_cpu_in_every_mode(fn, dtype: torch.dtype) -> None:  # noqa: ANN001 - a torch function
    a, x = _grid(dtype)
    want = fn(a, x)
    results = results_in_every_mode(fn, a, x)
    got = results["DEFER_NEVER"]
    assert torch.equal(got.isnan(), want.isnan())
    fin = ~want.isnan()
    err = (got[fin] - want[fin]).abs()
    bound = RTOL[dtype] * want[fin].abs() + torch.finfo(dtype).tiny  # relative, down to the subnormals
    worst = int((err - bound).argmax())
    assert bool((err <= bound).all()), (float(a[fin][worst]), float(x[fin][worst]), float(got[fin][worst]),
                                        float(want[fin][worst]))
    bits = torch.int32 if dtype == torch.float32 else torch.int64
    for mode, res in results.items():
        assert torch.equal(res.view(bits), got.view(bits)), mode


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_reported_tails(dtype: torch.dtype) -> None:
    """The cases issue 17 names: igamma(1e30, 1e30) is 0.5 (was NaN), igammac(1e-30, 0.5) is 1.1e-30 (was -1.2e-7
    in float32), igammac just above x = 1.1 at tiny a (ATen compares float32 x with the double 1.1: its continued
    fraction, not its small-x series)."""
    a = torch.tensor([1e30, 1e-30, 1e-26], dtype=dtype)
    x = torch.tensor([1e30, 0.5, 1.1], dtype=dtype)
    for fn in (torch.igamma, torch.igammac):
        want = fn(a, x)
        torch.testing.assert_close(fn(a.to("tpu"), x.to("tpu")).cpu(), want, rtol=RTOL[dtype], atol=0)
    assert float(torch.igammac(a[1:2].to("tpu"), x[1:2].to("tpu")).cpu()) > 0
