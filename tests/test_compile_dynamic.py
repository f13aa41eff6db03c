"""Shape buckets under `torch.compile(dynamic=True)` fail closed: an op the padding analysis has no rule for runs
at its exact shape, so results equal CPU's at every length (FFTs mix every position of their axis)."""

from __future__ import annotations

import pytest
import torch
from torchtpu.drivers.ir import Builder

import torchtpu
from torchtpu.compile.buckets import padding_is_safe


@pytest.mark.parametrize("fn", [torch.fft.fft, torch.fft.rfft, torch.fft.ifft], ids=["fft", "rfft", "ifft"])
def test_fft_along_a_dynamic_axis_equals_cpu_at_every_length(tpu, fn):
    torch._dynamo.reset()
    torchtpu.reset_stats()
    f = torch.compile(lambda a: fn(a * 2, dim=-1), backend="tpu", dynamic=True)
    for n in (5, 6, 11, 16, 17):  # each pads to 8, 16 or 32 under pow2
        x = torch.randn(3, n)
        out = f(x.to(tpu))
        assert out.shape == fn(x, dim=-1).shape
        torch.testing.assert_close(out.cpu(), fn(x * 2, dim=-1), rtol=1e-4, atol=1e-4)


def test_fft_on_a_padded_axis_is_unsafe():
    b = Builder()
    x = b.input((4, 8), "complex64")
    (y,) = b.emit("fft", [x], fft_type="FFT", fft_length=(8,))
    program = b.finish([y])
    assert padding_is_safe(program, [{1: "s0"}]) is None
    assert padding_is_safe(program, [{0: "s0"}]) is None  # no rule for fft at all: unsafe on any padded axis



def test_an_int_read_as_a_value_is_never_padded(tpu):
    """A dynamic int the graph adds (`x + n`, `x + x.shape[0]`) keeps its value: padding it to its bucket would
    change the result (it gave x + 8 for n = 2 and 3)."""
    torch._dynamo.reset()
    f = torch.compile(lambda a, n: a + n, backend="tpu", dynamic=True)
    g = torch.compile(lambda a: a * 2 + a.shape[0], backend="tpu", dynamic=True)
    for n in (2, 3, 11):
        x = torch.arange(5.0)
        assert f(x.to(tpu), n).cpu().tolist() == (x + n).tolist()
        y = torch.arange(float(n + 3))
        assert g(y.to(tpu)).cpu().tolist() == (y * 2 + y.shape[0]).tolist()
