"""Whether BLAS may read a fast-mode MXU operand in its transposed layout, with the same bits as in C order.

A DEFAULT-precision fast dot rounds its operands to bf16 values (mxu_round.py) and hands them to np.matmul.
An operand that arrives transposed (unit stride down its rows: the backward's `x.T @ g`, attention's `k^T`)
was always gathered into C order first, because BLAS's summation may depend on the layout it is given: this
OpenBLAS (0.3.31, SkylakeX kernels) sums differently for a transposed flag on some shapes (its small-matrix
kernels and gemv paths; 3 of 150 random shapes in session perf25), and a product must not change bits with
the layout its operands happen to have (eager and compiled dots of one product would differ). The gather was
~11 ms of a ~136 ms medium (hidden 256, 2 x 256 tokens) compiled Llama training step (perf26).

`same_bits` decides per product shape, once: it computes a probe product of random bf16-valued operands both
ways (C order, and the layout in question, with the same strides the rounded operands will have) through the
same `matmul` and compares the bits. BLAS's summation order depends on the shapes, the layout and its thread
count, never on the values (no data-dependent branches in its kernels), so a product whose order differed
would show it on random operands: with K >= 3 terms a different order or a fused multiply-add changes the
float32 sum of random bf16 products in a large share of the outputs. A shape whose probe differs (or a
product too small to be worth a probe, where the gather is cheap anyway) keeps the gather. The decision is
cached per (shapes, layout, BLAS threads); tests/test_mxu_layout.py checks real operands both ways.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .numerics import round_bf16

__all__ = ["MIN_MACS", "same_bits", "transposed"]

MIN_MACS = 1 << 21  # products below this keep the gather: it is cheap there, and small-matrix kernels live there
_CACHE_MAX = 4096
_decided: dict[tuple, bool] = {}


def transposed(x: np.ndarray) -> bool:
    """Whether `x` is a transposed C-contiguous array (its last two axes swapped give C order), not C order."""
    return x.ndim >= 2 and not x.flags.c_contiguous and x.swapaxes(-1, -2).flags.c_contiguous


def _probe(shape: tuple[int, ...], swap: bool, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(C-order operand, the same values in the probed layout) of random bf16 values."""
    if not swap:
        x = round_bf16(rng.standard_normal(shape, dtype=np.float32))
        return x, x
    t = round_bf16(rng.standard_normal((*shape[:-2], shape[-1], shape[-2]), dtype=np.float32))
    view = t.swapaxes(-1, -2)
    return np.ascontiguousarray(view), view


def same_bits(a_shape: tuple[int, ...], b_shape: tuple[int, ...], ta: bool, tb: bool, threads: int | None,
              matmul: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> bool:
    """Whether `matmul` of (a_shape) @ (b_shape) operands, a transposed when `ta`, b when `tb`, gives the bits
    of the C-order product (module docstring); `threads`: BLAS's thread count, part of the cache key."""
    key = (a_shape, b_shape, ta, tb, threads)
    found = _decided.get(key)
    if found is not None:
        return found
    m, k = a_shape[-2:]
    n = b_shape[-1]
    if not (ta or tb) or math.prod(a_shape[:-2]) * m * n * k < MIN_MACS or min(m, n, k) < 3:
        same = not (ta or tb)
    else:
        rng = np.random.default_rng(len(_decided))
        a, a_view = _probe(a_shape, ta, rng)
        b, b_view = _probe(b_shape, tb, rng)
        want = matmul(a, b)
        got = matmul(a_view, b_view)
        same = want.shape == got.shape and want.dtype == got.dtype and want.tobytes() == got.tobytes()
    if len(_decided) >= _CACHE_MAX:
        _decided.clear()
    _decided[key] = same
    return same
