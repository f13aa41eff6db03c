"""Calls both CPU and tpu refuse, where tpu refused in another class or words (fuzz seeds 5-7's error_class
findings) or computed what CPU refuses: refused in CPU's class and first line of words, in every eager mode."""

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu

aten = torch.ops.aten


def _t(*shape: int, dtype: torch.dtype = torch.float32, d: str = "cpu", fill: float = 1) -> torch.Tensor:
    return torch.full(shape, fill, dtype=dtype, device=d)


CASES = {
    # normal's std check comes before its kernel's dtype dispatch
    "normal_float_tensor_int16_negative_std": lambda d: aten.normal.float_Tensor(0.5, _t(4, 2, dtype=torch.int16,
                                                                                         d=d, fill=-1)),
    "normal_tensor_tensor_int64_negative_std": lambda d: aten.normal.Tensor_Tensor(_t(5, 1, dtype=torch.int64, d=d),
                                                                                   _t(5, 4, dtype=torch.int64, d=d,
                                                                                      fill=-2)),
    "normal_tensor_float_int8_negative_std": lambda d: aten.normal.Tensor_float(_t(3, dtype=torch.int8, d=d), -1.0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[case], mode)


def test_normal_nonnegative_int_std_still_refused_for_dtype() -> None:
    assert_refused_as_cpu(lambda d: aten.normal.float_Tensor(0.5, _t(2, dtype=torch.int16, d=d)), "DEFER_NEVER")
