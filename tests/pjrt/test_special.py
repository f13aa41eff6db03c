"""Every special function (special_unary / special_binary: one lowering each, drivers/ir_lowerings_*.py) on
pjrt(cpu) against the sim running the same expansion: edge values (0, +-1, the approximations' branch points,
+-inf, NaN) and random arguments in each function's domain. tests/test_special_functions.py checks both
drivers against torch CPU."""

from __future__ import annotations

import numpy as np
import pytest
from pjrt_run import run
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.ir_ops import SPECIAL_BINARY, SPECIAL_UNARY

EDGE = [0.0, -0.0, 1e-6, -1e-6, 0.5, -0.5, 1.0, -1.0, 2.0, 2.09, -2.09, 4.99, 5.0, 5.01, 6.0, -6.0, 8.0, 8.5, 10.0,
        12.0, 30.0, 50.0, -50.0, 100.0, -7.5, np.inf, -np.inf, np.nan]
POLY_X = [1, -1, 0, 0.5, -0.5, 1, -1, 2, -2, 0.3, 1, -1, 0.99, 1.5, -1.5, 0.2, 0.7, 0.1, np.nan, 0.3]
POLY_N = [-2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 20, 30, 3.7, -2.5, np.nan]


def _inputs(fn: str, dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(sum(map(ord, fn)))
    if fn in ("igamma", "igammac"):
        a = [*rng.uniform(0, 10, 40), *rng.uniform(0, 1, 10), 0, 0, 1, np.inf, np.nan, 2, 3, 0.5, 1, -1]
        x = [*rng.uniform(0, 15, 40), *rng.uniform(0, 1, 10), 0, 1, 0, 2, 1, np.inf, 0, -1, np.nan, 1]
        arrays = [a, x]
    elif fn == "zeta":
        arrays = [rng.uniform(1.1, 5, 20), rng.uniform(0.5, 3, 20)]
    elif fn == "polygamma":
        arrays = [[0, 1, 2, 3] * 8, [*rng.uniform(0.5, 4, 20), *rng.uniform(-9, 0, 10), 0.0, -0.0]]
    elif fn in SPECIAL_BINARY:
        arrays = [[*POLY_X, *rng.uniform(-1.5, 1.5, 40)], [*POLY_N, *rng.integers(0, 12, 40)]]
    elif fn == "ndtri":
        arrays = [[*EDGE, *rng.uniform(0, 1, 30)]]
    else:
        arrays = [[*EDGE, *rng.uniform(-10, 10, 30), *rng.uniform(-1.2, 1.2, 10)]]
    return [np.asarray(a, dtype) for a in arrays]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_function_matches_sim(sim, pjrt, dtype):
    """One Program with every function (one compile per dtype): the same expansion on both drivers, so they
    differ only by the transcendentals' last bits (numpy's and XLA's exp, log, sin, ...)."""
    b, inputs, outs, names = Builder(), [], [], []
    for fn in (*SPECIAL_UNARY, *SPECIAL_BINARY):
        arrays = _inputs(fn, dtype)
        vals = [b.input(a.shape, dtype) for a in arrays]
        outs += b.emit("special_binary" if fn in SPECIAL_BINARY else "special_unary", vals, function=fn)
        inputs += arrays
        names.append(fn)
    program = b.finish(outs, name=f"special_{dtype}")
    with np.errstate(all="ignore"):
        want = run(sim, program, inputs)
    got = run(pjrt, program, inputs)
    for fn, g, w in zip(names, got, want):
        rtol = 1e-5 if dtype == "float32" else 1e-6
        if dtype == "float32" and fn in ("igamma", "igammac"):
            rtol = 1e-4  # float32 math: exp(a log x - x - lgamma(a)) carries the exponent's rounding (~1e-5 x a)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol / 10, equal_nan=True, err_msg=fn)


def test_polynomial_loop_runs_to_the_largest_degree(sim, pjrt):
    """The recurrences are IR op `while` (a stablehlo.while on pjrt): each element stops at its own degree."""
    x = np.array([1.5, 1.5, 1.5, -2.0, 3.0], np.float32)
    n = np.array([0, 1, 25, 17, 3], np.float32)
    for fn in ("chebyshev_t", "hermite_h", "laguerre_l", "legendre_p"):
        b = Builder()
        vals = [b.input(x.shape, "float32"), b.input(n.shape, "float32")]
        program = b.finish(b.emit("special_binary", vals, function=fn), name=fn)
        np.testing.assert_allclose(run(pjrt, program, [x, n])[0], run(sim, program, [x, n])[0], rtol=1e-5,
                                   err_msg=fn)
