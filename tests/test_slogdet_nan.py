"""slogdet of a matrix whose LU has a NaN pivot: ATen takes the sign as diag(U).sgn().prod(), and sgn of NaN is 0,
so CPU's sign is 0 (logabsdet NaN); the tpu's IR sign gave NaN (fuzzer seed 3, _linalg_slogdet of 1x1 matrices).
Compared with CPU in every eager mode and under torch.compile, bit-identical across them."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

NAN, INF = float("nan"), float("inf")
ONE_BY_ONE = [[[0.0]], [[INF]], [[NAN]], [[-INF]], [[-2.0]]]
TWO_BY_TWO = [[[2.0, 1.0], [1.0, NAN]], [[NAN, 1.0], [0.0, 0.0]], [[3.0, 1.0], [1.0, 2.0]]]


def _calls(device: str) -> list[torch.Tensor]:
    out = []
    for m in (ONE_BY_ONE, TWO_BY_TWO):
        a = torch.tensor(m, dtype=torch.float64, device=device)
        out += list(torch.linalg.slogdet(a)) + list(torch.ops.aten._linalg_slogdet(a.mT)[:2])
    return out


@pytest.mark.parametrize("mode", MODES)
def test_matches_cpu(mode: str) -> None:
    assert_exactly_cpu(_calls, mode)


def test_compiled_matches_cpu() -> None:
    torch._dynamo.reset()
    a = torch.tensor(ONE_BY_ONE, dtype=torch.float64)
    sign, logabs = torch.compile(lambda x: torch.linalg.slogdet(x * 1.0), backend="tpu")(a.to("tpu"))
    cs, cl = torch.linalg.slogdet(a)
    torch.testing.assert_close(sign.cpu(), cs, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(logabs.cpu(), cl, rtol=0, atol=0, equal_nan=True)


def test_nan_pivot_sign_is_zero() -> None:
    a = torch.tensor(ONE_BY_ONE, dtype=torch.float64, device="tpu")
    assert torch.linalg.slogdet(a)[0].cpu().tolist() == [0.0, 1.0, 0.0, -1.0, -1.0]
