"""Tests for torchtpu.sim.mxu.matmul: exact mode bit-exact vs a slow spec reference, fast mode near exact."""

import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torchtpu.sim import mxu
from torchtpu.sim.numerics import round_bf16

F32 = np.float32


# ---------------- slow reference, written from the docstrings / tpu-facts section 5 ----------------
def _trunc(x):
    return (np.asarray(x, F32).view(np.uint32) & np.uint32(0xFFFF0000)).view(F32)


def ref_dot(a, b, tile):
    """Systolic order: per K tile, sequential float32 sum from +0 in k order; tiles added to acc in order."""
    m, k = a.shape
    n = b.shape[1]
    acc = np.zeros((m, n), F32)
    for t0 in range(0, k, tile):
        s = np.zeros((m, n), F32)
        for kk in range(t0, min(k, t0 + tile)):
            s = (s + a[:, kk : kk + 1] * b[kk : kk + 1, :]).astype(F32)
        acc = (acc + s).astype(F32)
    return acc


def ref_matmul(a, b, precision, tile):
    a = np.asarray(a, F32)
    b = np.asarray(b, F32)
    with np.errstate(invalid="ignore", over="ignore"):
        if precision == "DEFAULT":
            return ref_dot(round_bf16(a), round_bf16(b), tile)

        def guard(s):
            return np.where(np.inf >= np.abs(s), s, F32(0)).astype(F32)

        if precision == "HIGH":
            ah, bh = _trunc(a), _trunc(b)
            al, bl = round_bf16(a - ah), round_bf16(b - bh)
            ah, bh = round_bf16(ah), round_bf16(bh)
            low = (ref_dot(al, bh, tile) + ref_dot(ah, bl, tile)).astype(F32)
            return (guard(low) + ref_dot(ah, bh, tile)).astype(F32)
        parts = []
        for x in (a, b):
            h = _trunc(x)
            r1 = (x - h).astype(F32)
            md = _trunc(r1)
            lo = round_bf16((r1 - md).astype(F32))
            parts.append((round_bf16(h), round_bf16(md), lo))
        (ah, am, al), (bh, bm, bl) = parts
        r = ref_dot(am, bm, tile) + ref_dot(ah, bl, tile)
        for x, y in ((al, bh), (ah, bm), (am, bh)):
            r = (r + ref_dot(x, y, tile)).astype(F32)
        return (guard(r) + ref_dot(ah, bh, tile)).astype(F32)


def _rand(rng, shape, specials=False):
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-8, 8, shape))).astype(F32)
    if specials and x.size:
        idx = rng.integers(0, x.size, max(1, x.size // 20))
        x.reshape(-1)[idx] = rng.choice(np.array([np.inf, -np.inf, np.nan, 0.0, 1.0], F32), idx.size)
    return x


def _same(x, y):
    np.testing.assert_array_equal(np.asarray(x).view(np.uint32), np.asarray(y).view(np.uint32))


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 9), n=st.integers(1, 70), k=st.sampled_from([1, 3, 17, 128, 130, 257, 300]),
    precision=st.sampled_from(mxu.PRECISIONS), tile=st.sampled_from([128, 256, 8]),
    specials=st.booleans(), seed=st.integers(0, 2**31),
)
def test_exact_bit_exact_vs_reference(m, n, k, precision, tile, specials, seed):
    rng = np.random.default_rng(seed)
    a, b = _rand(rng, (m, k), specials), _rand(rng, (k, n), specials)
    got = mxu.matmul(a, b, precision=precision, mode="exact", array=tile)
    want = ref_matmul(a, b, precision, tile)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    _same(got[ok], want[ok])


@settings(max_examples=20, deadline=None)
@given(m=st.integers(60, 200), n=st.integers(1, 5), k=st.sampled_from([1, 17, 130]), specials=st.booleans(),
       seed=st.integers(0, 2**31))
