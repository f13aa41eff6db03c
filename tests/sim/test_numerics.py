"""Tests for torchtpu.sim.numerics: bf16 RNE/flush semantics, ml_dtypes agreement, XLA x3/x6 splits."""

import math

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from torchtpu.sim import numerics as nm

BF16 = ml_dtypes.bfloat16


def ref_round_one(u: int) -> int:
    """Spec reference from tpu-facts section 5, float64 math (no bit tricks); returns the result bits."""
    x = float(np.uint32(u).view(np.float32))
    if math.isnan(x):
        return (u & 0x80000000) | 0x7FC00000
    if math.isinf(x) or x == 0.0:
        return u & 0xFFFFFFFF if not x == 0.0 else u & 0x80000000
    e = max(math.floor(math.log2(abs(x))), -126)  # bf16 grid: 8 significant bits, subnormal grid below 2^-126
    ulp = 2.0 ** (e - 7)
    q = x / ulp
    r = round(q) * ulp  # Python round() is round-half-even
    if abs(r) >= 2.0**128:
        r = math.copysign(math.inf, x)
    if abs(r) < 2.0**-126:  # subnormal result: flushed to zero, sign kept
        r = math.copysign(0.0, x)
    return int(np.float32(r).view(np.uint32))


def _bits(x):
    return np.asarray(x, np.float32).view(np.uint32)


SPECIALS = np.array(
    [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x7F7FFFFF, 0xFF7FFFFF,
     0x7F7F7FFF, 0x7F7F8000, 0x7F7F8001, 0x00800000, 0x007FFFFF, 0x007F8000, 0x007F7FFF, 0x80008000,
     0x00000001, 0x3F808000, 0x3F818000, 0x3F808001, 0x3F80FFFF, 0xBF808000, 0x00400000,
     0x80800000, 0x807FFFFF],
    dtype=np.uint32,
)


def test_specials_against_spec():
    got = nm.round_bf16_bits(SPECIALS)
    want = np.array([ref_round_one(int(u)) for u in SPECIALS], np.uint32)
    np.testing.assert_array_equal(got, want)


def test_documented_cases():
    f = np.float32
    assert nm.round_bf16(np.array([1.0 + 2**-8], f))[0] == 1.0  # tie -> even (down)
    assert nm.round_bf16(np.array([1.0 + 3 * 2**-8], f))[0] == 1.0 + 2**-6  # tie -> even (up)
    assert np.isinf(nm.round_bf16(np.array([3.4e38], f))[0])  # overflow to inf
    z = nm.round_bf16(np.array([-1e-39, 1e-39], f))  # f32 subnormals: flushed, sign kept
    assert z[0] == 0 and np.signbit(z[0]) and not np.signbit(z[1])
    assert nm.round_bf16(np.array([2.0**-127], f))[0] == 0.0  # bf16-subnormal result
    assert nm.round_bf16(np.array([2.0**-126], f))[0] == 2.0**-126  # smallest normal stays
    n = nm.round_bf16(np.array([np.nan, -np.inf], f))
    assert np.isnan(n[0]) and n[1] == -np.inf


