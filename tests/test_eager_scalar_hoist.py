"""Eager ops with a float scalar argument: a new value traces again but reuses the compiled executable, and the
result is bit-identical to the constant-folded program."""

import numpy as np
import torch

import torchtpu  # noqa: F401
from torchtpu import runtime
from torchtpu.execution import eager


def test_new_float_scalar_reuses_the_executable(tpu):
    x = torch.randn(5, 7).to("tpu")
    compiles = None
    for v in (1.25, 0.9, 0.99, 0.999, 3.0e-7, -2.5):
        got = (x / v).cpu()
        torch.testing.assert_close(got, x.cpu() / v, rtol=0, atol=0)
        y = x.clone()
        y.addcdiv_(x, x.abs() + 1.0, value=-v)
        torch.testing.assert_close(y.cpu(), x.cpu().addcdiv(x.cpu(), x.cpu().abs() + 1.0, value=-v))
        if compiles is None:
            compiles = runtime.driver().cache_stats.compiles
    assert runtime.driver().cache_stats.compiles == compiles  # later values: traced again, compiled never


def test_hoisted_program_matches_the_folded_one(tpu):
    x = torch.randn(4, 3).to("tpu")
    y = torch.randn(4, 3).to("tpu")
    key, tensors, _ = eager.signature("aten.add.Tensor", (x, y), {"alpha": 0.3}, ())
    torch.add(x, y, alpha=0.3)
    traced = eager._cache[key]
    assert traced.scalars and traced.launch is not traced.program
    drv = runtime.driver()
    ins = [runtime.buffer(t) for t in tensors]
    a = np.empty((4, 3), np.float32)
    b = np.empty((4, 3), np.float32)
    drv.execute(drv.compile(traced.program), ins, [a])
    drv.execute(drv.compile(traced.launch), ins + list(traced.scalars), [b])
    assert a.tobytes() == b.tobytes()
