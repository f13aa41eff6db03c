"""The register-blocked exact MXU kernel (sim/mxu_kernel.py `tile_block` and its drivers) against
the kernel it replaced (session 50's packed `_micro`, copied below as the oracle): the same bits for every
output on shapes 1..300 in m, n and k (block multiples and not), batches, K tiles of several sizes, non-contiguous
operands, special values (inf, NaN, -0.0, subnormals, overflowing products) and every precision `mxu.matmul`
serves. NaN outputs are compared as NaN (their sign is not part of the order, see sim/mxu_kernel.py)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from torchtpu.sim import mxu, mxu_kernel
from torchtpu.sim.numerics import round_bf16

# ---- the oracle: session 50's kernel, verbatim but for the names ----
_MB = 8  # derived: rows per register block (8 x 64 measured fastest of 2..16 x 32..128 on AVX-512)
_NB = 64  # derived: register block columns (see _MB)
_MC = 64  # derived: rows per work item, so packing B (K x _NB) is amortised over 8 register blocks


@njit(cache=True, inline="always")
def _micro(ap: np.ndarray, bp: np.ndarray, kt: int, tsum: np.ndarray) -> None:
    """tsum[i, j] += a[k, i] * b[k, j] for k = 0..kt-1 in order, sequentially per output (no reassociation).

    Operands come as slices (not base + offset: measured 5x faster, LLVM then vectorises over j). Eight k steps
    share one load/store of each partial sum; the adds stay in k order (measured 1.4x faster than one step).
    """
    ku = kt - kt % 8
    for k in range(0, ku, 8):
        for i in range(_MB):
            a0 = ap[k * _MB + i]
            a1 = ap[(k + 1) * _MB + i]
            a2 = ap[(k + 2) * _MB + i]
            a3 = ap[(k + 3) * _MB + i]
            a4 = ap[(k + 4) * _MB + i]
            a5 = ap[(k + 5) * _MB + i]
            a6 = ap[(k + 6) * _MB + i]
            a7 = ap[(k + 7) * _MB + i]
            for j in range(_NB):
                t = tsum[i * _NB + j] + a0 * bp[k * _NB + j]
                t = t + a1 * bp[(k + 1) * _NB + j]
                t = t + a2 * bp[(k + 2) * _NB + j]
                t = t + a3 * bp[(k + 3) * _NB + j]
                t = t + a4 * bp[(k + 4) * _NB + j]
                t = t + a5 * bp[(k + 5) * _NB + j]
                t = t + a6 * bp[(k + 6) * _NB + j]
                tsum[i * _NB + j] = t + a7 * bp[(k + 7) * _NB + j]
    for k in range(ku, kt):
        for i in range(_MB):
            av = ap[k * _MB + i]
            for j in range(_NB):
                tsum[i * _NB + j] += av * bp[k * _NB + j]


@njit(cache=True)
def _dot_item(a: np.ndarray, b: np.ndarray, out: np.ndarray, item: int, tile: int) -> None:
    """One work item: batch bi, column block n0, row chunk mc0 (see the module docstring)."""
    m_total, k_total = a.shape[1], a.shape[2]
    n_total = b.shape[2]
    n_blocks = (n_total + _NB - 1) // _NB
    m_chunks = (m_total + _MC - 1) // _MC
    n_tiles = (k_total + tile - 1) // tile
    bi = item // (n_blocks * m_chunks)
    rest = item % (n_blocks * m_chunks)
    n0 = (rest // m_chunks) * _NB
    mc0 = (rest % m_chunks) * _MC
    nn = min(_NB, n_total - n0)
    bp = np.zeros(k_total * _NB, np.float32)
    for k in range(k_total):
        for j in range(nn):
            bp[k * _NB + j] = b[bi, k, n0 + j]
    ap = np.zeros(k_total * _MB, np.float32)
    tsum = np.empty(_MB * _NB, np.float32)
    acc = np.empty(_MB * _NB, np.float32)
    for m0 in range(mc0, min(m_total, mc0 + _MC), _MB):
        mm = min(_MB, m_total - m0)
        for k in range(k_total):
            for i in range(_MB):
                ap[k * _MB + i] = a[bi, m0 + i, k] if i < mm else np.float32(0.0)
        for q in range(_MB * _NB):
            acc[q] = 0.0
        for t in range(n_tiles):
            k0 = t * tile
            kt = min(k_total, k0 + tile) - k0
            for q in range(_MB * _NB):
                tsum[q] = 0.0
            _micro(ap[k0 * _MB :], bp[k0 * _NB :], kt, tsum)
            for q in range(_MB * _NB):
                acc[q] += tsum[q]
        for i in range(mm):
            for j in range(nn):
                out[bi, m0 + i, n0 + j] = acc[i * _NB + j]


@njit(cache=True)
def _items(a: np.ndarray, b: np.ndarray) -> int:
    return a.shape[0] * ((b.shape[2] + _NB - 1) // _NB) * ((a.shape[1] + _MC - 1) // _MC)

@njit(cache=True)
def _dot_exact3_serial(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    out = np.zeros((a.shape[0], a.shape[1], b.shape[2]), np.float32)
    for item in range(_items(a, b)):
        _dot_item(a, b, out, item, tile)
    return out


# ---- the comparisons ----
SPECIALS = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38, 1e-45, 2e-20,
                     -2e-20, 1e20], np.float32)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bits everywhere, except that a NaN only has to meet a NaN."""
    assert got.shape == want.shape and got.dtype == want.dtype == np.float32
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    g, w = got.view(np.uint32), want.view(np.uint32)
    bad = np.flatnonzero((g != w) & ~nan)
    assert bad.size == 0, f"{bad.size} outputs differ, first at {bad[0]}: {got.flat[bad[0]]!r} vs {want.flat[bad[0]]!r}"