def test_strided_and_random_patterns_match_ml_dtypes_and_spec():
    """Fast always-on check over ~1.4M bit patterns: a stride through all 2^32 plus random draws."""
    rng = np.random.default_rng(0)
    u = np.concatenate([np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32),
                        rng.integers(0, 2**32, 2**18, dtype=np.uint64).astype(np.uint32), SPECIALS])
    _check_against_ml_dtypes(u)
    sample = u[:: max(1, u.size // 3000)]
    want = np.array([ref_round_one(int(v)) for v in sample], np.uint32)
    np.testing.assert_array_equal(nm.round_bf16_bits(sample), want)


def _check_against_ml_dtypes(u: np.ndarray) -> None:
    x = u.view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        ml = x.astype(BF16).view(np.uint16)
    ours = nm.to_bf16(x).view(np.uint16)
    sub = ((ml & 0x7F80) == 0) & ((ml & 0x7F) != 0)  # ml_dtypes keeps bf16 subnormals; TPU flushes them
    np.testing.assert_array_equal(ours[~sub], ml[~sub])
    np.testing.assert_array_equal(ours[sub], ml[sub] & 0x8000)
    np.testing.assert_array_equal(nm.round_bf16(x).view(np.uint32), ours.astype(np.uint32) << 16)


@njit(cache=True)
def _fill(buf, start):
    for i in range(buf.size):
        buf[i] = np.uint32(start + i)


@njit(cache=True)
def _count_mismatches(src, ml):
    bad = 0
    for i in range(src.size):
        m = ml[i]
        want = np.uint32(m) << np.uint32(16)
        if (m & 0x7F80) == 0 and (m & 0x7F) != 0:  # bf16 subnormal in ml_dtypes -> signed zero on TPU
            want = np.uint32(m & 0x8000) << np.uint32(16)
        if nm._rne_bits(src[i]) != want:
            bad += 1
    return bad


def test_exhaustive_2_32_against_ml_dtypes():
    """All 2^32 float32 patterns in 2^24 chunks (~5 s): equal to ml_dtypes except flushed subnormals."""
    chunk = 1 << 24
    buf = np.empty(chunk, np.uint32)
    ml = np.empty(chunk, BF16)
    bad = 0
    for start in range(0, 1 << 32, chunk):
        _fill(buf, start)
        with np.errstate(invalid="ignore", over="ignore"):
            np.copyto(ml, buf.view(np.float32), casting="unsafe")
        bad += _count_mismatches(buf, ml.view(np.uint16))
    assert bad == 0


@settings(max_examples=200, deadline=None)
@given(st.floats(width=32, allow_nan=True, allow_infinity=True))
def test_hypothesis_against_spec(v):
    u = int(_bits(np.array([v], np.float32))[0])
    assert int(nm.round_bf16_bits(np.array([u], np.uint32))[0]) == ref_round_one(u)


def test_to_from_bf16_roundtrip_and_dtypes():
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    b = nm.to_bf16(x)
    assert b.dtype == BF16 and b.shape == x.shape
    back = nm.from_bf16(b)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, nm.round_bf16(x))
    np.testing.assert_array_equal(nm.from_bf16(b), b.astype(np.float32))
    assert nm.round_bf16(b).dtype == np.float32  # bf16 input accepted
    assert nm.to_bf16(x[:, ::2]).shape == (3, 3)  # non-contiguous input


def test_split_x3_matches_xla_rewriter():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(10000) * np.exp(rng.uniform(-20, 20, 10000))).astype(np.float32)
    hi, lo = nm.split_bf16x3(x)
    t = (x.view(np.uint32) & 0xFFFF0000).view(np.float32)
    np.testing.assert_array_equal(hi, t)
    np.testing.assert_array_equal(lo, nm.round_bf16(x - t))
    for part in (hi, lo):
        np.testing.assert_array_equal(part, nm.round_bf16(part))  # bf16-representable
    rel = np.abs(hi.astype(np.float64) + lo - x) / np.abs(x)
    assert rel.max() <= 2.0**-16  # 16-bit significand pair


def test_split_x6_exact_for_normal_values():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(10000) * np.exp(rng.uniform(-20, 20, 10000))).astype(np.float32)
    hi, mid, lo = nm.split_bf16x6(x)
    t = (x.view(np.uint32) & 0xFFFF0000).view(np.float32)
    r1 = x - t
    tm = (r1.view(np.uint32) & 0xFFFF0000).view(np.float32)
    np.testing.assert_array_equal(hi, t)
    np.testing.assert_array_equal(mid, nm.round_bf16(tm))
    np.testing.assert_array_equal(lo, nm.round_bf16(r1 - tm))
    s = hi.astype(np.float64) + mid + lo
    assert np.max(np.abs(s - x) / np.abs(x)) <= 2.0**-24  # 3 x 8 bits cover the 24-bit significand


def test_split_specials():
    x = np.array([np.inf, -np.inf, np.nan, 1.0, 0.0], np.float32)
    hi, lo = nm.split_bf16x3(x)
    assert hi[0] == np.inf and np.isnan(lo[0])  # inf - inf = NaN: the dot's NaN guard removes it
    assert np.isnan(hi[2]) and hi[3] == 1.0 and lo[3] == 0.0
    hi, mid, lo = nm.split_bf16x6(x)
    assert hi[1] == -np.inf and np.isnan(mid[1])


def test_bf16_conversions_keep_zero_d_shape():
    x = np.array(1.5, np.float32)
    assert nm.to_bf16(x).shape == ()
    assert nm.from_bf16(nm.to_bf16(x)).shape == ()
    assert float(nm.from_bf16(nm.to_bf16(x))) == 1.5
