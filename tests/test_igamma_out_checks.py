"""igamma.out / igammac.out make their TensorIterator's checks in CPU's order: the operands' broadcast, the common
dtype's cast to out's, then the kernel's dtype dispatch (tpu raised the dispatch's NotImplementedError first)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu


def _call(fn, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor):
    return lambda d: fn(a.to(d), b.to(d), out=out.to(d))


CASES = {
    "broadcast before dispatch": (torch.ones(2, 2, dtype=torch.int16), torch.ones(2, 3, dtype=torch.int16),
                                  torch.empty(0, dtype=torch.int16)),
    "cast before dispatch": (torch.ones(3, dtype=torch.complex64), torch.ones(3), torch.empty(0)),
    "bool out": (torch.ones(3, 1, dtype=torch.bool), torch.ones(3, 1, dtype=torch.uint8),
                 torch.empty(0, dtype=torch.bool)),
    "dispatch when castable": (torch.ones(3, dtype=torch.uint8), torch.ones(3, dtype=torch.uint8), torch.empty(0)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=["igamma", "igammac"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_in_cpus_order(mode: str, fn, case: str) -> None:
    assert_refused_as_cpu(_call(fn, *CASES[case]), mode)
