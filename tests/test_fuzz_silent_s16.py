"""Silent mismatches the schema fuzzer found with seeds 16 and 18 (`--calls 3`), each now CPU's result or CPU's
refusal in every eager mode (and under torch.compile where noted).

- histogram.bin_ct / histogramdd: the bin edges are ATen's linspace between the outer edges (each a fused
  multiply-add from the nearer end, rounded once) and each value's bin is found among those edges: the edges of
  [-1e30, 2.07] in one bin were [-1e30, 0.0] (the ramp lo + (hi - lo) cancelled), and edges were often an ulp off.
"""

from __future__ import annotations

import pytest
import torch

from tests.refusal_cases import MODES, assert_close_to_cpu, assert_exactly_cpu

aten = torch.ops.aten


def _hist_seed18(d: str) -> list[torch.Tensor]:
    x = torch.tensor([[[-1e30, 2.0654540062]]], device=d)
    return list(aten.histogram.bin_ct(x, 1))


def _hist_ulps(d: str) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    out: list[torch.Tensor] = []
    for dt in (torch.float32, torch.float64):
        for bins, scale in ((16, 1e-3), (17, 10.0), (37, 1e4), (5, 1.0)):
            x = (torch.randn(12, generator=g, dtype=torch.float64) * scale).to(dt)
            out += list(torch.histogram(x.to(d), bins))
            out += list(torch.histogram(x.to(d), bins, range=(float(x.min()) - 0.37, float(x.max()) + 1.3)))
    return out


def _hist_weighted(d: str) -> list[torch.Tensor]:
    """Weighted densities: the edges exact, the sums within rounding (tpu adds the weights in another order)."""
    g = torch.Generator().manual_seed(2)
    out: list[torch.Tensor] = []
    for dt in (torch.float32, torch.float64):
        x = (torch.randn(12, generator=g, dtype=torch.float64) * 1e4).to(dt)
        hist, edges = torch.histogram(x.to(d), 37, range=(float(x.min()) - 0.37, float(x.max()) + 1.3),
                                      weight=x.abs().to(d), density=True)
        out += [hist, edges, (edges.cpu() == torch.histogram(x, 37, range=(float(x.min()) - 0.37,
                                                                           float(x.max()) + 1.3))[1]).all()]
    return out


def _histogramdd_ulps(d: str) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(9, 2, generator=g, dtype=torch.float64) * 100
    out = list(torch.histogramdd(x.to(d), [23, 3])[1])
    return out + list(torch.histogramdd(x.float().to(d), [41, 2])[1])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("calls", [_hist_seed18, _hist_ulps, _histogramdd_ulps])
def test_histogram_edges_and_counts(calls, mode: str) -> None:
    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
def test_histogram_weighted_density(mode: str) -> None:
    assert_close_to_cpu(_hist_weighted, mode)
