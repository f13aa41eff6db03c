"""Direct output writes (drivers/sim/direct_outputs.py): a ufunc step whose result is a program output computes
into the caller's output buffer, bit for bit what the copy path gives, and only where no later read can see it:
an output updated in place whose old value is still read, output buffers that overlap, or a later step that may
raise all take the copy path; a failing step is still named."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers.base import ExecutionError
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import direct_outputs
from torchtpu.drivers.sim.driver import SimDriver

N = direct_outputs.MIN_TOTAL  # elements of a one-dimensional output big enough to be written directly


def _two_outputs(read_after: bool):
    """p_new = p * g + g (one output), m_new = g * g (another); with `read_after`, m_new reads p (the input)
    after p_new is computed."""
    b = Builder()
    p = b.input((256, 64), "float32")
    g = b.input((256, 64), "float32")
    t = b.emit("multiply", [p, g])[0]
    p_new = b.emit("add", [t, g])[0]
    m_new = b.emit("multiply", [p if read_after else g, g])[0]
    return b.finish([p_new, m_new])


def _launch(drv, exe, inputs, outputs, direct: bool, monkeypatch, seen: list[bool] | None = None) -> list[bool]:
    seen = [] if seen is None else seen
    real = direct_outputs.DirectPlan.allowed

    def allowed(self, i, o):
        seen.append(real(self, i, o) if direct else False)
        return seen[-1]

    monkeypatch.setattr(direct_outputs.DirectPlan, "allowed", allowed)
    try:
        drv.execute(exe, inputs, outputs)
    finally:
        monkeypatch.undo()
    return seen


@pytest.mark.parametrize("read_after", [False, True])
def test_direct_writes_match_the_copy_path_in_place_and_fresh(monkeypatch, read_after):
    drv = SimDriver()
    exe = drv.compile(_two_outputs(read_after))
    assert exe.payload.direct is not None and len(exe.payload.direct.direct) == 2
    rng = np.random.default_rng(0)
    p0, g = rng.standard_normal((256, 64), np.float32), rng.standard_normal((256, 64), np.float32)
    expected = [p0 * g + g, (p0 if read_after else g) * g]
    for direct in (True, False):
        fresh = [np.full((256, 64), np.nan, np.float32) for _ in range(2)]
        seen = _launch(drv, exe, [p0.copy(), g], fresh, direct, monkeypatch)
        assert seen == [direct] and all(np.array_equal(o, e) for o, e in zip(fresh, expected))
        p = p0.copy()  # p_new written into p's own buffer (an optimizer's parameter update)
        m = np.empty((256, 64), np.float32)
        seen = _launch(drv, exe, [p, g], [p, m], direct, monkeypatch)
        # p is read after p_new is made when read_after: the write into p must wait for the copy path
        assert seen == [direct and not read_after]
        assert np.array_equal(p, expected[0]) and np.array_equal(m, expected[1])


def test_strided_output_buffer_gets_the_same_bits(monkeypatch):
    drv = SimDriver()
    exe = drv.compile(_two_outputs(False))
    rng = np.random.default_rng(1)
    p, g = rng.standard_normal((256, 64), np.float32), rng.standard_normal((256, 64), np.float32)
    base = np.zeros((64, 256), np.float32)
    out0, out1 = base.T, np.zeros((256, 64), np.float32)  # a transposed (column-major) output buffer
    assert _launch(drv, exe, [p, g], [out0, out1], True, monkeypatch) == [True]
    assert np.array_equal(out0, p * g + g) and np.array_equal(out1, g * g)


def test_overlapping_output_buffers_take_the_copy_path(monkeypatch):
    drv = SimDriver()
    exe = drv.compile(_two_outputs(False))
    p, g = np.ones((256, 64), np.float32), np.full((256, 64), 2, np.float32)
    shared = np.zeros((256, 64), np.float32)
    assert _launch(drv, exe, [p, g], [shared, shared], True, monkeypatch) == [False]
    assert np.array_equal(shared, g * g)  # outputs written in order, as before: the last one wins


def test_no_early_in_place_write_before_a_step_that_may_raise(monkeypatch):
    b = Builder()
    p = b.input((N,), "float32")
    idx = b.input((2,), "int64")
    p_new = b.emit("add", [p, p])[0]
    checked = b.emit("check_index", [idx], low=0, size=8, ignore=None, error="IndexError",
                     message="index {} is out of bounds for size 8")[0]  # raises at run time
    taken = b.emit("convert", [checked], dtype="float32")[0]
    program = b.finish([p_new, taken])
    drv = SimDriver()
    exe = drv.compile(program)
    assert exe.payload.direct is not None
    buf = np.arange(N, dtype=np.float32)
    out = np.zeros((2,), np.float32)
    with pytest.raises(ExecutionError, match="out of bounds") as info:  # (check_index does not look at p)
        _launch(drv, exe, [buf, np.array([1, 99], np.int64)], [buf, out], True, monkeypatch)
    assert isinstance(info.value, IndexError)
    assert np.array_equal(buf, np.arange(N, dtype=np.float32))  # the parameter is as it was



def test_a_failing_step_is_named_on_the_direct_path(monkeypatch):
    b = Builder()
    p = b.input((N,), "float32")
    idx = b.input((2,), "int64")
    p_new = b.emit("add", [p, p])[0]
    checked = b.emit("check_index", [idx], low=0, size=8, ignore=None, error="IndexError",
                     message="index {} is out of bounds for size 8")[0]
    program = b.finish([p_new, b.emit("convert", [checked], dtype="float32")[0]])
    drv = SimDriver()
    exe = drv.compile(program)
    assert exe.payload.direct is not None
    fresh = [np.zeros((N,), np.float32), np.zeros((2,), np.float32)]  # no overlap with the inputs: direct
    seen: list[bool] = []
    with pytest.raises(ExecutionError, match=r"IR op #1 check_index"):
        _launch(drv, exe, [np.ones(N, np.float32), np.array([1, 99], np.int64)], fresh, True, monkeypatch, seen)
    assert seen == [True]


def test_small_outputs_are_copied():
    b = Builder()
    x = b.input((8, 8), "float32")
    program = b.finish([b.emit("add", [x, x])[0], b.emit("multiply", [x, x])[0]])
    assert SimDriver().compile(program).payload.direct is None  # the check would cost more than the copies


def test_a_result_viewing_an_output_the_steps_wrote_is_not_copied_twice(monkeypatch):
    """y = p * g is written straight into output 0; output 1 is y reshaped (a view of output 0's buffer) and
    output 2 is p transposed (a view of an input): only outputs 1 and 2 are copied after the steps, and neither
    write touches output 0, so the reshape is copied from output 0's memory as it is (no defensive copy first,
    as for a saved activation and its reshape in GPT-2's training forward); the values are the copy path's."""
    from torchtpu.drivers.sim import driver as sim_driver

    b = Builder()
    p = b.input((256, 64), "float32")
    g = b.input((256, 64), "float32")
    y = b.emit("multiply", [p, g])[0]
    pt = b.emit("transpose", [p], permutation=(1, 0))[0]
    drv = SimDriver()
    exe = drv.compile(b.finish([y, b.emit("reshape", [y], shape=(64, 256))[0], pt]))
    assert [k for _, k in exe.payload.direct.copies] == [1, 2]
    rng = np.random.default_rng(2)
    p0, g0 = rng.standard_normal((256, 64), np.float32), rng.standard_normal((256, 64), np.float32)
    copied: list[bool] = []
    real = sim_driver.unshared

    def unshared(results, outputs):
        out = real(results, outputs)
        copied.extend(o is not r for o, r in zip(out, results))
        return out

    for direct in (True, False):
        # caller memory (not owned by numpy), as a storage's buffer
        outs = [np.frombuffer(bytearray(256 * 64 * 4), np.float32).reshape(shape)
                for shape in ((256, 64), (64, 256), (64, 256))]
        copied.clear()
        monkeypatch.setattr(sim_driver, "unshared", unshared)
        assert _launch(drv, exe, [p0, g0], outs, direct, monkeypatch) == [direct]
        assert np.array_equal(outs[0], p0 * g0) and np.array_equal(outs[1], (p0 * g0).reshape(64, 256))
        assert np.array_equal(outs[2], p0.T)
        if direct:
            assert copied == [False, False]
