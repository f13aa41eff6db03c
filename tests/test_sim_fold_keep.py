"""Constant folding through big intermediates (drivers/sim/driver.py `build_steps`): a causal-mask chain (iota,
int64 differences, compares, a select over (T, T)) runs once at compile time and the plan keeps only the mask
its steps read, with the values of running it; a plan that would keep more than FOLD_KEEP_BYTES, or output a
folded value over FOLD_MAX_BYTES, is built as before (only small constants folded)."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import driver as sim_driver
from torchtpu.drivers.sim.driver import SimDriver

T = 256  # (T, T) int64: 512 KiB, over FOLD_MAX_BYTES


def _masked(output_mask: bool = False):
    """x + where(col - row <= 0 and not col == row + 7, 0, -inf); with `output_mask` the mask is an output."""
    b = Builder()
    x = b.input((T, T), "float32")
    row = b.emit("iota", [], shape=(T, T), dtype="int64", dimension=0)[0]
    col = b.emit("iota", [], shape=(T, T), dtype="int64", dimension=1)[0]
    diff = b.emit("subtract", [col, row])[0]
    zero = b.emit("constant", [], value=0, shape=(), dtype="int64")[0]
    zero_b = b.emit("broadcast_in_dim", [zero], shape=(T, T), broadcast_dimensions=())[0]
    seven = b.emit("constant", [], value=7, shape=(), dtype="int64")[0]
    seven_b = b.emit("broadcast_in_dim", [seven], shape=(T, T), broadcast_dimensions=())[0]
    causal = b.emit("compare", [diff, zero_b], direction="LE")[0]
    other = b.emit("compare", [diff, seven_b], direction="NE")[0]
    keep = b.emit("and", [causal, other])[0]
    f0 = b.emit("constant", [], value=0.0, shape=(), dtype="float32")[0]
    ninf = b.emit("constant", [], value=float("-inf"), shape=(), dtype="float32")[0]
    mask = b.emit("select", [keep, b.emit("broadcast_in_dim", [f0], shape=(T, T), broadcast_dimensions=())[0],
                             b.emit("broadcast_in_dim", [ninf], shape=(T, T), broadcast_dimensions=())[0]])[0]
    y = b.emit("add", [x, mask])[0]
    return b.finish([y, mask] if output_mask else [y])


def _expected(x):
    row, col = np.indices((T, T))
    diff = col - row
    return x + np.where((diff <= 0) & (diff != 7), np.float32(0), np.float32(-np.inf))


def _run(drv, program, x):
    outs = [np.empty(v.shape, np.float32) for v in program.outputs]
    drv.execute(drv.compile(program), [x], outs)
    return outs


def _kept_bytes(exe) -> int:
    roots = {}
    for v in exe.payload.padding:
        if v is not None:
            root = v
            while isinstance(root.base, np.ndarray):
                root = root.base
            roots[id(root)] = root.nbytes
    return sum(roots.values())


def test_mask_chain_folded_and_only_the_mask_kept():
    drv = SimDriver()
    program = _masked()
    exe = drv.compile(program)
    assert [s.op.name for s in exe.payload.steps] == [] and exe.payload.last.op.name == "add"
    assert _kept_bytes(exe) <= T * T * 4  # the float mask; the int64 and bool intermediates are dropped
    x = np.random.default_rng(0).standard_normal((T, T)).astype(np.float32)
    assert np.array_equal(_run(drv, program, x)[0], _expected(x))


@pytest.mark.parametrize("over", ["keep", "output"])
def test_over_the_keep_limits_builds_as_before(monkeypatch, over):
    if over == "keep":
        monkeypatch.setattr(sim_driver, "FOLD_KEEP_BYTES", 1024)
    program = _masked(output_mask=over == "output")
    drv = SimDriver()
    exe = drv.compile(program)
    names = [inner.op.name for s in exe.payload.steps for inner in getattr(s, "steps", [s])]  # (fused loops' too)
    assert "subtract" in names and "and" in names  # the int64 differences computed per launch again
    x = np.random.default_rng(1).standard_normal((T, T)).astype(np.float32)
    outs = _run(drv, program, x)
    assert np.array_equal(outs[0], _expected(x))
    if over == "output":
        assert np.array_equal(outs[1], _expected(np.zeros((T, T), np.float32)))
