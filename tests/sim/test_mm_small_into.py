"""A small DEFAULT-precision eager `mm` written straight into its output buffer (sim/mxu_kernel.py
`mm_small_bf16_rounded_into`, the driver's last-step path for fast.py's `writes_out` kernel): the same values as
the packed kernel and as the old path (result array copied into the buffer), special values and any layout
included, in every MXU mode; products above fast.INTO_MAX_MACS keep the old path, and HIGH/HIGHEST products take
fast.py's generic dot, which is given the buffer too (its result copied in; BLAS writes only a DEFAULT pass there).

NaN results are compared as NaN, not by bits: the packed kernel's NaN sign (0x7fc00000 or 0xffc00000 where a +NaN
product meets the -NaN of inf * 0) depends on LLVM's operand order for `+`, which differs between a freshly
compiled `_mm_rounded_serial` and the same function loaded from numba's cache (measured: 35 of ~1.3M outputs of
random special-valued products flip sign on the first, compiling run, none from the cache); every other bit is
compared exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import fast
from torchtpu.drivers.sim.driver import SimDriver
from torchtpu.sim import mxu
from torchtpu.sim import mxu_kernel as mk

import torchtpu

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38, 1e-45, 1e-20, -1e20],
                    np.float32)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal bits, except that a NaN only needs to be a NaN (see the module docstring)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    gn, wn = np.isnan(got), np.isnan(want)
    return bool((gn == wn).all() and np.array_equal(got[~gn].view(np.uint32), want[~wn].view(np.uint32)))


def _operands(rng: np.random.Generator, m: int, k: int, n: int, special: bool) -> tuple[np.ndarray, np.ndarray]:
    scale = rng.choice([1.0, 1e20, 1e-20])
    a = (rng.standard_normal((m, k)) * scale).astype(np.float32)
    b = (rng.standard_normal((k, n)) * rng.choice([1.0, 1e20, 1e-20])).astype(np.float32)
    if special:
        for x in (a, b):
            x.flat[rng.integers(0, x.size, 3)] = rng.choice(SPECIALS, 3)
    return a, b


def test_kernel_matches_the_packed_kernel():
    rng = np.random.default_rng(0)
    for it in range(1500):
        m, k, n = (int(v) for v in rng.integers(1, 40, 3))
        tile = int(rng.choice([1, 2, 3, 8, 128]))
        a, b = _operands(rng, m, k, n, it % 2 == 0)
        want = mk._mm_rounded_serial(a, b, tile)
        x = np.asfortranarray(a) if it % 5 == 0 else a
        y = np.asfortranarray(b) if it % 7 == 0 else b
        out = np.full((2 * m, n), 7, np.float32)[::2] if it % 3 == 0 else np.full((m, n), 7, np.float32)
        mk.mm_small_bf16_rounded_into(x, y, out, tile)
        assert _same(out, want), (m, k, n, tile)


def test_kernel_output_may_be_an_operand():
    rng = np.random.default_rng(1)
    a, b = _operands(rng, 6, 6, 6, True)
    want = mk._mm_rounded_serial(a, b, 128)
    x = a.copy()
    mk.mm_small_bf16_rounded_into(x, b, x, 128)
    assert _same(x, want)
    y = b.copy()
    mk.mm_small_bf16_rounded_into(a, y, y, 128)
    assert _same(y, want)


def _mm_program(m: int, k: int, n: int, precision: str, reshape: tuple[int, ...] | None = None):
    """One mm; with `reshape`, its result reshaped (as a DEFER_AND_FUSE one-op region ends)."""
    bld = Builder()
    x, y = bld.input((m, k), "float32"), bld.input((k, n), "float32")
    z = bld.emit("dot_general", [x, y], lhs_batch=(), rhs_batch=(), lhs_contract=(1,), rhs_contract=(0,),
                 precision=precision, out_dtype="float32")[0]
    if reshape is not None:
        z = bld.emit("reshape", [z], shape=reshape)[0]
    return bld.finish([z])


SHAPES = [(1, 1, 1), (8, 8, 8), (3, 17, 5), (2, 300, 3), (12, 12, 12), (16, 8, 16), (16, 16, 16), (4, 4, 128),
          (32, 32, 32), (1, 7, 130)]


def _out_shape(m: int, n: int, reshaped: str) -> tuple[int, ...]:
    return {"no": (m, n), "flat": (m * n,), "lead": (1, m, n)}[reshaped]


@pytest.mark.parametrize("reshaped", ["no", "flat", "lead"])
@pytest.mark.parametrize("precision", ["DEFAULT", "HIGH", "HIGHEST"])
@pytest.mark.parametrize("mode", [None, "exact", "fast"])
def test_driver_last_step_matches_the_old_path(monkeypatch, precision, mode, reshaped):
    def program(m, k, n):
        return _mm_program(m, k, n, precision, None if reshaped == "no" else _out_shape(m, n, reshaped))

    new = SimDriver()
    with monkeypatch.context() as patch:
        patch.setattr(fast, "INTO_MAX_MACS", -1)  # no `writes_out` kernel: the old path
        old = SimDriver()
        old_exes = {s: old.compile(program(*s)) for s in SHAPES}
    rng = np.random.default_rng(2)
    mxu.set_mode(mode)
    try:
        for shape in SHAPES:
            m, k, n = shape
            exe = new.compile(program(m, k, n))
            shape_out = _out_shape(m, n, reshaped)
            takes_out = precision != "DEFAULT" or (m * k * n <= fast.INTO_MAX_MACS and not
                                                   mk._transposed_is_cheaper(m, n))
            assert (exe.payload.last is not None) == takes_out, shape
            assert (old_exes[shape].payload.last is None) == (precision == "DEFAULT")
            for special in (False, True):
                a, b = _operands(rng, m, k, n, special)
                for layout in ("C", "F", "strided"):
                    outs = []
                    for drv, e in ((old, old_exes[shape]), (new, exe)):
                        if layout == "C":
                            out = np.full(shape_out, 7, np.float32)
                        elif layout == "F":  # (a 2-D F-order buffer has no (m*n,) or (1, m, n) view: copied)
                            out = np.asfortranarray(np.full(shape_out, 7, np.float32))
                        else:
                            out = np.full((*shape_out[:-1], 2 * shape_out[-1]), 7, np.float32)[..., ::2]
                        with np.errstate(all="ignore"):
                            drv.execute(e, [a, b], [out])
                        outs.append(out)
                    assert _same(outs[1], outs[0]), (shape, special, layout)
    finally:
        mxu.set_mode(None)


def test_driver_output_buffer_may_be_an_input():
    drv = SimDriver()
    exe = drv.compile(_mm_program(8, 8, 8, "DEFAULT"))
    assert exe.payload.last is not None
    a, b = _operands(np.random.default_rng(4), 8, 8, 8, True)
    want = mk._mm_rounded_serial(a, b, mxu.DEFAULT_ARRAY)
    for slot in (0, 1):
        ins = [a.copy(), b.copy()]
        with np.errstate(all="ignore"):
            drv.execute(exe, ins, [ins[slot]])
        assert _same(ins[slot], want)


@pytest.mark.parametrize("eager", ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"])
def test_eager_mm_matches_the_old_kernel(tpu, eager):
    rng = np.random.default_rng(3)
    with torchtpu.eager_mode(eager):
        for m, k, n in [(8, 8, 8), (3, 17, 5), (12, 12, 12), (4, 4, 128), (16, 16, 16)]:
            for special in (False, True):
                a, b = _operands(rng, m, k, n, special)
                want = mk.mm_small_bf16_rounded(a, b, mxu.DEFAULT_ARRAY)  # the old DEFER_NEVER path's kernel
                x, y = torch.from_numpy(a).to(tpu), torch.from_numpy(b).to(tpu)
                got = torch.mm(x, y).cpu().numpy()
                assert _same(got, want), (eager, m, k, n, special)
                into = torch.empty(n, m).to(tpu).t()  # a transposed output buffer
                torch.mm(x, y, out=into)
                assert _same(into.cpu().numpy(), want), (eager, m, k, n, special, "out=")
