"""smooth_l1_loss_backward as CPU's kernel computes it: norm * (|d| >= beta ? ±1 : d / beta) * grad, so a NaN
d = self - target gives NaN (the upstream decomposition's sign(NaN) gave 0: fuzzer seed 5) and d = 0 with beta = 0
gives -grad. Compared with CPU bit for bit (sizes a multiple of CPU's vector width, where its vectorized formula
runs) in every eager mode, through grad_input= and under torch.compile."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

NAN = float("nan")


def _operands(device: str, beta: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    s, t, grad = (torch.randn(2, 16, generator=g) for _ in range(3))
    s[0, 3], s[1, 0], t[1, 1] = NAN, 0.0, NAN
    s[0, 5], t[0, 5] = 0.0, 0.0
    t[0, 7], t[0, 8] = s[0, 7] + beta, s[0, 8] - beta
    return grad.to(device), s.to(device), t.to(device)


def _calls(device: str) -> list[torch.Tensor]:
    out = []
    for beta in (0.348, 0.0):
        grad, s, t = _operands(device, beta)
        for reduction in (0, 1, 2):
            g = grad if reduction == 0 else grad[0, 0]
            out.append(torch.ops.aten.smooth_l1_loss_backward(g, s, t, reduction, beta))
        gi = torch.empty_like(s)
        out.append(torch.ops.aten.smooth_l1_loss_backward.grad_input(grad, s, t, 0, beta, grad_input=gi))
    return out


def _same(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a.cpu(), b, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("mode", MODES)
def test_matches_cpu(mode: str) -> None:
    assert_exactly_cpu(_calls, mode)


def test_compiled_matches_cpu() -> None:
    torch._dynamo.reset()
    grad, s, t = _operands("cpu", 0.348)
    fn = torch.compile(lambda a, b, c: torch.ops.aten.smooth_l1_loss_backward(a, b, c, 0, 0.348) * 1.0,
                       backend="tpu")
    _same(fn(grad.to("tpu"), s.to("tpu"), t.to("tpu")), torch.ops.aten.smooth_l1_loss_backward(grad, s, t, 0, 0.348))


def test_autograd_matches_cpu() -> None:
    grads = []
    for device in ("cpu", "tpu"):
        s = torch.tensor([NAN, 0.5, 0.1, -2.0] * 4, device=device, requires_grad=True)  # CPU: vectorized
        torch.nn.functional.smooth_l1_loss(s, torch.zeros(16, device=device), beta=0.348).backward()
        grads.append(s.grad.cpu())
    assert grads[1][0].isnan()
    _same(grads[1], grads[0])
