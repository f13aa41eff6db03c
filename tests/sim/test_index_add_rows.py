"""drivers/sim/index_add_rows.py: the compiled index_add loop gives `np.add.at`'s bits (the sim kernel's former
computation) for every dimension, duplicate indices, NaN payloads, infinities and signed zeros, and declines
what it does not cover."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers.sim.index_add_rows import index_add


def _reference(x: np.ndarray, index: np.ndarray, src: np.ndarray, dim: int) -> np.ndarray:
    out = np.moveaxis(x.copy(), dim, 0)
    np.add.at(out, index, np.moveaxis(src, dim, 0))
    return np.moveaxis(out, 0, dim)


def _specials(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    values = rng.standard_normal(shape).astype(dtype)
    if values.dtype.kind == "f":
        bits = values.view(np.uint32 if dtype == np.float32 else np.uint64).reshape(-1)
        picks = rng.integers(0, bits.size, bits.size // 4)
        specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e38, -1e38], dtype)
        values.reshape(-1)[picks] = specials[rng.integers(0, len(specials), picks.size)]
        # NaNs with payloads: which one survives a NaN + NaN depends on the operand order
        payload = np.array(0x7FC00001 if dtype == np.float32 else 0x7FF8000000000001, bits.dtype)
        bits[picks[:5]] = payload + np.arange(min(5, picks.size), dtype=bits.dtype)
    return values


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("shape,dim", [((1000, 16), 0), ((50, 131), 0), ((7, 5, 3), 1), ((5, 200, 3), 1),
                                       ((4, 6, 9), 2), ((3, 0, 2), 1)])
def test_same_bits_as_add_at(dtype: type, shape: tuple[int, ...], dim: int) -> None:
    rng = np.random.default_rng(0)
    dtype = np.dtype(dtype)
    n = 3 * shape[dim] + 1 if shape[dim] else 0
    index = rng.integers(0, max(shape[dim], 1), n) if shape[dim] else np.zeros(0, np.int64)
    index[: n // 2] = index[0] if n else index[: n // 2]  # many duplicates of one row
    src_shape = shape[:dim] + (n,) + shape[dim + 1:]
    if dtype.kind == "f":
        x, src = _specials(rng, shape, dtype), _specials(rng, src_shape, dtype)
    else:
        x = rng.integers(-(2**30), 2**30, shape).astype(dtype)
        src = rng.integers(-(2**30), 2**30, src_shape).astype(dtype)  # int32 sums wrap, as in np.add.at
    got = index_add(x, index, src, dim)
    assert got is not None and got.flags.c_contiguous
    want = _reference(x, index, src, dim)
    view = {4: np.uint32, 8: np.uint64}[dtype.itemsize]
    assert np.array_equal(got.view(view), np.ascontiguousarray(want).view(view))
    assert x is not got and not np.shares_memory(x, got)


def test_declines_what_it_does_not_cover() -> None:
    x = np.zeros((4, 3), np.float32)
    assert index_add(x, np.array([0, 1]), np.ones((2, 3), np.float64), 0) is None  # mixed dtypes
    assert index_add(x.astype(np.float16), np.array([0]), np.ones((1, 3), np.float16), 0) is None
    assert index_add(x, np.array([[0]]), np.ones((1, 3), np.float32), 0) is None  # a 2-D index
    assert index_add(x.astype(bool), np.array([0]), np.ones((1, 3), bool), 0) is None
    assert index_add(np.zeros(4, np.float32), np.array([0]), np.ones(1, np.float32), 0) is None  # 1-D: add.at's
