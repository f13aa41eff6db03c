"""Direct writes of results that other steps read too, or that are several program outputs
(drivers/sim/direct_outputs.py `SHARED`): the step computes into the output buffer, the other readers read it
there and the slot's other outputs are copied from it. Bit for bit what the copy path and the plans without them
give, with odd sizes, NaN, inf and -0.0 in the operands; no output is visible through another or through an
input; a buffer whose layout a layout-dependent reader (a sum) would see takes the copy path."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_direct_outputs import _launch  # the launch that records each direct-write decision
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import direct_outputs
from torchtpu.drivers.sim.driver import SimDriver

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf and NaN operands
SHAPE = (3, 257, 67)  # odd sizes, 51657 elements: written directly
FLAT = (3 * 257, 67)


def _operands(seed: int, shape=SHAPE) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, g = rng.standard_normal(shape, np.float32), rng.standard_normal(shape, np.float32)
    x.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 3e38]
    g.reshape(-1)[:6] = [1.0, -0.0, 2.0, -1.0, -0.0, 10.0]
    return x, g


def _shared_program(reader: str):
    """y = reshape(t, FLAT) with t = x * g; z = reader(t): t's other reader (an add, or a sum over the last
    axis, whose summation order follows its operand's layout)."""
    b = Builder()
    x = b.input(SHAPE, "float32")
    g = b.input(SHAPE, "float32")
    t = b.emit("multiply", [x, g])[0]
    y = b.emit("reshape", [t], shape=FLAT)[0]
    if reader == "add":
        z = b.emit("add", [t, g])[0]
    else:
        z = b.emit("reduce", [t], kind="sum", dimensions=(2,))[0]
    return b.finish([y, z])


def _compiled(program, shared: bool):
    direct_outputs.SHARED = shared
    try:
        return SimDriver().compile(program)
    finally:
        direct_outputs.SHARED = True


def _run(exe, inputs, outputs, direct, monkeypatch) -> tuple[list[bool], list[bytes]]:
    seen = _launch(SimDriver(), exe, inputs, outputs, direct, monkeypatch)
    return seen, [np.ascontiguousarray(o).tobytes() for o in outputs]


@pytest.mark.parametrize("reader", ["add", "sum"])
def test_a_result_read_again_is_written_through_its_reshape(monkeypatch, reader):
    program = _shared_program(reader)
    new, old = _compiled(program, True), _compiled(program, False)
    views = [k for k in new.payload.direct.direct.values() if isinstance(k, direct_outputs.IntoView)]
    assert len(views) == 1 and views[0].shared and views[0].layout == (reader == "sum")
    assert old.payload.direct is None or not any(
        isinstance(k, direct_outputs.IntoView) for k in old.payload.direct.direct.values())
    x, g = _operands(0)
    z_shape = SHAPE if reader == "add" else SHAPE[:2]
    results = []
    for exe, direct in ((new, True), (new, False), (old, True)):
        outs = [np.full(FLAT, np.nan, np.float32), np.full(z_shape, np.nan, np.float32)]
        seen, got = _run(exe, [x, g], outs, direct, monkeypatch)
        assert seen == ([direct] if exe.payload.direct is not None else [])
        results.append(got)
    assert results[0] == results[1] == results[2]
    want = (x * g).reshape(FLAT)
    assert results[0][0] == want.tobytes()


def test_a_strided_buffer_the_other_reader_would_see_takes_the_copy_path(monkeypatch):
    """The output (771, 67) laid out transposed has a view at (3, 257, 67), not C-contiguous: the sum would read
    it in another order, so the launch copies instead, with the same bits."""
    exe = _compiled(_shared_program("sum"), True)
    x, g = _operands(1)
    y = np.full(FLAT[::-1], np.nan, np.float32).T
    (into,) = [k for k in exe.payload.direct.direct.values() if isinstance(k, direct_outputs.IntoView)]
    assert into.view(y) is not None and not into.view(y).flags.c_contiguous
    z = np.full(SHAPE[:2], np.nan, np.float32)
    seen, got = _run(exe, [x, g], [y, z], True, monkeypatch)
    assert seen == [False]
    t = x * g
    assert got == [t.reshape(FLAT).tobytes(), np.add.reduce(t, axis=2).tobytes()]


