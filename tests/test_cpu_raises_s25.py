"""Calls CPU refuses that tpu computed (fuzz seeds 9 and 10): refused in CPU's class and words, every eager mode."""

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu

aten = torch.ops.aten

CASES = {
    "fft_r2c_bfloat16": lambda d: aten._fft_r2c(torch.ones(2, 1, 2, dtype=torch.bfloat16, device=d), [0], 0, False),
    "fft_r2c_half_empty": lambda d: aten._fft_r2c(torch.ones(0, 2, dtype=torch.float16, device=d), [1], 0, True),
    "logcumsumexp_0d_dim_1": lambda d: aten._logcumsumexp.out(torch.ones((), device=d), 1,
                                                               out=torch.empty(5, 5, device=d)),
    "multi_margin_double_target": lambda d: aten.multi_margin_loss(torch.ones((), dtype=torch.float64, device=d),
                                                                    torch.ones((), dtype=torch.float64, device=d),
                                                                    margin=-5),
    "multi_margin_bfloat16_input": lambda d: aten.multi_margin_loss(torch.ones(2, 3, dtype=torch.bfloat16, device=d),
                                                                     torch.ones(2, dtype=torch.int64, device=d)),
    "normal_nan_std": lambda d: aten.normal_(torch.ones(1, 1, 2, device=d), float("nan"), float("nan")),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[case], mode)


def test_logcumsumexp_0d_in_range_dim_still_computes() -> None:
    x = torch.tensor(2.5)
    for dim in (0, -1):
        assert torch.equal(torch.logcumsumexp(x.to("tpu"), dim).cpu(), torch.logcumsumexp(x, dim))
