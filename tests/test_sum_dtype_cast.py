"""sum / nansum with dtype=float16 or bfloat16 of a wider input: ATen's make_reduction_from_out_ty casts the input
to the result dtype first (each element rounded to half), then accumulates a half dtype in float32; tpu summed the
input in float32 and rounded once (PyTorch's test_reductions test_nansum_out_dtype_float16: nansum(float64,
dtype=float16) off by 4 ulps). Compared with CPU bit for bit in every eager mode and compiled.

Left: CPU itself does not round first for some layouts of a multi-dim reduction (a (10, 6, 3) float32 input
summed over dims (0, 2) into float16: 30 elements of 1.0004 give 30.0156, where dims (0, 1), (1, 2) or all give
the 30-times-1.0 sum); tpu rounds first for every layout."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import results_in_every_mode

HALF = [torch.float16, torch.bfloat16]
INPUTS = [torch.float32, torch.float64, torch.int32]


def _input(dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(5)
    if dtype.is_floating_point:
        return (torch.randn(10, 6, 3, generator=g, dtype=torch.float64) * 10).to(dtype)
    return torch.randint(-3000, 3000, (10, 6, 3), generator=g).to(dtype)  # above 2048: ints that round in half


CALLS: dict[str, Callable[[torch.Tensor, torch.dtype], torch.Tensor]] = {
    "sum_all": lambda x, d: torch.sum(x, dtype=d),
    "sum_dim": lambda x, d: torch.sum(x, dim=(1, 2), dtype=d),
    "sum_dim0": lambda x, d: torch.sum(x, dim=0, dtype=d),
    "nansum_all": lambda x, d: torch.nansum(x, dtype=d),
    "nansum_dim": lambda x, d: torch.nansum(x, dim=1, keepdim=True, dtype=d),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("out", HALF)
@pytest.mark.parametrize("dtype", INPUTS)
def test_sum_into_a_half_dtype_casts_the_input_first(tpu, name, out, dtype):
    x = _input(dtype)

    def fn(t: torch.Tensor) -> torch.Tensor:
        return CALLS[name](t, out)

    cpu = fn(x)
    for where, got in results_in_every_mode(fn, x).items():
        assert got.dtype == out and torch.equal(got, cpu), (where, got, cpu)


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("out", HALF)
def test_elements_rounded_before_the_sum(tpu, name, out):
    """1.0004 rounds to 1 in both half dtypes: 180 of them sum to 180 (CPU), where a float32 sum rounded once
    gives 180.125 (float16) or 180 only by luck of bfloat16's coarser grid."""
    x = torch.full((10, 6, 3), 1.0004 if out == torch.float16 else 1.003, dtype=torch.float32)

    def fn(t: torch.Tensor) -> torch.Tensor:
        return CALLS[name](t, out)

    cpu = fn(x)
    assert torch.equal(cpu, CALLS[name](x.to(out), out))
    if name.endswith("all"):
        assert not torch.equal(cpu, CALLS[name](x, torch.float32).to(out))
    for where, got in results_in_every_mode(fn, x).items():
        assert torch.equal(got, cpu), (where, got, cpu)