def _operands(rng, batch: int, m: int, k: int, n: int, specials: int) -> tuple[np.ndarray, np.ndarray]:
    """bf16-valued float32 operands spread over many binades (sums round often), with `specials` special
    values sprinkled into each."""
    def one(shape):
        x = rng.standard_normal(shape) * np.exp2(rng.integers(-30, 30, shape))
        x = round_bf16(x.astype(np.float32))
        if specials:
            x.flat[rng.integers(0, x.size, specials)] = round_bf16(rng.choice(SPECIALS, specials))
        return x
    return one((batch, m, k)), one((batch, k, n))


def _check(a: np.ndarray, b: np.ndarray, tile: int) -> None:
    """The new kernel's serial and parallel forms and `dot_exact` (which may run the product transposed) against
    the oracle, for (batch, M, K) @ (batch, K, N) or 2-D operands of any strides."""
    a3, b3 = (np.ascontiguousarray(x if x.ndim == 3 else x[None]) for x in (a, b))
    want = _dot_exact3_serial(a3, b3, tile)
    _same(mxu_kernel._dot_exact3_serial(a3, b3, tile), want)
    _same(mxu_kernel._dot_exact3(a3, b3, tile), want)
    _same(mxu_kernel.dot_exact(a, b, tile), want if a.ndim == 3 else want[0])


EDGE = [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 300]


@pytest.mark.parametrize("seed", range(6))
def test_random_shapes_match_the_old_kernel_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    for _ in range(25):
        m, k, n = (int(rng.choice(EDGE)) if rng.random() < 0.5 else int(rng.integers(1, 301)) for _ in range(3))
        batch = int(rng.integers(1, 4)) if m * n * k < 200_000 else 1
        tile = int(rng.choice([128, 256, 128, 1, 3, 8, 64]))
        a, b = _operands(rng, batch, m, k, n, specials=int(rng.integers(0, 4)))
        _check(a, b, tile)


@pytest.mark.parametrize(("m", "k", "n"), [(64, 64, 64), (1, 1, 1), (4, 128, 16), (3, 129, 17), (300, 300, 300),
                                           (65, 257, 1), (1, 257, 65), (8, 8, 8), (16, 300, 4)])
@pytest.mark.parametrize("tile", [128, 256, 7])
def test_edge_shapes_match_the_old_kernel_bit_for_bit(m, k, n, tile):
    rng = np.random.default_rng(m * 7 + k * 11 + n * 13 + tile)
    _check(*_operands(rng, 2 if m * n * k < 100_000 else 1, m, k, n, specials=3), tile)


def test_special_values_everywhere():
    """Dense special values: inf - inf and inf * 0 NaNs, -0.0 sums, subnormal and underflowing products, and
    products that overflow (an FMA would keep them finite)."""
    rng = np.random.default_rng(5)
    for m, k, n in [(9, 40, 21), (64, 64, 64), (4, 300, 16), (33, 130, 70)]:
        a = round_bf16(rng.choice(SPECIALS, (2, m, k)))
        b = round_bf16(rng.choice(SPECIALS, (2, k, n)))
        _check(a, b, 128)
        _check(a, b, 5)
        tiny = round_bf16((rng.standard_normal((1, m, k)) * 1e-22).astype(np.float32))
        _check(tiny, round_bf16((rng.standard_normal((1, k, n)) * 1e-22).astype(np.float32)), 128)
        big = round_bf16((rng.standard_normal((1, m, k)) * 1e19).astype(np.float32))
        _check(big, round_bf16((rng.standard_normal((1, k, n)) * 1e20).astype(np.float32)), 128)
        _check(-np.zeros((1, m, k), np.float32), np.zeros((1, k, n), np.float32), 128)


def test_non_contiguous_and_transposed_operands():
    rng = np.random.default_rng(9)
    a, b = _operands(rng, 3, 70, 90, 50, specials=2)
    _check(a.transpose(0, 2, 1).copy().transpose(0, 2, 1), b[:, :, ::-1], 128)
    _check(a[:, ::2, :], b[:, :, 1::3], 128)
    for m, k, n in [(70, 90, 3), (2, 40, 100), (1, 64, 1)]:  # narrow products run transposed (_transposed_is_cheaper)
        a, b = _operands(rng, 1, m, k, n, specials=2)
        _check(a[0], b[0], 128)


@pytest.mark.parametrize("precision", ["DEFAULT", "HIGH", "HIGHEST"])
@pytest.mark.parametrize(("m", "k", "n"), [(64, 64, 64), (5, 200, 19), (33, 17, 130)])
def test_every_precision_matches_the_old_kernel(monkeypatch, precision, m, k, n):
    """mxu.matmul's passes (bf16 splits for HIGH/HIGHEST, the fused DEFAULT rounding) on the new kernel equal
    the same passes on the old one."""
    rng = np.random.default_rng(m + k + n)
    a = (rng.standard_normal((2, m, k)) * 3).astype(np.float32)
    b = (rng.standard_normal((2, k, n)) * 3).astype(np.float32)
    a.flat[:3], b.flat[-3:] = [np.inf, -0.0, 1e-40], [np.nan, 3e38, -1e-39]
    got = mxu.matmul(a, b, precision=precision, mode="exact")
    monkeypatch.setattr(mxu_kernel, "_dot_exact3_serial", _dot_exact3_serial)
    monkeypatch.setattr(mxu_kernel, "_dot_exact3", _dot_exact3_serial)
    monkeypatch.setattr(mxu_kernel, "_dot_rounded3_serial",
                        lambda x, y, t: _dot_exact3_serial(mxu_kernel._rounded(x), mxu_kernel._rounded(y), t))
    _same(got, mxu.matmul(a, b, precision=precision, mode="exact"))
