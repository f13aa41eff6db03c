"""leaky_relu_backward is a binary TensorIterator op: its result has the common dtype of grad and self, computed in
its opmath. An int32 grad with a float32 self gave an int32 result on tpu, float32 on CPU (fuzz seed 3)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES

CASES = {
    "int32_grad_float_self": (torch.int32, torch.float32, 1.0, True),
    "half_grad_float_self": (torch.float16, torch.float32, 0.2, False),
    "float_grad_double_self": (torch.float32, torch.float64, -0.3, False),
    "bfloat16": (torch.bfloat16, torch.bfloat16, 0.01, False),
}


def _args(name: str, device: str) -> tuple:
    grad_dtype, self_dtype, slope, is_result = CASES[name]
    gen = torch.Generator().manual_seed(1)
    grad = (torch.randn(4, 5, generator=gen) * 10).to(grad_dtype)
    x = torch.randn(4, 5, generator=gen).to(self_dtype)
    return grad.to(device), x.to(device), slope, is_result


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_leaky_relu_backward_dtype_and_values_equal_cpu(name: str, mode: str) -> None:
    expected = torch.ops.aten.leaky_relu_backward(*_args(name, "cpu"))
    with torch.tpu.eager_mode(mode):
        got = torch.ops.aten.leaky_relu_backward(*_args(name, "tpu")).cpu()
    assert got.dtype == expected.dtype
    assert torch.equal(got, expected)
