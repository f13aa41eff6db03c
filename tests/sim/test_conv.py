"""Tests for torchtpu.sim.mxu.conv against a direct-loop numpy reference written from the StableHLO spec."""

import itertools

import ml_dtypes
import numpy as np
import pytest
from torchtpu.sim import mxu


def ref_conv(lhs, rhs, strides, padding, lhs_dil, rhs_dil, groups):
    """Direct loops in float64: out[n,o,p] = sum_{c,k} x_dilated_padded[n, g*Cg+c, p*s + k*r] * w[o,c,k]."""
    lhs = lhs.astype(np.float64)
    rhs = rhs.astype(np.float64)
    n, c = lhs.shape[:2]
    o, cg = rhs.shape[:2]
    nsp = lhs.ndim - 2
    # lhs dilation
    shape = [n, c] + [(s - 1) * d + 1 for s, d in zip(lhs.shape[2:], lhs_dil)]
    x = np.zeros(shape)
    x[(slice(None), slice(None), *(slice(None, None, d) for d in lhs_dil))] = lhs
    out_sp = []
    for i in range(nsp):
        lo, hi = padding[i]
        size = x.shape[2 + i] + lo + hi
        eff = (rhs.shape[2 + i] - 1) * rhs_dil[i] + 1
        out_sp.append((size - eff) // strides[i] + 1)
    out = np.zeros((n, o, *out_sp))

    def read(b, ch, pos):
        idx = []
        for i, p in enumerate(pos):
            q = p - padding[i][0]
            if q < 0 or q >= x.shape[2 + i]:
                return 0.0
            idx.append(q)
        return x[(b, ch, *idx)]

    og = o // groups
    for b, oc in itertools.product(range(n), range(o)):
        gi = oc // og
        for p in itertools.product(*(range(s) for s in out_sp)):
            acc = 0.0
            for ci in range(cg):
                for k in itertools.product(*(range(s) for s in rhs.shape[2:])):
                    pos = [p[i] * strides[i] + k[i] * rhs_dil[i] for i in range(nsp)]
                    acc += read(b, gi * cg + ci, pos) * rhs[(oc, ci, *k)]
            out[(b, oc, *p)] = acc
    return out


CASES = [
    # (lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, groups)
    ((2, 3, 9), (4, 3, 3), (1,), [(0, 0)], (1,), (1,), 1),
    ((1, 4, 11), (4, 2, 3), (2,), [(1, 2)], (1,), (2,), 2),
    ((2, 3, 7, 6), (5, 3, 3, 2), (1, 2), [(1, 1), (0, 1)], (1, 1), (1, 1), 1),
    ((1, 6, 6, 5), (6, 1, 3, 3), (1, 1), [(1, 1), (1, 1)], (1, 1), (1, 1), 6),  # depthwise
    ((1, 2, 5, 5), (3, 2, 3, 3), (1, 1), [(2, 2), (2, 2)], (2, 2), (1, 1), 1),  # transposed conv
    ((1, 2, 8, 7), (2, 2, 2, 3), (3, 2), [(-1, 0), (1, -1)], (1, 1), (2, 1), 1),  # negative padding
    ((1, 2, 4, 5, 3), (3, 2, 2, 3, 2), (1, 2, 1), [(0, 1), (1, 1), (0, 0)], (1, 1, 2), (1, 1, 1), 1),  # 3d
]


@pytest.mark.parametrize("case", CASES, ids=[f"{len(c[0]) - 2}d-{i}" for i, c in enumerate(CASES)])
def test_conv_matches_direct_loops_exactly_on_small_integers(case):
    lhs_s, rhs_s, st, pad, ld, rd, g = case
    rng = np.random.default_rng(len(lhs_s) * 100 + sum(lhs_s))
    lhs = rng.integers(-4, 5, lhs_s).astype(np.float32)  # exact in bf16, sums exact in f32: order-free
    rhs = rng.integers(-4, 5, rhs_s).astype(np.float32)
    want = ref_conv(lhs, rhs, st, pad, ld, rd, g)
    for mode in ("exact", "fast"):
        got = mxu.conv(lhs, rhs, window_strides=st, padding=pad, lhs_dilation=ld, rhs_dilation=rd,
                       feature_group_count=g, mode=mode)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_conv_float_highest_close_to_float64():
    rng = np.random.default_rng(3)
    lhs = rng.standard_normal((2, 4, 10, 9)).astype(np.float32)
    rhs = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    args = dict(window_strides=(2, 1), padding=[(1, 1), (2, 0)], feature_group_count=2)
    want = ref_conv(lhs, rhs, (2, 1), [(1, 1), (2, 0)], (1, 1), (1, 1), 2)
    hi = mxu.conv(lhs, rhs, precision="HIGHEST", **args)
    lo = mxu.conv(lhs, rhs, precision="DEFAULT", **args)
    assert np.abs(hi - want).max() < 1e-5
    assert 1e-4 < np.abs(lo - want).max() < 0.2


def test_conv_exact_mode_equals_matmul_on_im2col():
    rng = np.random.default_rng(4)
    lhs = rng.standard_normal((1, 3, 6)).astype(np.float32)
    rhs = rng.standard_normal((2, 3, 3)).astype(np.float32)
    got = mxu.conv(lhs, rhs, mode="exact")
    cols = np.stack([lhs[0, :, p : p + 3].reshape(-1) for p in range(4)])  # (pix, C*k) in (c, k) order
    want = mxu.matmul(cols, rhs.reshape(2, -1).T.copy(), mode="exact")
    np.testing.assert_array_equal(got[0], want.T)


def test_conv_dtypes_and_errors():
    rng = np.random.default_rng(5)
    lhs = rng.standard_normal((1, 2, 5)).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((2, 2, 2)).astype(ml_dtypes.bfloat16)
    y = mxu.conv(lhs, rhs, out_dtype=ml_dtypes.bfloat16)
    assert y.dtype == ml_dtypes.bfloat16 and y.shape == (1, 2, 4)
    i8 = mxu.conv(np.ones((1, 2, 5), np.int8), np.ones((2, 2, 2), np.int8))
    assert i8.dtype == np.int32 and (i8 == 4).all()
    with pytest.raises(ValueError):
        mxu.conv(np.ones((1, 3, 5), np.float32), np.ones((2, 2, 2), np.float32), feature_group_count=2)
    with pytest.raises(ValueError):
        mxu.conv(np.ones((1, 2, 5), np.float32), np.ones((2, 2, 2), np.float32), window_strides=(1, 1))
