"""Tests for torchtpu.sim.kernels: float32 compute with bf16 rounding on store, reductions, data movement."""

import math

import ml_dtypes
import numpy as np
import pytest
from torchtpu.sim import kernels as K
from torchtpu.sim.numerics import round_bf16

BF16 = ml_dtypes.bfloat16


def test_vpu_apply_rounds_bf16_on_store():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1000).astype(BF16)
    b = rng.standard_normal(1000).astype(BF16)
    out = K.vpu_apply(lambda x, y: x * y + 1, a, b)
    assert out.dtype == BF16
    want = round_bf16(a.astype(np.float32) * b.astype(np.float32) + np.float32(1))
    np.testing.assert_array_equal(out.astype(np.float32), want)
    tiny = K.vpu_apply(lambda x: x * np.float32(1e-30), np.array([1e-10], BF16))
    assert tiny.astype(np.float32)[0] == 0  # bf16 subnormal result flushed
    f = K.vpu_apply(np.add, np.ones(3, np.float32), np.ones(3, np.float32), out_dtype=BF16)
    assert f.dtype == BF16 and (f.astype(np.float32) == 2).all()
    assert K.vpu_apply(lambda x: x * 0.5, np.ones(2, np.float32)).dtype == np.float32


def test_reductions():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(K.reduce(x, "sum", (0, 2)), x.sum((0, 2)))
    assert K.reduce(x, "max", None) == 23 and K.reduce(x, "min", 1, keepdims=True).shape == (2, 1, 4)
    assert K.reduce(np.ones((2, 2), BF16), "sum").dtype == BF16
    assert K.reduce(np.arange(4, dtype=np.int8) * 60, "sum").dtype == np.int64  # no int8 wrap
    assert K.reduce(np.array([True, False]), "and") == np.False_
    assert K.reduce(np.array([True, False]), "or") == np.True_
    assert np.isnan(K.reduce(np.array([1, np.nan], np.float32), "max"))
    with pytest.raises(ValueError, match="sum"):
        K.reduce(x, "median")


def test_argmax_argmin_first_index_and_nan():
    x = np.array([[1, 3, 3, 0], [2, np.nan, 5, np.nan]], np.float32)
    np.testing.assert_array_equal(K.argmax(x, 1), [1, 1])
    np.testing.assert_array_equal(K.argmin(x, 1), [3, 1])
    assert K.argmax(np.array([2, 2, 2], np.float32)) == 0
    assert K.argmax(x, 1, keepdims=True).shape == (2, 1) and K.argmax(x).dtype == np.int64


def test_scans():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    np.testing.assert_array_equal(K.cumsum(x, 1), np.cumsum(x, 1))
    np.testing.assert_array_equal(K.cumprod(x, 0), np.cumprod(x, 0))
    np.testing.assert_array_equal(K.cumsum(x, 1, reverse=True), [[6, 5, 3], [15, 11, 6]])
    assert K.cumsum(np.ones(3, np.int32), 0).dtype == np.int64
    assert K.cumsum(np.ones(3, BF16), 0).dtype == BF16


def test_transcendentals():
    x = np.linspace(-3, 3, 101).astype(np.float32)
    np.testing.assert_allclose(K.unary("erf", x), [math.erf(v) for v in x], rtol=1e-6, atol=1e-7)
    y = np.linspace(-0.999, 0.999, 201).astype(np.float32)
    np.testing.assert_allclose(K.unary("erf", K.unary("erfinv", y)), y, atol=2e-6)
    assert K.unary("erfinv", np.array([1.0], np.float32))[0] == np.inf
    pos = np.array([0.5, 1, 2.5, 7, 30], np.float32)
    np.testing.assert_allclose(K.unary("lgamma", pos), [math.lgamma(v) for v in pos], rtol=1e-6)
    np.testing.assert_allclose(K.unary("digamma", np.array([1, 0.5, 10, -0.5], np.float32)),
                               [-0.5772156649, -1.9635100260, 2.2517525891, 0.03648997397857652], rtol=1e-5)
    sig = K.unary("logistic", np.array([0, 2], np.float32))
    np.testing.assert_allclose(sig, [0.5, 1 / (1 + math.exp(-2))], rtol=1e-6)
    assert K.unary("exp", np.ones(2, BF16)).dtype == BF16
    assert K.unary("sqrt", np.array([4], np.int32)).dtype == np.float32
    with pytest.raises(ValueError, match="exp"):
        K.unary("frobnicate", x)


def test_gather_scatter_index_select():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])
    np.testing.assert_array_equal(K.gather_along_axis(x, idx, 0), np.take_along_axis(x, idx, 0))
    np.testing.assert_array_equal(K.index_select(x, 1, [3, 0]), x[:, [3, 0]])
    out = K.scatter_add(np.zeros((3, 4), np.float32), 0, idx, np.ones((2, 4), np.float32))
    want = np.zeros((3, 4), np.float32)
    for i in range(2):
        for j in range(4):
            want[idx[i, j], j] += 1
    np.testing.assert_array_equal(out, want)
    rep = K.scatter(np.zeros(5, np.float32), 0, np.array([1, 3, 1]), np.array([7, 8, 9], np.float32))
    np.testing.assert_array_equal(rep, [0, 9, 0, 8, 0])
    assert K.scatter_add(np.zeros(3, BF16), 0, np.array([0, 0]), np.ones(2, BF16)).dtype == BF16
    with pytest.raises(IndexError):
        K.index_select(x, 0, [3])


def test_movement_pad_concat_slice_transpose():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(K.transpose(x, (1, 0)), x.T)
    np.testing.assert_array_equal(K.slice_(x, (0, 1), (2, 3), (1, 2)), x[0:2, 1:3:2])
    p = K.pad(x, [(1, 0, 0), (0, -1, 1)], value=-1)
    assert p.shape == (3, 4)
    np.testing.assert_array_equal(p[1], [0, -1, 1, -1])
    np.testing.assert_array_equal(K.concatenate([x, x], 0), np.concatenate([x, x]))


def test_sort_stable_both_directions():
    x = np.array([3, 1, 2, 1, np.nan, 3], np.float32)
    v, i = K.sort(x)
    np.testing.assert_array_equal(i, [1, 3, 2, 0, 5, 4])
    v, i = K.sort(x, descending=True)
    np.testing.assert_array_equal(i, [4, 0, 5, 2, 1, 3])  # NaN first, ties keep original order
    assert np.isnan(v[0])
    m = np.array([[2, 2, 1], [0, 5, 0]], np.int32)
    np.testing.assert_array_equal(K.argsort(m, axis=1, descending=True), [[0, 1, 2], [1, 0, 2]])
