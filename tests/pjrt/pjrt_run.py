"""Running a differential case's Program on a driver, and comparing two drivers' outputs (exact for integer, bool
and data-movement results; fp32-close for floats, wider for bfloat16/float16)."""

from __future__ import annotations

import numpy as np


def run(driver, program, inputs):
    """Runs `program` on `driver` with host inputs; returns host outputs."""
    from torchtpu.drivers.pjrt.emit import NP_DTYPES

    exe = driver.compile(program)
    outs = [np.zeros(v.shape, NP_DTYPES[v.dtype]) for v in program.outputs]
    driver.execute(exe, [np.array(x, copy=True) for x in inputs], outs)
    return outs


FLOAT_TOL = {"bfloat16": (1e-2, 1e-2), "float16": (2e-3, 1e-3)}


def assert_same(got: np.ndarray, want: np.ndarray, rtol: float, atol: float, what: str = "") -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype, got.shape, want.shape)
    if got.dtype.kind in "fc" or got.dtype.name == "bfloat16" or got.dtype.name.startswith("float8"):
        r, a = FLOAT_TOL.get(got.dtype.name, (rtol, atol))
        # (-0.0 and 0.0 compare equal: numpy's and XLA's rules for the sign of a zero result differ in places)
        wide = np.complex128 if got.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(got.astype(wide), want.astype(wide), rtol=max(r, rtol), atol=max(a, atol),
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)
