"""fp8 dot_general (the MXU's fp8 products, on a chip that has them: v7x) on the sim and the pjrt(cpu) driver."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from pjrt_cases import _dot
from pjrt_run import assert_same, run
from torchtpu.drivers.ir import Builder


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_dot_matches_between_drivers_and_float64(pjrt, fmt):
    from torchtpu.drivers.sim.driver import SimDriver

    rng = np.random.default_rng(0)
    dtype = np.dtype(getattr(ml_dtypes, fmt))
    a = (rng.standard_normal((6, 96)) * 8).astype(np.float32).astype(dtype)
    w = (rng.standard_normal((96, 5)) * 8).astype(np.float32).astype(dtype)
    b = Builder()
    x, y = b.input(a.shape, fmt), b.input(w.shape, fmt)
    program = b.finish(b.emit("dot_general", [x, y], **_dot((), (), (1,), (0,), precision="DEFAULT")), name="f8")
    want = a.astype(np.float64) @ w.astype(np.float64)  # products exact; float32 sums of 96 terms: close
    (sim,) = run(SimDriver(chips=["v7x"]), program, [a, w])
    (got,) = run(pjrt, program, [a, w])
    assert_same(got, sim, 1e-6, 1e-6, fmt)
    np.testing.assert_allclose(sim, want, rtol=1e-6, atol=1e-4)
