"""addcmul of mixed integer operands (int16 self and tensor2, uint8 tensor1) with a value other than 1: every
operand goes to the common dtype before the products, as ATen's kernel computes in scalar_t (fuzz seed 10: tpu
multiplied the value by the uint8 tensor1 in uint8 and wrapped)."""

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu


def _calls(d: str) -> list[torch.Tensor]:
    s = torch.tensor([1, 2, -3, 0], dtype=torch.int16, device=d)
    t1 = torch.tensor([200, 3, 255, 17], dtype=torch.uint8, device=d)
    t2 = torch.tensor([7, -5, 300, -1], dtype=torch.int16, device=d)
    s0 = torch.tensor(5, dtype=torch.int16, device=d)
    return [torch.addcmul(s, t1, t2, value=-3), torch.addcmul(s, t1, t2, value=2.7), torch.addcmul(s, t1, t2),
            torch.addcmul(s0, t1, t1, value=-3), s.clone().addcmul_(t1, t2, value=-3)]


@pytest.mark.parametrize("mode", MODES)
def test_addcmul_mixed_integer_operands(mode: str) -> None:
    assert_exactly_cpu(_calls, mode)


def test_addcmul_mixed_integer_operands_compiled() -> None:
    fn = torch.compile(lambda s, a, b: torch.addcmul(s, a, b, value=-3), backend="tpu")
    args = [torch.tensor([1, 2, -3], dtype=torch.int16), torch.tensor([200, 3, 255], dtype=torch.uint8),
            torch.tensor([7, -5, 300], dtype=torch.int16)]
    torch.testing.assert_close(fn(*(a.to("tpu") for a in args)).cpu(), torch.addcmul(*args, value=-3), rtol=0, atol=0)
