"""A fused element-wise group (drivers/sim/fusion.py) writes its results that are program outputs straight into
the output buffers (drivers/sim/direct_outputs.py), as a compiled AdamW step updates its parameters and moments:
the same bits as the copy path, an operand's own memory only where it is the output's exactly (the loop reads
element i before it writes element i), never a shifted overlap, and a strided buffer through a copy."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_direct_outputs import _launch  # the launch that records each direct-write decision
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import fusion
from torchtpu.drivers.sim.driver import SimDriver

SHAPE = (256, 256)  # 65536 elements: fused at the default fusion.MIN_ELEMENTS
N = SHAPE[0] * SHAPE[1]


def _adam_like():
    """m_new = m * g + g; p_new = p - m_new * g (four fusable ops over one shape); outputs [p_new, m_new]."""
    b = Builder()
    p, m, g = (b.input(SHAPE, "float32") for _ in range(3))
    t = b.emit("multiply", [m, g])[0]
    m_new = b.emit("add", [t, g])[0]
    u = b.emit("multiply", [m_new, g])[0]
    p_new = b.emit("subtract", [p, u])[0]
    return b.finish([p_new, m_new])


def _expected(p, m, g):
    m_new = m * g + g
    return [p - m_new * g, m_new]


def _data(seed: int):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(SHAPE, np.float32) for _ in range(3)]


def test_fused_group_writes_its_outputs_in_place_with_the_copy_paths_bits(monkeypatch):
    drv = SimDriver()
    exe = drv.compile(_adam_like())
    plan = exe.payload
    fused = [s for s in plan.steps if isinstance(s, fusion.FusedStep)]
    assert len(fused) == 1 and plan.direct is not None
    assert list(plan.direct.direct.values()) == [(1, 0)] or list(plan.direct.direct.values()) == [(0, 1)]
    assert plan.direct.copies == []
    p0, m0, g = _data(0)
    expected = _expected(p0, m0, g)
    for direct in (True, False):
        p, m = p0.copy(), m0.copy()  # updated in their own buffers, as an optimizer's step
        assert _launch(drv, exe, [p, m, g], [p, m], direct, monkeypatch) == [direct]
        assert np.array_equal(p, expected[0]) and np.array_equal(m, expected[1])
        fresh = [np.full(SHAPE, np.nan, np.float32) for _ in range(2)]
        assert _launch(drv, exe, [p0, m0, g], fresh, direct, monkeypatch) == [direct]
        assert all(np.array_equal(o, e) for o, e in zip(fresh, expected))


@pytest.mark.parametrize("shift", [1, -1, 7])
def test_shifted_overlap_with_an_operand_takes_the_copy_path(monkeypatch, shift):
    drv = SimDriver()
    exe = drv.compile(_adam_like())
    assert exe.payload.direct is not None
    p0, m0, g = _data(1)
    expected = _expected(p0, m0, g)
    memory = np.zeros(N + 16, np.float32)
    p = memory[8:8 + N].reshape(SHAPE)
    p[...] = p0
    out = memory[8 + shift:8 + shift + N].reshape(SHAPE)  # overlaps p one element off: not the same elements
    m = np.empty(SHAPE, np.float32)
    assert _launch(drv, exe, [p, m0, g], [out, m], True, monkeypatch) == [False]
    assert np.array_equal(out, expected[0]) and np.array_equal(m, expected[1])


def test_operand_of_the_same_bytes_in_another_order_takes_the_copy_path(monkeypatch):
    drv = SimDriver()
    exe = drv.compile(_adam_like())
    p0, m0, g = _data(2)
    base = p0.T.copy()
    p = base.T  # column-major: p's element i is not at the output's (C order) element i address
    expected = _expected(p, m0, g)
    out = np.lib.stride_tricks.as_strided(base, SHAPE, (SHAPE[1] * 4, 4))  # the same bytes, row-major
    m = np.empty(SHAPE, np.float32)
    assert _launch(drv, exe, [p, m0, g], [out, m], True, monkeypatch) == [False]
    assert np.array_equal(out, expected[0]) and np.array_equal(m, expected[1])


def test_strided_output_buffer_is_copied_into(monkeypatch):
    drv = SimDriver()
    exe = drv.compile(_adam_like())
    p0, m0, g = _data(3)
    expected = _expected(p0, m0, g)
    out0 = np.zeros(SHAPE, np.float32).T  # not C-contiguous: the loop writes a temporary, copied into it
    out1 = np.zeros(SHAPE, np.float32)
    assert _launch(drv, exe, [p0, m0, g], [out0, out1], True, monkeypatch) == [True]
    assert np.array_equal(out0, expected[0]) and np.array_equal(out1, expected[1])


def test_operand_read_by_a_later_step_is_not_overwritten_early(monkeypatch):
    """p_new = p - (m * g + g) * g written into p, then q = p * g (p's old value) read after the group."""
    b = Builder()
    p, m, g = (b.input(SHAPE, "float32") for _ in range(3))
    t = b.emit("multiply", [m, g])[0]
    m_new = b.emit("add", [t, g])[0]
    u = b.emit("multiply", [m_new, g])[0]
    p_new = b.emit("subtract", [p, u])[0]
    q = b.emit("sine", [p])[0]  # not fusable: a step after the group
    program = b.finish([p_new, m_new, q])
    drv = SimDriver()
    exe = drv.compile(program)
    assert exe.payload.direct is not None
    p0, m0, g = _data(4)
    p, m = p0.copy(), m0.copy()
    qo = np.empty(SHAPE, np.float32)
    assert _launch(drv, exe, [p, m, g], [p, m, qo], True, monkeypatch) == [False]
    expected = _expected(p0, m0, g)
    assert np.array_equal(p, expected[0]) and np.array_equal(m, expected[1])
    with np.errstate(all="ignore"):
        assert np.array_equal(qo, np.sin(p0))
