"""The exact-order MXU dot kernel (numba): owns the loop nest that defines the simulated summation order.

Given float32 operands that hold bf16 values (so every product is exact in float32), `dot_exact(a, b, tile)`
computes, for every batch index, output row m and column n:

    acc = +0.0
    for t in range(ceil(K / tile)):            # K tiles in increasing order
        s = +0.0
        for k in range(t*tile, min(K, (t+1)*tile)):
            s = fl32(s + a[m, k] * b[k, n])    # sequential float32 sum down the array, in k order
        acc = fl32(acc + s)                    # tile result added to the float32 accumulator
    out[m, n] = acc

This is a weight-stationary systolic pass (tpu-facts section 3): a `tile`-row slice of K is resident in the
array, each partial sum runs down the column adding one product per row, and the column result is added to
the output accumulator tile after tile. No FMA contraction or reassociation is allowed (numba fastmath off);
vectorisation runs across independent outputs only. Subnormal float32 intermediates follow IEEE (the TPU's
internal denormal handling is UNCONFIRMED in the sources).

Implementation: outputs are computed in register blocks of _MB rows x _NB columns from packed copies of the
operands (zero-padded at the M/N edges, whose results are discarded); work items are (batch, column block,
row chunk) spread with prange. An eager mm of at most SMALL_INTO_MAX_MACS multiply-adds instead runs the plain
loop nest of `_mm_rounded_into`, writing the caller's output buffer (same sums in the same order).

NaN signs are not part of the order: where a +NaN product meets a -NaN one (inf * 0), which one survives depends
on LLVM's operand order for `+`, and that differs between a freshly compiled `_mm_rounded_serial` and the same
function loaded from numba's cache (measured: 0xffc00000 vs 0x7fc00000 in 35 of ~1.3M special-valued outputs).
"""

from __future__ import annotations

import math
import os

import numba
import numpy as np
from numba import njit, prange

from .numerics import _round_bits_loop, round_bf16

PARALLEL_MIN_MACS = 1 << 22  # below this many multiply-adds the exact kernel runs single-threaded

if "NUMBA_THREADING_LAYER" not in os.environ:
    # numba's own pool: an OpenMP layer would share libgomp with PyTorch, and set_num_threads below would then
    # change PyTorch's thread count too (seen: torch.get_num_threads() 1 -> 2 after one exact matmul).
    numba.config.THREADING_LAYER = "workqueue"

__all__ = ["dot_exact", "dot_exact_bf16_rounded", "dot_small_bf16_rounded3", "mm_small_bf16_rounded",
           "mm_small_bf16_rounded_into"]

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


