"""Complex gradients of sigmoid and tanh against CPU: ATen's backward kernels take the conjugate of the local
derivative (sigmoid: grad * conj((1 - y) * y); tanh: grad * conj(1 - y * y)). Found by the schema fuzzer (seed 3):
sigmoid_backward of a complex output was grad * (1 - y) * y, a silent wrong gradient."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES


def _inputs(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    g = torch.randn(6, 5, dtype=torch.complex64, generator=gen)
    y = torch.randn(6, 5, dtype=torch.complex64, generator=gen)
    return g.to(device), y.to(device)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["sigmoid_backward", "tanh_backward"])
def test_backward_kernel_of_a_complex_output_equals_cpu(op: str, mode: str) -> None:
    fn = getattr(torch.ops.aten, op)
    expected = fn(*_inputs("cpu"))
    with torch.tpu.eager_mode(mode):
        got = fn(*_inputs("tpu")).cpu()
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", [torch.sigmoid, torch.tanh], ids=["sigmoid", "tanh"])
def test_autograd_of_a_complex_activation_equals_cpu(fn, mode: str) -> None:
    x = torch.tensor([0.2 + 0.4j, -1.1 + 0.3j, 0.7 - 0.9j])
    xc = x.clone().requires_grad_()
    fn(xc).abs().sum().backward()
    with torch.tpu.eager_mode(mode):
        xt = x.to("tpu").requires_grad_()
        fn(xt).abs().sum().backward()
        grad = xt.grad.cpu()
    torch.testing.assert_close(grad, xc.grad, rtol=1e-5, atol=1e-6)


def test_compiled_complex_sigmoid_backward_equals_eager() -> None:
    g, y = _inputs("tpu")
    compiled = torch.compile(lambda a, b: torch.ops.aten.sigmoid_backward(a, b), backend="tpu")
    torch.testing.assert_close(compiled(g, y).cpu(), torch.ops.aten.sigmoid_backward(*_inputs("cpu")),
                               rtol=1e-6, atol=1e-6)
