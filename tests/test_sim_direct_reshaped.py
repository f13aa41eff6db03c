"""Direct writes through a reshape (drivers/sim/direct_outputs.py `IntoView`): a ufunc step whose result reaches
a program output only through one reshape (a training forward's saved activation) computes into the output
buffer viewed at its own shape, bit for bit what the copy path gives; an output buffer that is not C-contiguous
(no such view) takes the copy path. A result read by another step too is written as well (the other step reads
the output buffer: tests/test_sim_direct_shared.py)."""

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
    assert len(views) == 1 and views[0].shared == read_again
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


def test_a_strided_output_buffer_with_a_view_is_written_into(monkeypatch):
    """A compiled graph's output may have a transposed layout (an attention output); where the buffer has a view
    at the step's shape, the step writes through it (before: the whole launch took the copy path)."""
    drv = SimDriver()
    exe = drv.compile(_program(False))
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((2, 256, 128), np.float32), rng.standard_normal((2, 256, 128), np.float32)
    y = np.full((128, 512), np.nan, np.float32).T  # (512, 128), not C-contiguous; viewed at (2, 256, 128)
    z = np.empty((2, 256, 128), np.float32)
    assert _launch(drv, exe, [x, g], [y, z], True, monkeypatch) == [True]
    assert np.array_equal(y, (x * g).reshape(512, 128)) and np.array_equal(z, x + g)


def _merging_program():
    """y = reshape(x * g, (2, 256, 128)) from (512, 128) operands: a view at (512, 128) merges y's first dims."""
    b = Builder()
    x = b.input((512, 128), "float32")
    g = b.input((512, 128), "float32")
    t = b.emit("multiply", [x, g])[0]
    y = b.emit("reshape", [t], shape=(2, 256, 128))[0]
    z = b.emit("add", [x, g])[0]
    return b.finish([y, z])


def test_a_strided_output_buffer_without_a_view_takes_the_copy_path(monkeypatch):
    drv = SimDriver()
    exe = drv.compile(_merging_program())
    assert any(isinstance(k, direct_outputs.IntoView) for k in exe.payload.direct.direct.values())
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((512, 128), np.float32), rng.standard_normal((512, 128), np.float32)
    y = np.full((2, 128, 256), np.nan, np.float32).transpose(0, 2, 1)  # no (512, 128) view
    z = np.empty((512, 128), np.float32)
    assert _launch(drv, exe, [x, g], [y, z], True, monkeypatch) == [False]
    assert np.array_equal(y, (x * g).reshape(2, 256, 128)) and np.array_equal(z, x + g)


def _chain_program(kind: str):
    """y = chain(x * g) from (2, 256, 128) operands: `twice` transpose(transpose(.)) to (2, 256, 128) (a backward's
    weight gradient), `mixed` reshape to (512, 128) then transpose to (128, 512); z = x + g."""
    b = Builder()
    x = b.input((2, 256, 128), "float32")
    g = b.input((2, 256, 128), "float32")
    t = b.emit("multiply", [x, g])[0]
    if kind == "twice":
        y = b.emit("transpose", [b.emit("transpose", [t], permutation=(1, 0, 2))[0]], permutation=(1, 0, 2))[0]
    else:
        y = b.emit("transpose", [b.emit("reshape", [t], shape=(512, 128))[0]], permutation=(1, 0))[0]
    z = b.emit("add", [x, g])[0]
    return b.finish([y, z])


@pytest.mark.parametrize("kind", ["twice", "mixed"])
@pytest.mark.parametrize("layout", ["c", "f"])
def test_a_chain_of_transposes_and_reshapes_is_written_through(monkeypatch, kind, layout):
    drv = SimDriver()
    exe = drv.compile(_chain_program(kind))
    assert any(isinstance(k, direct_outputs.IntoView) for k in exe.payload.direct.direct.values())
    rng = np.random.default_rng(2)
    x, g = rng.standard_normal((2, 256, 128), np.float32), rng.standard_normal((2, 256, 128), np.float32)
    want = x * g if kind == "twice" else (x * g).reshape(512, 128).T
    results = []
    for direct in (True, False):
        y = np.full(want.shape, np.nan, np.float32)
        y = y if layout == "c" else np.full(want.shape[::-1], np.nan, np.float32).T  # a view exists for both
        z = np.empty((2, 256, 128), np.float32)
        assert _launch(drv, exe, [x, g], [y, z], direct, monkeypatch) == [direct]
        assert np.ascontiguousarray(y).tobytes() == np.ascontiguousarray(want).tobytes()
        results.append(np.ascontiguousarray(y).tobytes())
    assert results[0] == results[1]
