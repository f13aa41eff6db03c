"""Lowerings with a `prepare` step run it under torch.compile too: det/slogdet factor A^T for C-contiguous real
inputs (as ATen does), which the backward formulas depend on; compiled gradients equal eager's."""

from __future__ import annotations

import pytest
import torch

import torchtpu


@pytest.mark.parametrize("fn", [lambda a: torch.linalg.det(a), lambda a: torch.linalg.slogdet(a)[1],
                                lambda a: torch.mul(*torch.linalg.slogdet(a))], ids=["det", "logabsdet", "slogdet"])
def test_compiled_det_and_slogdet_gradients_equal_eager(tpu, fn):
    torch._dynamo.reset()
    torch.manual_seed(0)
    a = torch.randn(3, 4, 4, dtype=torch.float32) + 2 * torch.eye(4)
    with torchtpu.precision("HIGHEST"):
        eager_in = a.to(tpu).requires_grad_()
        fn(eager_in).sum().backward()
        compiled_in = a.to(tpu).requires_grad_()
        torch.compile(fn, backend="tpu")(compiled_in).sum().backward()
    cpu_in = a.clone().requires_grad_()
    fn(cpu_in).sum().backward()
    torch.testing.assert_close(compiled_in.grad.cpu(), eager_in.grad.cpu(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(compiled_in.grad.cpu(), cpu_in.grad, rtol=1e-4, atol=1e-4)
