"""igamma / igammac on the special-case grid (NaN, 0, +-inf, negative, ordinary) in ATen's order of cases
(fuzz seed 6): a NaN operand gives NaN only where no earlier case answers (x == 0 gives 0 for igamma whatever a;
an infinite a with a NaN x gives 0; an infinite x with a NaN a gives 1). Compared with CPU in every eager mode and
compiled, each bit-identical to DEFER_NEVER."""

from __future__ import annotations

import itertools

import pytest
import torch
from refusal_cases import results_in_every_mode

import torchtpu  # noqa: F401

VALUES = [float("nan"), 0.0, float("inf"), -float("inf"), 1.5, -1.0, 0.3]


def _grid(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    pairs = list(itertools.product(VALUES, VALUES))
    return torch.tensor([p[0] for p in pairs], dtype=dtype), torch.tensor([p[1] for p in pairs], dtype=dtype)


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_special_cases_match_cpu(fn, dtype: torch.dtype) -> None:  # noqa: ANN001 - a torch function
    a, x = _grid(dtype)
    expected = fn(a, x)
    results = results_in_every_mode(fn, a, x)
    tol = 1e-5 if dtype == torch.float32 else 1e-7  # the fuzzer's tolerances
    torch.testing.assert_close(results["DEFER_NEVER"], expected, rtol=tol, atol=tol, equal_nan=True)
    bits = torch.int32 if dtype == torch.float32 else torch.int64
    for mode, got in results.items():
        assert torch.equal(got.view(bits), results["DEFER_NEVER"].view(bits)), mode
