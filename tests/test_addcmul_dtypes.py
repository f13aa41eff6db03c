"""addcmul of mixed operands, and of bfloat16/float16: every operand goes to the common dtype (float32 for the
narrow floats, rounded once) before the products, as ATen's kernel computes (fuzz seed 10: tpu multiplied the value
by a uint8 tensor1 in uint8 and wrapped; seed 9: a complex64 addcmul_ with a bfloat16 tensor1 rounded value * t1 to
bfloat16; bfloat16 addcmul rounded after each step)."""

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


def _float_calls(d: str) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    out = []
    for dtypes in [(torch.bfloat16,) * 3, (torch.float16,) * 3]:
        s, t1, t2 = (torch.randn(16, generator=gen, dtype=dt).mul(10).to(d) for dt in dtypes)
        out += [torch.addcmul(s, t1, t2, value=0.62), torch.addcmul(s, t1, t2), torch.addcmul(s, t1, t2[0], value=-3),
                s.clone().addcmul_(t1, t2, value=0.62)]
    return out


@pytest.mark.parametrize("mode", MODES)
def test_addcmul_mixed_integer_operands(mode: str) -> None:
    assert_exactly_cpu(_calls, mode)


@pytest.mark.parametrize("mode", MODES)
def test_addcmul_narrow_floats(mode: str) -> None:
    assert_exactly_cpu(_float_calls, mode)


@pytest.mark.parametrize("mode", MODES)
def test_addcmul_complex_with_bfloat16_tensor1(mode: str) -> None:
    # float32/complex64 results may differ in the last bit: CPU's kernel is compiled to a fused multiply-add
    gen = torch.Generator().manual_seed(0)
    s, t2 = (torch.randn(3, 3, generator=gen, dtype=torch.complex64) * 50 for _ in range(2))
    t1 = torch.randn(3, 3, generator=gen).mul(50).to(torch.bfloat16)
    with torch.tpu.eager_mode(mode):
        got = s.t().to("tpu").addcmul_(t1.to("tpu"), t2[0, 0].to("tpu"), value=0.62).cpu()
    torch.testing.assert_close(got, s.t().clone().addcmul_(t1, t2[0, 0], value=0.62))


def test_addcmul_mixed_integer_operands_compiled() -> None:
    fn = torch.compile(lambda s, a, b: torch.addcmul(s, a, b, value=-3), backend="tpu")
    args = [torch.tensor([1, 2, -3], dtype=torch.int16), torch.tensor([200, 3, 255], dtype=torch.uint8),
            torch.tensor([7, -5, 300], dtype=torch.int16)]
    torch.testing.assert_close(fn(*(a.to("tpu") for a in args)).cpu(), torch.addcmul(*args, value=-3), rtol=0, atol=0)
