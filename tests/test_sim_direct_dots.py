"""Products written straight into the launch's output buffers (drivers/sim/direct_outputs.py, fast.py `dot`,
sim/mxu.py `matmul(out=)`): a fast DEFAULT product whose result is a program output, or reaches one through one
reshape (a training forward's saved activation), has BLAS write the output buffer itself, bit for bit what the
copy path and a plain `mxu.matmul` give, with no copy into that buffer; the exact order, a strided buffer and the
other precisions are computed and copied in (the same bits)."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_direct_outputs import _launch  # the launch that records each direct-write decision
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import direct_outputs, fast
from torchtpu.drivers.sim.driver import SimDriver
from torchtpu.sim import mxu

# odd sizes: (3, 67, 45) @ (45, 131) as one (201, 45) @ (45, 131) product, and a batched (3, 67, 45) @ (3, 45, 29)
X, W, WB = (3, 67, 45), (45, 131), (3, 45, 29)


def _program(precision: str = "DEFAULT"):
    """y = reshape(dot(x, w), (201, 131)) (through a reshape), z = dot(x, wb) batched over dim 0 (an output
    itself), u = x * x (a ufunc, as before)."""
    b = Builder()
    x, w, wb = b.input(X, "float32"), b.input(W, "float32"), b.input(WB, "float32")
    t = b.emit(
        "dot_general",
        [x, w],
        lhs_batch=(),
        rhs_batch=(),
        lhs_contract=(2,),
        rhs_contract=(0,),
        precision=precision,
        out_dtype="float32",
    )[0]
    y = b.emit("reshape", [t], shape=(201, 131))[0]
    z = b.emit(
        "dot_general",
        [x, wb],
        lhs_batch=(0,),
        rhs_batch=(0,),
        lhs_contract=(2,),
        rhs_contract=(1,),
        precision=precision,
        out_dtype="float32",
    )[0]
    u = b.emit("multiply", [x, x])[0]
    return b.finish([y, z, u])


def _operands(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s, np.float32) for s in (X, W, WB)]


def _expected(x: np.ndarray, w: np.ndarray, wb: np.ndarray, precision: str = "DEFAULT") -> list[np.ndarray]:
    y = mxu.matmul(x.reshape(1, 201, 45), w.reshape(1, 45, 131), precision=precision).reshape(201, 131)
    return [y, mxu.matmul(x, wb, precision=precision), x * x]


def _fresh() -> list[np.ndarray]:
    return [np.full(s, np.nan, np.float32) for s in ((201, 131), (3, 67, 29), X)]


def _copies_into(targets: list[np.ndarray], monkeypatch) -> list[int]:
    """Counts the `np.copyto` calls whose destination shares memory with each of `targets` (the returned list
    fills in while the patch is on)."""
    counts = [0] * len(targets)
    real = np.copyto

    def copyto(dst, src, *args, **kwargs):
        for i, t in enumerate(targets):
            counts[i] += bool(np.shares_memory(dst, t))
        return real(dst, src, *args, **kwargs)

    monkeypatch.setattr(np, "copyto", copyto)
    return counts


def test_both_products_are_planned_as_direct_writes():
    exe = SimDriver().compile(_program())
    direct = exe.payload.direct.direct
    assert len(direct) == 3 and sum(isinstance(k, direct_outputs.IntoView) for k in direct.values()) == 1
    assert {direct_outputs._written(exe.payload.steps[n], k)[0][1] for n, k in direct.items()} == {0, 1, 2}


@pytest.mark.parametrize("mode", ["fast", "exact"])
def test_direct_products_match_the_copy_path_and_matmul(monkeypatch, mode):
    drv = SimDriver()
    exe = drv.compile(_program())
    x, w, wb = _operands(0)
    mxu.set_mode(mode)
    try:
        want = _expected(x, w, wb)
        results = []
        for direct in (True, False):
            outs = _fresh()
            assert _launch(drv, exe, [x, w, wb], outs, direct, monkeypatch) == [direct]
            assert all(o.tobytes() == e.tobytes() for o, e in zip(outs, want))
            results.append([o.tobytes() for o in outs])
    finally:
        mxu.set_mode(None)
    assert results[0] == results[1]


def test_blas_writes_the_output_buffers_with_no_copy(monkeypatch):
    drv = SimDriver()
    exe = drv.compile(_program())
    x, w, wb = _operands(1)
    mxu.set_mode("fast")
    try:
        want = _expected(x, w, wb)
        copies = []
        for into in (True, False):  # False: computed into new arrays and copied in (the path before)
            fast.INTO = into
            outs = _fresh()
            counts = _copies_into(outs[:2], monkeypatch)
            drv.execute(exe, [x, w, wb], outs)
            monkeypatch.undo()
            assert all(o.tobytes() == e.tobytes() for o, e in zip(outs, want))
            copies.append(counts)
    finally:
        fast.INTO = True
        mxu.set_mode(None)
    assert copies == [[0, 0], [1, 1]]  # BLAS wrote y (through the reshape) and z itself


@pytest.mark.parametrize("precision", ["HIGH", "HIGHEST"])
def test_other_precisions_are_copied_in_with_the_same_bits(monkeypatch, precision):
    drv = SimDriver()
    exe = drv.compile(_program(precision))
    x, w, wb = _operands(2)
    mxu.set_mode("fast")
    try:
        want = _expected(x, w, wb, precision)
        outs = _fresh()
        assert _launch(drv, exe, [x, w, wb], outs, True, monkeypatch) == [True]
    finally:
        mxu.set_mode(None)
    assert all(o.tobytes() == e.tobytes() for o, e in zip(outs, want))


def test_a_strided_output_buffer_gets_the_same_bits(monkeypatch):
    drv = SimDriver()
    exe = drv.compile(_program())
    x, w, wb = _operands(3)
    mxu.set_mode("fast")
    try:
        want = _expected(x, w, wb)
        outs = _fresh()
        outs[1] = np.full((29, 67, 3), np.nan, np.float32).T  # (3, 67, 29), not C-contiguous: copied in
        assert _launch(drv, exe, [x, w, wb], outs, True, monkeypatch) == [True]
    finally:
        mxu.set_mode(None)
    assert all(np.ascontiguousarray(o).tobytes() == e.tobytes() for o, e in zip(outs, want))


@pytest.mark.parametrize(
    "shapes",
    [
        ((201, 45), (45, 131), False, False),
        ((3, 67, 45), (3, 45, 29), False, False),
        ((45, 201), (45, 131), True, False),
        ((201, 45), (131, 45), False, True),
        ((512, 256), (1024, 256), False, True),
    ],
)
def test_matmul_into_out_matches_a_new_array(shapes):
    a_shape, b_shape, ta, tb = shapes
    rng = np.random.default_rng(4)
    a = rng.standard_normal(a_shape, np.float32)
    b = rng.standard_normal(b_shape, np.float32)
    a = a.swapaxes(-1, -2) if ta else a  # transposed operands: the layout-probe path (sim/mxu_layout.py)
    b = b.swapaxes(-1, -2) if tb else b
    want = mxu.matmul(a, b, mode="fast")
    out = np.full(want.shape, np.nan, np.float32)
    assert mxu.matmul(a, b, mode="fast", out=out) is out and out.tobytes() == want.tobytes()
    exact = mxu.matmul(a, b, mode="exact")
    assert mxu.matmul(a, b, mode="exact", out=out) is out and out.tobytes() == exact.tobytes()