def _repeated_program():
    """t = x * g returned twice (a training forward's result saved for backward and returned), z = x + g."""
    b = Builder()
    x = b.input(SHAPE, "float32")
    g = b.input(SHAPE, "float32")
    t = b.emit("multiply", [x, g])[0]
    z = b.emit("add", [x, g])[0]
    return b.finish([t, z, t])


def test_a_result_that_is_two_outputs_is_written_once_and_copied(monkeypatch):
    program = _repeated_program()
    new, old = _compiled(program, True), _compiled(program, False)
    assert [k for _, k in new.payload.direct.copies] == [2]  # t written into output 0, copied into output 2
    assert sorted(k for _, k in old.payload.direct.copies) == [0, 2]
    x, g = _operands(2)
    results = []
    for exe, direct in ((new, True), (new, False), (old, True)):
        outs = [np.full(SHAPE, np.nan, np.float32) for _ in range(3)]
        seen, got = _run(exe, [x, g], outs, direct, monkeypatch)
        assert seen == [direct]
        outs[0][...] = 7.0  # the outputs are buffers of their own: writing one shows through no other
        assert np.array_equal(outs[2], x * g, equal_nan=True)
        results.append(got)
    assert results[0] == results[1] == results[2]
    assert results[0][0] == results[0][2] == (x * g).tobytes()


def test_two_outputs_in_one_buffer_or_in_an_input_take_a_safe_path(monkeypatch):
    """Both outputs of t given the same buffer overlap: the copy path. The second given x's own buffer (an
    in-place update of x, read by z after t): written directly, z still reads x's old value."""
    exe = _compiled(_repeated_program(), True)
    x0, g = _operands(3)
    want_t, want_z = (x0 * g).tobytes(), (x0 + g).tobytes()
    same = np.full(SHAPE, np.nan, np.float32)
    seen, got = _run(exe, [x0, g], [same, np.empty(SHAPE, np.float32), same], True, monkeypatch)
    assert seen == [False] and got[0] == want_t and got[1] == want_z
    x = x0.copy()
    first, z = np.full(SHAPE, np.nan, np.float32), np.full(SHAPE, np.nan, np.float32)
    seen, got = _run(exe, [x, g], [first, z, x], True, monkeypatch)
    assert seen == [True] and got == [want_t, want_z, want_t]
    assert not np.shares_memory(first, x)


def test_a_strided_first_buffer_of_a_repeated_result_is_written_and_copied(monkeypatch):
    """The copies into the slot's other outputs read the first buffer in its layout: element by element, the same
    values as from the new array they read before."""
    exe = _compiled(_repeated_program(), True)
    x, g = _operands(4)
    first = np.full(SHAPE[::-1], np.nan, np.float32).T
    outs = [first, np.empty(SHAPE, np.float32), np.empty(SHAPE, np.float32)]
    seen, got = _run(exe, [x, g], outs, True, monkeypatch)
    assert seen == [True] and got == [(x * g).tobytes(), (x + g).tobytes(), (x * g).tobytes()]


def test_a_strided_buffer_that_a_later_sum_reads_takes_the_copy_path(monkeypatch):
    """t = x * g is an output and read by a sum: written into a transposed buffer, the sum would read t in that
    layout and add in another order (different bits, found in session 28); the launch copies instead."""
    b = Builder()
    x, g = b.input(SHAPE, "float32"), b.input(SHAPE, "float32")
    t = b.emit("multiply", [x, g])[0]
    exe = SimDriver().compile(b.finish([t, b.emit("reduce", [t], kind="sum", dimensions=(2,))[0]]))
    x, g = _operands(5)
    x *= 1e3
    results = []
    for direct, layout in ((True, "c"), (True, "f"), (False, "f")):
        t_out = np.full(SHAPE, np.nan, np.float32) if layout == "c" else np.full(SHAPE[::-1], np.nan, np.float32).T
        seen, got = _run(exe, [x, g], [t_out, np.empty(SHAPE[:2], np.float32)], direct, monkeypatch)
        assert seen == [direct and layout == "c"]
        results.append(got)
    assert results[0] == results[1] == results[2]
    assert results[0][1] == np.add.reduce(x * g, axis=2).tobytes()
