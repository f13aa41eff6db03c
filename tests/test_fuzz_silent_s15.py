"""Silent wrong values, dtypes and NaNs of fuzz seeds 15, 16 and 18, each now CPU's in every eager mode: var_mean of
no elements (NaN), mse_loss's mean of no elements (NaN), native_dropout of an empty input (a mask of the input's
dtype), round(decimals) of float16 (computed in float32), hardtanh_backward with a 0-d grad of a wider dtype (no
promotion), slice_scatter over a whole dim (self's dtype)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

A = torch.ops.aten
F16, F64 = torch.float16, torch.float64

CASES = {
    "var_mean_empty": lambda d: list(A.var_mean.correction(torch.empty(0, dtype=F64, device=d), [0], correction=-0.7)),
    "var_empty_keepdim": lambda d: [A.var.correction(torch.empty(2, 0, device=d), [1], correction=0.5, keepdim=True)],
    "mse_mean_empty": lambda d: [A.mse_loss(torch.empty(4, 0, device=d), torch.ones(1, 1, device=d))],
    "mse_out_empty": lambda d: [A.mse_loss.out(torch.empty(4, 0, device=d), torch.ones(1, 1, device=d),
                                              out=torch.empty(0, device=d))],
    "mse_sum_empty": lambda d: [A.mse_loss(torch.empty(0, device=d), torch.ones(0, device=d), 2)],
    "dropout_empty_eval": lambda d: list(A.native_dropout(torch.ones(0, dtype=torch.int64, device=d), 0.5, False)),
    "dropout_empty_train": lambda d: list(A.native_dropout(torch.ones(2, 0, device=d), 0.5, True)),
    "dropout_eval": lambda d: list(A.native_dropout(torch.ones(3, device=d), 0.5, False)),
    "round_f16": lambda d: [A.round.decimals(torch.tensor([45.25, 100.0, -7.123], dtype=F16, device=d), decimals=4)],
    "round_bf16": lambda d: [torch.round(torch.tensor([3.14159, 1e30], dtype=torch.bfloat16, device=d), decimals=3)],
    "hardtanh_backward_0d_grad": lambda d: [A.hardtanh_backward(torch.tensor(2.0, dtype=F64, device=d),
                                                                torch.linspace(-1, 1, 6, device=d), -0.5, 0.5)],
    "slice_scatter_whole_dim": lambda d: [A.slice_scatter(torch.ones(4, dtype=torch.bfloat16, device=d),
                                                          torch.full((4,), 2.5, dtype=F64, device=d), 0)],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_value_dtype_and_nan_as_cpu(name: str, mode: str) -> None:
    def dtypes_too(d: str) -> list[torch.Tensor]:
        got = CASES[name](d)
        assert [t.dtype for t in got] == [t.dtype for t in CASES[name]("cpu")]
        return got

    assert_exactly_cpu(dtypes_too, mode)
