"""rng on pjrt: deterministic per (seed, offset), distinct streams per offset, the right distributions."""

from __future__ import annotations

import numpy as np
import pytest
from pjrt_run import run
from torchtpu.drivers.ir import Builder

N = 20000


def _program(dtype: str = "float32"):
    b = Builder()
    state = b.input((2,), "int64")
    (u,) = b.emit("rng", [state], shape=(N,), dtype=dtype, distribution="uniform")
    (g,) = b.emit("rng", [state], shape=(100, N // 100), dtype=dtype, distribution="normal")
    return b.finish([u, g])


def test_rng_distributions_match_the_sim(pjrt, sim):
    program = _program()
    state = np.array([1234, 7], np.int64)
    (u, g), (su, sg) = run(pjrt, program, [state]), run(sim, program, [state])
    assert u.min() >= 0 and u.max() < 1
    for x in (u, su):
        assert abs(x.mean() - 0.5) < 0.01 and abs(x.var() - 1 / 12) < 0.005
    for x in (g, sg):
        assert abs(x.mean()) < 0.03 and abs(x.std() - 1) < 0.03
        assert abs((np.abs(x) < 1).mean() - 0.6827) < 0.015
    hist_u = np.histogram(u, 10, (0, 1))[0] / N
    np.testing.assert_allclose(hist_u, 0.1, atol=0.01)
    assert np.isfinite(g).all()


def test_rng_streams_are_deterministic_and_distinct(pjrt):
    program = _program()
    a = run(pjrt, program, [np.array([5, 0], np.int64)])[0]
    b = run(pjrt, program, [np.array([5, 0], np.int64)])[0]
    c = run(pjrt, program, [np.array([5, 1], np.int64)])[0]
    d = run(pjrt, program, [np.array([6, 0], np.int64)])[0]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(a, d)
    # consecutive offsets draw from unrelated streams: no shifted overlap
    for shift in range(64):
        assert (a[shift:] == c[: N - shift]).mean() < 0.01 and (c[shift:] == a[: N - shift]).mean() < 0.01


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64"])
def test_rng_narrow_and_wide_dtypes(pjrt, dtype):
    u, g = run(pjrt, _program(dtype), [np.array([3, 4], np.int64)])
    assert u.dtype.name == dtype and 0 <= float(u.astype(np.float32).min()) and float(u.astype(np.float32).max()) <= 1
    assert abs(float(g.astype(np.float32).mean())) < 0.05
