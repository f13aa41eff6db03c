"""sum/prod/cumsum/cumprod with out= of another dtype and no dtype=: ATen's meta takes the out tensor's dtype as
the result's, so the reduction runs in it (a bfloat16 input summed into a float32 out is not rounded to
bfloat16 first: fuzzer seed 5 gave -1000 where CPU gives -999.32). Compared with CPU bit for bit in every eager
mode."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES

CASES: dict[str, Callable[[torch.Tensor, torch.Tensor], object]] = {
    "sum_all": lambda x, o: torch.ops.aten.sum.IntList_out(x, None, False, dtype=None, out=o[0, 0]),
    "sum_dim": lambda x, o: torch.sum(x, 1, out=o[:, 0]),
    "prod_dim": lambda x, o: torch.prod(x[:, :4], 1, out=o[:, 0]),
    "cumsum": lambda x, o: torch.cumsum(x, 1, out=o),
    "cumprod": lambda x, o: torch.cumprod(x[:, :4], 1, out=o[:, :4]),
}


def _input(device: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(5)
    return (torch.randn(5, 16, generator=g) * 100).bfloat16().to(device)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_computed_in_out_dtype(name: str, mode: str) -> None:
    cpu_out = torch.zeros(5, 16)
    CASES[name](_input("cpu"), cpu_out)
    with torch.tpu.eager_mode(mode):
        out = torch.zeros(5, 16, device="tpu")
        CASES[name](_input("tpu"), out)
        torch.tpu.synchronize()
    assert torch.equal(out.cpu().view(torch.int32), cpu_out.view(torch.int32)), (out.cpu(), cpu_out)


def test_sum_not_rounded_to_input_dtype() -> None:
    x = _input("tpu")
    out = torch.empty((), device="tpu")
    torch.sum(x, (0, 1), out=out)
    assert out.item() == x.cpu().float().sum().item() != x.cpu().sum().float().item()
