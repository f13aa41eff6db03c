"""Direct writes through a reshape (drivers/sim/direct_outputs.py `IntoView`): a ufunc step whose result reaches
a program output only through one reshape (a training forward's saved activation) computes into the output
buffer viewed at its own shape, bit for bit what the copy path gives; an output buffer that is not C-contiguous
(no such view) and a result read by another step too take the copy path."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_direct_outputs import _launch  # the launch that records each direct-write decision
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import direct_outputs
from torchtpu.drivers.sim.driver import SimDriver


def _program(read_again: bool):
    """y = reshape(x * g, (512, 128)) and z = x + g (both outputs); with `read_again` z reads x * g too."""
    b = Builder()
    x = b.input((2, 256, 128), "float32")
    g = b.input((2, 256, 128), "float32")
    t = b.emit("multiply", [x, g])[0]
    y = b.emit("reshape", [t], shape=(512, 128))[0]
    z = b.emit("add", [t if read_again else x, g])[0]
    return b.finish([y, z])


@pytest.mark.parametrize("read_again", [False, True])
def test_reshaped_result_is_written_into_the_output(monkeypatch, read_again):
    drv = SimDriver()
    exe = drv.compile(_program(read_again))
    views = [k for k in exe.payload.direct.direct.values() if isinstance(k, direct_outputs.IntoView)]
    assert len(views) == (0 if read_again else 1)
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((2, 256, 128), np.float32), rng.standard_normal((2, 256, 128), np.float32)
    want = (x * g).reshape(512, 128)
    results = []
    for direct in (True, False):
        y, z = np.full((512, 128), np.nan, np.float32), np.full((2, 256, 128), np.nan, np.float32)
        assert _launch(drv, exe, [x, g], [y, z], direct, monkeypatch) == [direct]
        assert y.tobytes() == want.tobytes()
        results.append((y.tobytes(), z.tobytes()))
    assert results[0] == results[1]


def test_a_strided_output_buffer_takes_the_copy_path(monkeypatch):
    drv = SimDriver()
    exe = drv.compile(_program(False))
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((2, 256, 128), np.float32), rng.standard_normal((2, 256, 128), np.float32)
    y = np.full((128, 512), np.nan, np.float32).T  # (512, 128), not C-contiguous: no (2, 256, 128) view
    z = np.empty((2, 256, 128), np.float32)
    assert _launch(drv, exe, [x, g], [y, z], True, monkeypatch) == [False]
    assert np.array_equal(y, (x * g).reshape(512, 128))
