"""The IR ops added for op coverage (dense constants, complex parts, fft, linear algebra, special functions)
compute what they claim on the sim driver (that every op has its rules and kernels: tests/test_ir_registry.py)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import kernels_data  # noqa: F401  (registers every kernel)
from torchtpu.drivers.sim.driver import SimDriver


def _run(build, *inputs):
    b = Builder()
    vals = [b.input(x.shape, str(x.dtype) if x.dtype != np.complex64 else "complex64") for x in inputs]
    outs = build(b, *vals)
    outs = outs if isinstance(outs, list) else [outs]
    program = b.finish(outs)
    drv = SimDriver()
    exe = drv.compile(program)
    results = [np.empty(v.shape, dtype=np.dtype(v.dtype) if v.dtype != "bfloat16" else np.float32) for v in outs]
    drv.execute(exe, list(inputs), results)
    return results


def test_dense_constant_keeps_row_major_values():
    (out,) = _run(lambda b: b.emit("constant", [], value=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0), shape=(2, 3),
                                   dtype="float32")[0])
    assert out.tolist() == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(ValueError, match="needs 6 values"):
        Builder().emit("constant", [], value=(1.0, 2.0), shape=(2, 3), dtype="float32")


def test_complex_parts_and_fft_match_numpy():
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)

    def build(b, v):
        (spec,) = b.emit("fft", [v], fft_type="RFFT", fft_length=(8,))
        (back,) = b.emit("fft", [spec], fft_type="IRFFT", fft_length=(8,))
        (re,) = b.emit("real", [spec])
        return [spec, back, re]

    spec, back, re = _run(build, x)
    np.testing.assert_allclose(spec, np.fft.rfft(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(back, x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(re, np.fft.rfft(x).real, rtol=1e-5, atol=1e-5)


def test_lu_reconstructs_with_lapack_pivots():
    a = np.random.default_rng(1).standard_normal((2, 4, 4)).astype(np.float32)
    lu, piv, info = _run(lambda b, v: b.emit("lu", [v]), a)
    assert info.tolist() == [0, 0] and piv.dtype == np.int32
    for k in range(2):
        low = np.tril(lu[k], -1) + np.eye(4, dtype=np.float32)
        up = np.triu(lu[k])
        rows = list(range(4))
        for i, p in enumerate(piv[k]):
            rows[i], rows[p - 1] = rows[p - 1], rows[i]
        np.testing.assert_allclose(low @ up, a[k][rows], rtol=1e-5, atol=1e-5)


def test_triangular_solve_and_cholesky():
    rng = np.random.default_rng(2)
    m = rng.standard_normal((4, 4)).astype(np.float32)
    spd = (m @ m.T + 4 * np.eye(4)).astype(np.float32)
    rhs = rng.standard_normal((4, 2)).astype(np.float32)

    def build(b, a, r):
        (low,) = b.emit("cholesky", [a], lower=True)
        (y,) = b.emit("triangular_solve", [low, r], left_side=True, lower=True, unit_diagonal=False,
                      transpose_a="NO_TRANSPOSE")
        (x,) = b.emit("triangular_solve", [low, y], left_side=True, lower=True, unit_diagonal=False,
                      transpose_a="TRANSPOSE")
        return x

    (x,) = _run(build, spd, rhs)
    np.testing.assert_allclose(spd @ x, rhs, rtol=1e-4, atol=1e-4)


_TORCH_UNARY = {
    "bessel_j0": "bessel_j0", "bessel_j1": "bessel_j1", "bessel_y0": "bessel_y0", "bessel_y1": "bessel_y1",
    "bessel_i0": "modified_bessel_i0", "bessel_i1": "modified_bessel_i1", "bessel_i0e": "i0e", "bessel_i1e": "i1e",
    "bessel_k0": "modified_bessel_k0", "bessel_k1": "modified_bessel_k1", "bessel_k0e": "scaled_modified_bessel_k0",
    "bessel_k1e": "scaled_modified_bessel_k1", "airy_ai": "airy_ai", "spherical_bessel_j0": "spherical_bessel_j0",
    "erfcx": "erfcx", "ndtri": "ndtri",
}


@pytest.mark.parametrize("function", sorted(_TORCH_UNARY))
def test_special_unary_matches_torch_float64(function):
    import torch

    if function == "ndtri":
        x = np.array([1e-30, 1e-6, 0.025, 0.3, 0.5, 0.975, 1 - 1e-7], np.float64)
    else:
        x = np.array([-20.0, -8.5, -2.0, -0.3, 0.0, 0.4, 1.0, 2.5, 7.9, 8.1, 11.5, 12.5, 29.0, 31.0, 45.0])
    (out,) = _run(lambda b, v: b.emit("special_unary", [v], function=function)[0], x)
    ref = getattr(torch.special, _TORCH_UNARY[function])(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-12)  # float64 math, judged at float32 scale


@pytest.mark.parametrize("function,a,b,expected", [
    ("zeta", 2.0, 1.0, math.pi ** 2 / 6), ("polygamma", 1.0, 1.0, math.pi ** 2 / 6),
    ("igamma", 2.0, 1.0, 1 - 2 / math.e), ("igammac", 2.0, 1.0, 2 / math.e),
    ("chebyshev_t", 0.3, 10.0, math.cos(10 * math.acos(0.3))), ("hermite_h", 0.5, 3.0, 8 * 0.125 - 12 * 0.5),
    ("legendre_p", 0.5, 2.0, (3 * 0.25 - 1) / 2), ("laguerre_l", 2.0, 2.0, (4 - 8 + 2) / 2),
])
def test_special_binary_values(function, a, b, expected):
    (out,) = _run(lambda bb, x, y: bb.emit("special_binary", [x, y], function=function)[0],
                  np.array([a], np.float64), np.array([b], np.float64))
    assert math.isclose(float(out[0]), expected, rel_tol=1e-9, abs_tol=1e-12)


def test_reduce_max_of_an_empty_dimension_is_the_identity():
    (out,) = _run(lambda b, v: b.emit("reduce", [v], kind="max", dimensions=(1,))[0],
                  np.zeros((3, 0), np.float32))
    assert out.shape == (3,) and np.all(out == -np.inf)


DIGAMMA_POINTS = [0.0, -0.0, 1.0, 0.5, 1e-30, 1e-6, 2.5, 9.75, 10.0, 10.5, 37.0, 1e4, 3e8, np.inf, -np.inf, np.nan,
                  -0.5, -1.5, -2.25, -3.7, -1.0, -2.0, -1e-6, -100.25, -12345.5, -0.999]


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("name", ["digamma", "lgamma"])
def test_gamma_lowerings_match_torch_cpu(name, dtype):
    """digamma and lgamma are one definition each (drivers/ir_lowerings.py) that both drivers run; the reference
    is torch's CPU kernel, at special points (zeros, poles, infinities) and over a sweep of both signs."""
    import torch

    sweep = np.concatenate([np.array(DIGAMMA_POINTS), np.linspace(-30.3, 30.3, 401), np.geomspace(1e-3, 1e6, 200)])
    tdtype = getattr(torch, dtype)
    x = torch.tensor(sweep, dtype=torch.float64).to(tdtype)
    want = getattr(torch, name)(x.float() if dtype == "bfloat16" else x).to(tdtype)
    host = x.float().numpy() if dtype == "bfloat16" else x.numpy()
    b = Builder()
    v = b.input(host.shape, dtype)
    program = b.finish(b.emit(name, [v]))
    assert {op.name for op in program.ops} <= {
        "constant", "convert", "compare", "trunc", "subtract", "multiply", "tan", "divide", "select", "reciprocal",
        "add", "log", "and", "round_nearest_even", "copysign", "negate", "abs", "floor", "sine", "log_plus_one",
        "is_finite"}
    drv = SimDriver()
    inp = host.astype(ml_dtypes.bfloat16) if dtype == "bfloat16" else host
    out = np.empty(host.shape, inp.dtype)
    drv.execute(drv.compile(program), [inp], [out])
    got = torch.from_numpy(out.astype(np.float64))
    ref = want.double()
    tol = {"float32": 2e-6 if name == "digamma" else 4e-6, "float64": 1e-13, "bfloat16": 8e-3}[dtype]
    # near the roots of psi (x ~ 1.4616, -0.504, ...) relative error is meaningless: compare to the scale of
    # the terms that cancel there
    scale = torch.clamp(ref.abs(), min=1.0)
    bad = ~((got - ref).abs() <= tol * scale) & ~(got.isnan() & ref.isnan()) & ~(got == ref)
    assert not bad.any(), list(zip(x.double()[bad].tolist(), got[bad].tolist(), ref[bad].tolist()))[:10]
    assert torch.equal(torch.signbit(got[:2]), torch.signbit(ref[:2]))  # digamma: -inf at +0, +inf at -0
