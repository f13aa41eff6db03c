"""geometric_'s samples follow P(X = k) = (1-p)^(k-1) p, k >= 1, in every eager mode: a chi-square goodness-of-fit
against the definition at n = 200,000 (scipy-free) and a two-sample chi-square against CPU's samples.

PyTorch's test_torch.py test_geometric_kstest (1,000 samples, asks for a p-value above 0.9 with bins whose expected
count is far below 1) fails on a correct sampler for about one seed in seven (seeds 0-199 with the test's three
p: CPU's sampler fails it at 30, tpu's at 29); its fixed seed gives tpu one of those streams. This file checks the
distribution itself."""

import math

import pytest
import torch

N = 200_000
MODES = ("DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE")


def _bins(p: float) -> int:
    """The number of bins 1..K-1 plus a tail bin >= K, K where the tail's expected count falls below 50."""
    k = 1
    while N * (1 - p) ** k >= 50:
        k += 1
    return k + 1


def _counts(samples: torch.Tensor, bins: int) -> torch.Tensor:
    s = samples.double().clamp(max=bins).long()
    return torch.bincount(s, minlength=bins + 1)[1:].double()


def _expected(p: float, bins: int) -> torch.Tensor:
    pmf = [(1 - p) ** (k - 1) * p for k in range(1, bins)] + [(1 - p) ** (bins - 1)]
    return torch.tensor(pmf, dtype=torch.float64) * N


def _bound(df: int) -> float:
    """Far in the upper tail of chi-square(df) (mean df, variance 2 df): a correct sampler stays below it."""
    return df + 6 * math.sqrt(2 * df) + 10


def _goodness(samples: torch.Tensor, p: float) -> tuple[float, int]:
    bins = _bins(p)
    obs, exp = _counts(samples, bins), _expected(p, bins)
    return float(((obs - exp) ** 2 / exp).sum()), bins - 1


def _two_sample(a: torch.Tensor, b: torch.Tensor, p: float) -> tuple[float, int]:
    bins = _bins(p)
    ca, cb = _counts(a, bins), _counts(b, bins)
    seen = ca + cb > 0
    return float(((ca - cb)[seen] ** 2 / (ca + cb)[seen]).sum()), int(seen.sum()) - 1


@pytest.mark.parametrize("p", [0.01, 0.2, 0.5, 0.8, 0.999])
def test_geometric_matches_the_definition_and_cpu_in_every_mode(tpu, p):
    torch.manual_seed(1234)
    cpu = torch.empty(N, dtype=torch.float64).geometric_(p)
    runs = []
    for mode in MODES:
        torch.manual_seed(1234)
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            runs.append(torch.empty(N, device=tpu).geometric_(p).cpu())
    got = runs[0]
    assert all(torch.equal(r, got) for r in runs[1:])  # the same stream in every mode
    assert got.min().item() >= 1 and torch.equal(got, got.round())
    stat, df = _goodness(got, p)
    assert stat < _bound(df), (stat, df)
    stat, df = _two_sample(got, cpu, p)
    assert stat < _bound(df), (stat, df)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int8, torch.float16, torch.bfloat16])
def test_geometric_in_other_dtypes(tpu, dtype):
    torch.manual_seed(7)
    got = torch.empty(N, dtype=dtype, device=tpu).geometric_(0.5).cpu()
    assert got.dtype == dtype
    stat, df = _goodness(got, 0.5)
    assert stat < _bound(df), (stat, df)


def test_the_checks_catch_a_wrong_distribution():
    """The bound is not loose: samples of p = 0.21 (a 5% error in p) and k - 1 + 1[k = 1] fail it at p = 0.2."""
    torch.manual_seed(0)
    near = torch.empty(N, dtype=torch.float64).geometric_(0.21)
    assert _goodness(near, 0.2)[0] > _bound(_goodness(near, 0.2)[1])
    right = torch.empty(N, dtype=torch.float64).geometric_(0.2)
    shifted = torch.where(right > 1, right - 1, right)
    assert _goodness(shifted, 0.2)[0] > _bound(_goodness(shifted, 0.2)[1])
    assert _two_sample(near, right, 0.2)[0] > _bound(_two_sample(near, right, 0.2)[1])