def test_narrow_products_run_transposed_with_the_same_bits(m, n, k, specials, seed):
    """A product with few columns runs as out^T = b^T @ a^T (fewer padded register blocks): same bits."""
    from torchtpu.sim import mxu_kernel

    assert mxu_kernel._transposed_is_cheaper(m, n)
    rng = np.random.default_rng(seed)
    a, b = _rand(rng, (m, k), specials), _rand(rng, (k, n), specials)
    got = mxu.matmul(a, b, mode="exact")
    want = ref_matmul(a, b, "DEFAULT", 128)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    _same(got[~np.isnan(want)], want[~np.isnan(want)])
    small = mxu_kernel.dot_small_bf16_rounded3(a[None], b[None], 128)[0]
    _same(small[~np.isnan(want)], want[~np.isnan(want)])


def test_fast_matmuls_use_torchs_thread_count():
    """numpy's BLAS (the integer products; every product where mxu_gemm's MKL GEMM is missing) follows
    torch.set_num_threads (an extra BLAS thread stalls when another process holds a core: 8 ms instead of 32 us
    for one product on the shared 2-core machine)."""
    torch = pytest.importorskip("torch")
    from threadpoolctl import threadpool_info

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        mxu.matmul(np.ones((128, 128), np.int8), np.ones((128, 128), np.int8), mode="fast")
        assert {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == {1}
    finally:
        torch.set_num_threads(before)


def test_exact_batched_and_edges():
    rng = np.random.default_rng(5)
    a, b = _rand(rng, (2, 3, 67, 131)), _rand(rng, (2, 3, 131, 65))
    got = mxu.matmul(a, b, mode="exact")
    for i in range(2):
        for j in range(3):
            _same(got[i, j], ref_matmul(a[i, j], b[i, j], "DEFAULT", 128))
    assert mxu.matmul(np.zeros((3, 0), F32), np.zeros((0, 4), F32), mode="exact").shape == (3, 4)
    assert not mxu.matmul(np.zeros((3, 0), F32), np.zeros((0, 4), F32), mode="exact").any()


def test_order_is_the_systolic_one():
    """1 + 255 x 2^-24: one sequential sum loses every small term; the second K tile keeps its 128 of them."""
    a = np.ones((1, 256), F32)
    b = np.full((256, 1), 2.0**-24, F32)
    b[0, 0] = 1.0
    assert mxu.matmul(a, b, mode="exact", array=128)[0, 0] == F32(1 + 2.0**-17)
    assert mxu.matmul(a, b, mode="exact", array=256)[0, 0] == F32(1.0)


@pytest.mark.parametrize("precision", mxu.PRECISIONS)
def test_fast_close_to_exact(precision):
    rng = np.random.default_rng(7)
    a, b = _rand(rng, (33, 300)), _rand(rng, (300, 45))
    ex = mxu.matmul(a, b, precision=precision, mode="exact")
    fa = mxu.matmul(a, b, precision=precision, mode="fast")
    # fp32 summation-order error bound: K * eps * sum |a||b| (per pass)
    mag = np.abs(round_bf16(a)).astype(np.float64) @ np.abs(round_bf16(b)).astype(np.float64)
    bound = 300 * np.finfo(F32).eps * mag * mxu.PASSES[precision] + 1e-30
    assert np.all(np.abs(ex.astype(np.float64) - fa) <= bound)


def test_precision_accuracy_ladder():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((40, 200)).astype(F32), rng.standard_normal((200, 30)).astype(F32)
    truth = a.astype(np.float64) @ b.astype(np.float64)
    err = {p: np.abs(mxu.matmul(a, b, precision=p, mode="exact") - truth).max() for p in mxu.PRECISIONS}
    assert err["DEFAULT"] > 10 * err["HIGH"] > 0
    assert err["HIGHEST"] <= err["HIGH"]
    assert err["HIGHEST"] < 1e-4


def test_nan_guard_inf_times_one():
    a = np.array([[1.0, 0.0]], F32)
    b = np.array([[np.inf], [0.0]], F32)
    for p in mxu.PRECISIONS:
        assert mxu.matmul(a, b, precision=p, mode="exact")[0, 0] == np.inf
        assert mxu.matmul(a, b, precision=p, mode="fast")[0, 0] == np.inf


def test_bf16_inputs_one_pass_and_bf16_output():
    rng = np.random.default_rng(9)
    a = _rand(rng, (5, 20)).astype(ml_dtypes.bfloat16)
    b = _rand(rng, (20, 6)).astype(ml_dtypes.bfloat16)
    r = mxu.matmul(a, b, precision="HIGHEST", mode="exact")
    _same(r, ref_dot(a.astype(F32), b.astype(F32), 128))
    o = mxu.matmul(a, b, out_dtype=ml_dtypes.bfloat16, mode="exact")
    assert o.dtype == ml_dtypes.bfloat16
    _same(o.astype(F32), round_bf16(r))


def test_int8():
    rng = np.random.default_rng(10)
    a = rng.integers(-128, 128, (3, 7, 50), dtype=np.int8)
    b = rng.integers(-128, 128, (3, 50, 9), dtype=np.int8)
    r = mxu.matmul(a, b, precision="HIGHEST")
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r, np.matmul(a.astype(np.int64), b.astype(np.int64)))
    assert mxu.matmul(a, b, out_dtype=np.float32).dtype == np.float32


