"""The sim driver's per-launch numpy error state: every error ignored inside a launch, the caller's state (error
modes, buffer size, callback) back afterwards, also when a step raises, and a changed caller state honoured."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers.base import ExecutionError
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim.driver import SimDriver


def _divide_program():
    b = Builder()
    x, y = b.input((3,), "float32"), b.input((3,), "float32")
    q = b.emit("divide", [x, y])[0]
    return b.finish([b.emit("exponential", [q])[0]])


def _launch(drv, exe, x, y):
    out = np.empty(3, np.float32)
    drv.execute(exe, [x, y], [out])
    return out


def test_launch_ignores_errors_and_restores_the_callers_state(monkeypatch):
    drv = SimDriver()
    exe = drv.compile(_divide_program())
    x, y = np.array([1, 0, 100], np.float32), np.array([0, 0, 1], np.float32)
    seen = []
    original = np.exp

    def spy(v, *args, **kwargs):
        seen.append((np.geterr(), np.getbufsize()))
        return original(v, *args, **kwargs)

    last = exe.payload.last  # the exponential, run by the driver into the output buffer
    assert last is not None and last.op.name == "exponential"
    monkeypatch.setattr(last, "fast", spy)
    ignore = {"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore"}
    with np.errstate(all="raise"):
        before = np.geterr()
        out = _launch(drv, exe, x, y)
        assert np.geterr() == before
        old = np.setbufsize(16384)
        try:
            with np.errstate(divide="warn"):
                _launch(drv, exe, x, y)
                assert np.geterr()["divide"] == "warn"
        finally:
            np.setbufsize(old)
    assert seen == [(ignore, 8192), (ignore, 16384)]
    assert np.isinf(out[0]) and np.isnan(out[1]) and out[2] == np.inf  # float32 exp(100) overflows


def test_state_restored_when_a_step_raises():
    b = Builder()
    x, i = b.input((4,), "float32"), b.input((2,), "int64")
    program = b.finish([b.emit("index_select", [x, i], dimension=0)[0]])
    drv = SimDriver()
    exe = drv.compile(program)
    with np.errstate(all="warn"):
        before = np.geterr()
        with pytest.raises(ExecutionError, match="out of bounds"):
            drv.execute(exe, [np.zeros(4, np.float32), np.array([0, 9])], [np.empty(2, np.float32)])
        assert np.geterr() == before
