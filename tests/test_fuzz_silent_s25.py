"""Silent wrong values the fuzzer found (seeds 9 and 11), equal to CPU's now, every eager mode and compiled:
elu at zero with an infinite input_scale or alpha (the decomposition's NaN), hardtanh_backward with a NaN bound
(gave 0, CPU passes the gradient), addcdiv of mixed or half-precision operands (the decomposition divided
tensor1 / tensor2 first, in their own dtype: 1224.2 for CPU's 1226.8)."""

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

aten = torch.ops.aten
NAN, INF = float("nan"), float("inf")


def _elu(d: str) -> list[torch.Tensor]:
    x = torch.tensor([0.0, -0.0, -1e-30, -1.0, 1e-30, -1e-8, 2.5, NAN, -INF, INF], device=d)
    out = []
    for alpha, scale, input_scale in ((1.0, 1.0, INF), (0.0, 3.645, INF), (INF, 1.0, 1.0), (2.0, 3.0, -INF),
                                      (NAN, 2.0, 1.0)):
        out += [aten.elu(x, alpha, scale, input_scale), aten.elu(x.to(torch.bfloat16), alpha, scale, input_scale)]
    return out


def _hardtanh_backward(d: str) -> list[torch.Tensor]:
    x, g = torch.tensor([-5.0, -1.0, 0.0, 1.0, 5.0, NAN, 7.0], device=d), torch.arange(1.0, 8.0, device=d)
    ints = torch.tensor([-5, -1, 0, 1, 5, 3, 7], device=d)
    return [aten.hardtanh_backward(g, x, lo, hi) for lo, hi in ((-1.0, 1.0), (3.0, NAN), (NAN, 1.0), (NAN, NAN))] + [
        aten.hardtanh_backward(g.to(torch.bfloat16), ints, 3.0, NAN)]


def _addcdiv(d: str) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    out = []
    for dtypes in [(torch.float32,) * 3, (torch.bfloat16,) * 3, (torch.float16, torch.int8, torch.bfloat16),
                   (torch.complex64,) * 3]:
        s, t1, t2 = (torch.randn(16, generator=gen, dtype=torch.float32).mul(5).add(0.5).to(dt).to(d)
                     for dt in dtypes)
        out += [torch.addcdiv(s, t1, t2, value=0.62), torch.addcdiv(s, t1[0], t2, value=-2), torch.addcdiv(s, t1, t2)]
    return out


CASES = {"elu": _elu, "hardtanh_backward": _hardtanh_backward, "addcdiv": _addcdiv}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_exactly_cpu(case: str, mode: str) -> None:
    assert_exactly_cpu(CASES[case], mode)


def test_elu_at_zero_compiled() -> None:
    x = torch.tensor([0.0, -0.0, -1.0, 2.0])
    got = torch.compile(lambda t: aten.elu(t, 1.0, 1.0, INF), backend="tpu")(x.to("tpu"))
    assert torch.equal(got.cpu(), aten.elu(x, 1.0, 1.0, INF))