@pytest.fixture
def env_mode():
    """The mode source the sim driver installs: TORCHTPU_MXU_MODE through the driver layer's config."""
    from torchtpu.drivers import config

    previous = mxu._source
    mxu.set_mode_source(lambda: config.get("TORCHTPU_MXU_MODE"))
    yield
    mxu.set_mode_source(previous)


def test_without_a_mode_source_the_mode_is_auto(monkeypatch):
    monkeypatch.setattr(mxu, "_source", None)
    monkeypatch.setenv("TORCHTPU_MXU_MODE", "fast")  # sim/ reads no environment variable itself
    assert mxu.get_mode() == "auto"


def test_mode_switch_and_env(monkeypatch, env_mode):
    monkeypatch.delenv("TORCHTPU_MXU_MODE", raising=False)
    assert mxu.get_mode() == "auto"
    assert mxu.resolve_mode(None, 2**18) == "exact" and mxu.resolve_mode(None, 2**18 + 1) == "fast"
    monkeypatch.setenv("TORCHTPU_MXU_MODE", "fast")
    assert mxu.get_mode() == "fast"
    monkeypatch.setenv("TORCHTPU_MXU_MODE", "bogus")
    with pytest.raises(ValueError, match="auto, exact, fast"):
        mxu.get_mode()
    mxu.set_mode("exact")
    try:
        assert mxu.get_mode() == "exact"
        with pytest.raises(ValueError, match="auto, exact, fast"):
            mxu.set_mode("slow")
    finally:
        mxu.set_mode(None)


def test_bad_arguments():
    a = np.zeros((2, 3), F32)
    with pytest.raises(ValueError):
        mxu.matmul(a, np.zeros((4, 2), F32))
    with pytest.raises(ValueError):
        mxu.matmul(np.zeros((2, 2, 3), F32), np.zeros((3, 3, 2), F32))
    with pytest.raises(ValueError, match="DEFAULT, HIGH, HIGHEST"):
        mxu.matmul(a, np.zeros((3, 2), F32), precision="ultra")


def test_mode_env_read_as_os_environ_reads_it(monkeypatch, env_mode):
    monkeypatch.setenv("TORCHTPU_MXU_MODE", " Exact ")
    assert mxu.get_mode() == "exact"
    monkeypatch.delenv("TORCHTPU_MXU_MODE")
    assert mxu.get_mode() == "auto"
    monkeypatch.setattr(os, "environ", {"TORCHTPU_MXU_MODE": "fast"})  # a plain mapping in its place
    assert mxu.get_mode() == "fast"
