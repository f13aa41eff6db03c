"""sim/mxu_native.py: the native `mm_into` (called through its address, as C++ calls it) writes what
`mxu_kernel._mm_rounded_into` writes, bit for bit, special values, ragged K tiles and non-square shapes included."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from torchtpu.sim import mxu_kernel, mxu_native

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38, 1e-45], np.float32)
_MM_INTO = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3, *[ctypes.c_int64] * 4)


@pytest.mark.parametrize(("m", "k", "n", "tile"), [(8, 8, 8, 128), (3, 7, 5, 2), (1, 16, 9, 4), (8, 5, 8, 5)])
def test_native_mm_into_matches_the_numba_kernel_bit_for_bit(m, k, n, tile):
    rng = np.random.default_rng(m * 1000 + k * 100 + n * 10 + tile)
    a = (rng.standard_normal((m, k)) * 1e19).astype(np.float32)
    b = (rng.standard_normal((k, n)) * 1e19).astype(np.float32)
    a.flat[rng.integers(0, a.size, 3)] = rng.choice(SPECIALS, 3)
    b.flat[rng.integers(0, b.size, 3)] = rng.choice(SPECIALS, 3)
    got, want = np.full((m, n), 7.0, np.float32), np.full((m, n), 7.0, np.float32)
    _MM_INTO(mxu_native.mm_into_address())(a.ctypes.data, b.ctypes.data, got.ctypes.data, m, k, n, tile)
    mxu_kernel._mm_rounded_into(a, b, want, tile)
    assert got.view(np.uint32).tobytes() == want.view(np.uint32).tobytes()
