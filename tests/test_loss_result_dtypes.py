"""Losses whose operands have different dtypes take CPU's result dtype: huber_loss and binary_cross_entropy the
input's (CPU writes the unreduced loss into a tensor like the input, multiplies the weight in place, then reduces),
mse_loss the promoted dtype also when reduced, smooth_l1_loss_backward the input's. tpu gave float64 for huber_loss,
binary_cross_entropy and smooth_l1_loss_backward and float32 for a reduced
mse_loss of a float32 input and a float64 target."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from refusal_cases import MODES


def _case(name: str, device: str) -> tuple:
    gen = torch.Generator().manual_seed(0)
    x, t = torch.rand(4, 3, generator=gen), torch.rand(4, 3, generator=gen)
    w = torch.rand(4, 3, generator=gen, dtype=torch.float64)
    fn, args = {
        "bce_float64_weight": (F.binary_cross_entropy, (x, t, w)),
        "bce_float64_row_weight": (F.binary_cross_entropy, (x, t, w[0])),
        "huber_float64_target": (F.huber_loss, (x, t.double())),
        "huber_half_input": (F.huber_loss, (x.half(), t)),
        "mse_float64_target": (F.mse_loss, (x, t.double())),
    }[name]
    return fn, tuple(a.to(device) for a in args)


NAMES = ["bce_float64_weight", "bce_float64_row_weight", "huber_float64_target", "huber_half_input",
         "mse_float64_target"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", NAMES)
def test_mixed_dtype_loss_has_cpus_dtype(name: str, reduction: str, mode: str) -> None:
    fn, args = _case(name, "cpu")
    expected = fn(*args, reduction=reduction)
    fn, args = _case(name, "tpu")
    with torch.tpu.eager_mode(mode):
        got = fn(*args, reduction=reduction).cpu()
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, rtol=2e-3 if got.dtype == torch.float16 else 1e-6, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_compiled_mixed_dtype_loss_equals_eager(name: str) -> None:
    fn, args = _case(name, "tpu")
    eager = fn(*args, reduction="mean")
    compiled = torch.compile(lambda *a: fn(*a, reduction="mean"), backend="tpu")(*args)
    assert compiled.dtype == eager.dtype
    assert torch.equal(compiled.cpu(), eager.cpu())


BACKWARD = {
    "float64_target": (torch.float32, torch.float32, torch.float64),
    "float64_grad": (torch.float64, torch.float32, torch.float32),
    "half": (torch.float16, torch.float16, torch.float16),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(BACKWARD))
def test_smooth_l1_loss_backward_has_the_inputs_dtype(name: str, mode: str) -> None:
    gen = torch.Generator().manual_seed(2)
    grad, x, target = (torch.randn(4, 3, generator=gen).to(d) for d in BACKWARD[name])
    expected = torch.ops.aten.smooth_l1_loss_backward(grad, x, target, 0, 0.5)
    with torch.tpu.eager_mode(mode):
        got = torch.ops.aten.smooth_l1_loss_backward(grad.to("tpu"), x.to("tpu"), target.to("tpu"), 0, 0.5).cpu()
    assert got.dtype == expected.dtype
    assert torch.equal(got, expected)