@njit(cache=True, parallel=True)
def _dot_exact3(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    out = np.zeros((a.shape[0], a.shape[1], b.shape[2]), np.float32)
    for item in prange(_items(a, b)):
        _dot_item(a, b, out, item, tile)
    return out


# The same work items without the parallel backend: entering a parallel region costs tens of microseconds
# even on one thread, more than a small product itself.
@njit(cache=True)
def _dot_exact3_serial(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    out = np.zeros((a.shape[0], a.shape[1], b.shape[2]), np.float32)
    for item in range(_items(a, b)):
        _dot_item(a, b, out, item, tile)
    return out


@njit(cache=True)
def _rounded(bits: np.ndarray) -> np.ndarray:
    out = np.empty(bits.shape, np.float32)
    _round_bits_loop(bits.reshape(-1), out.reshape(-1).view(np.uint32))
    return out


# DEFAULT precision in one call: both operands rounded to bf16 exactly as `numerics.round_bf16` does, then the
# serial kernel (two Python-level calls and their checks fewer; small products are most of an eager step).
@njit(cache=True)
def _dot_rounded3_serial(a_bits: np.ndarray, b_bits: np.ndarray, tile: int) -> np.ndarray:
    return _dot_exact3_serial(_rounded(a_bits), _rounded(b_bits), tile)


# A 2-D (M, K) @ (K, N) DEFAULT-precision product of C-contiguous float32 operands (an eager `mm`): the operands'
# bits are viewed and the batch axis added inside the compiled function, so a call crosses numba's dispatcher
# once with no Python-level reshapes or views (each ~0.2-0.3 us, on a ~5 us 8x8 launch).
@njit(cache=True)
def _mm_rounded_serial(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    m, k = a.shape
    n = b.shape[1]
    out = _dot_rounded3_serial(a.view(np.uint32).reshape(1, m, k), b.view(np.uint32).reshape(1, k, n), tile)
    return out.reshape(m, n)


# A small 2-D DEFAULT-precision product written into `out` (an eager `mm`'s output buffer): the same sums as
# `_mm_rounded_serial` in the same order (per output, products added down k within each tile, tiles added to a
# +0.0 accumulator; no FMA, fastmath off) with no packing into 64-column register blocks and no result array to
# box: at 8x8x8 the packed kernel runs 8x the multiply-adds and returning a fresh array costs ~0.45 us. The
# operands are rounded into fresh arrays first, so `out` may share memory with either of them.
@njit(cache=True)
def _mm_rounded_into(a: np.ndarray, b: np.ndarray, out: np.ndarray, tile: int) -> None:
    m, k = a.shape
    n = b.shape[1]
    ar = _rounded(a.view(np.uint32).reshape(m * k))
    br = _rounded(b.view(np.uint32).reshape(k * n))
    acc = np.empty(n, np.float32)
    part = np.empty(n, np.float32)
    for i in range(m):
        acc[:] = 0.0
        for k0 in range(0, k, tile):
            part[:] = 0.0
            for kk in range(k0, min(k, k0 + tile)):
                av = ar[i * k + kk]
                for j in range(n):
                    part[j] = part[j] + av * br[kk * n + j]
            for j in range(n):
                acc[j] = acc[j] + part[j]
        for j in range(n):
            out[i, j] = acc[j]


SMALL_INTO_MAX_MACS = 1 << 11  # derived: above this the packed kernel's register blocks win (measured below)


def mm_small_bf16_rounded_into(a: np.ndarray, b: np.ndarray, out: np.ndarray, tile: int) -> None:
    """`out[...] = mm_small_bf16_rounded(a, b, tile)` for 2-D float32 (M, K) @ (K, N) operands and a float32
    (M, N) `out` (any strides; it may overlap the operands), under `mm_small_bf16_rounded`'s conditions. Faster
    than it only up to about SMALL_INTO_MAX_MACS multiply-adds; the caller checks `out`'s shape."""
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    if not b.flags.c_contiguous:
        b = np.ascontiguousarray(b)
    _mm_rounded_into(a, b, out, tile)


def _batched(a: np.ndarray, b: np.ndarray) -> tuple[tuple, int, int, int, int] | None:
    lead = a.shape[:-2]
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch = math.prod(lead)
    return (lead, batch, m, k, n) if batch and m and n and k else None


def _contiguous_f32(x: np.ndarray) -> np.ndarray:
    return x if x.dtype == np.float32 and x.flags.c_contiguous else np.ascontiguousarray(x, dtype=np.float32)


def _transposed_is_cheaper(m: int, n: int) -> bool:
    """Whether out^T = b^T @ a^T pads less: register blocks are _MB rows x _NB columns, so a narrow product
    (N = 1 in a transposed convolution's GEMM) would run 64x its work. Each output is the same sum of the same
    products in the same order either way (float multiplication commutes exactly): equal values, NaN payloads aside."""
    return -(-n // _MB) * _MB * -(-m // _NB) * _NB < -(-m // _MB) * _MB * -(-n // _NB) * _NB


def _swap(x: np.ndarray) -> np.ndarray:
    return x.swapaxes(-1, -2)


def dot_exact(a: np.ndarray, b: np.ndarray, tile: int = 128) -> np.ndarray:
    """float32 (..., M, K) @ (..., K, N) in the order of the module docstring; operands hold bf16 values."""
    if tile < 1:
        raise ValueError(f"tile must be positive, got {tile}")
    dims = _batched(a, b)
    if dims is None:
        return np.zeros((*a.shape[:-1], b.shape[-1]), np.float32)
    lead, batch, m, k, n = dims
    if _transposed_is_cheaper(m, n):
        return np.ascontiguousarray(_swap(dot_exact(_swap(b), _swap(a), tile)))
    a3 = _contiguous_f32(a).reshape(batch, m, k)
    b3 = _contiguous_f32(b).reshape(batch, k, n)
    if batch * m * n * k >= PARALLEL_MIN_MACS:
        return _dot_exact3(a3, b3, int(tile)).reshape(*lead, m, n)
    # Small products run serially: waking the pool costs more than it saves, and on a loaded 2-core machine a
    # parallel region can stall for milliseconds (measured: 64^3 took 32 ms on 2 threads, 44 us on 1 thread
    # inside the parallel region, 14 us in the serial twin).
    return _dot_exact3_serial(a3, b3, int(tile)).reshape(*lead, m, n)


def dot_exact_bf16_rounded(a: np.ndarray, b: np.ndarray, tile: int = 128) -> np.ndarray:
    """`dot_exact(round_bf16(a), round_bf16(b), tile)` for float32 operands (one DEFAULT-precision pass)."""
    dims = _batched(a, b)
    if dims is None or tile < 1 or math.prod(dims[1:]) >= PARALLEL_MIN_MACS:
        return dot_exact(round_bf16(a), round_bf16(b), tile)
    lead, batch, m, k, n = dims
    return dot_small_bf16_rounded3(a.reshape(batch, m, k), b.reshape(batch, k, n), int(tile)).reshape(*lead, m, n)


def mm_small_bf16_rounded(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    """`dot_small_bf16_rounded3` of 2-D float32 (M, K) @ (K, N) operands, returning (M, N), under the same
    conditions, and with `_transposed_is_cheaper(M, N)` false (the caller decides both once per shape)."""
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    if not b.flags.c_contiguous:
        b = np.ascontiguousarray(b)
    return _mm_rounded_serial(a, b, tile)


def dot_small_bf16_rounded3(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    """`dot_exact_bf16_rounded` of (batch, M, K) @ (batch, K, N) float32 operands without its checks: the caller
    makes sure that no dimension is 0, that batch*M*N*K < PARALLEL_MIN_MACS and that `tile` is a positive int."""
    if _transposed_is_cheaper(a.shape[1], b.shape[2]):
        return np.ascontiguousarray(_swap(dot_small_bf16_rounded3(_swap(b), _swap(a), tile)))
    return _dot_rounded3_serial(_contiguous_f32(a).view(np.uint32), _contiguous_f32(b).view(np.uint32), tile)
