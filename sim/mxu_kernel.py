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

Implementation: the operands are zero-padded to whole register blocks (copies only at ragged edges), and each
work item (batch, _NB-column block, _MC-row chunk; spread with prange for large products) walks the K tiles in
order, adding each tile's sums to the output in register blocks of mxu_micro._R rows x mxu_micro._C columns
(`mxu_micro.tile_block`: the partial sums stay in vector registers, B is loaded once per k for all _R rows, no
packing). Padded rows and columns are computed and dropped. An eager mm of at most SMALL_INTO_MAX_MACS
multiply-adds instead runs the plain loop nest of `_mm_rounded_into`, writing the caller's output buffer (same
sums in the same order). numba's cache does not see `tile_block`'s module: after editing sim/mxu_micro.py,
touch this file (or clear the cache) or stale machine code with the old block sizes is loaded.

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

from .mxu_micro import _C, _R, tile_block
from .numerics import _round_bits_loop, round_bf16

PARALLEL_MIN_MACS = 1 << 22  # below this many multiply-adds the exact kernel runs single-threaded

if "NUMBA_THREADING_LAYER" not in os.environ:
    # numba's own pool: an OpenMP layer would share libgomp with PyTorch, and set_num_threads below would then
    # change PyTorch's thread count too (seen: torch.get_num_threads() 1 -> 2 after one exact matmul).
    numba.config.THREADING_LAYER = "workqueue"

__all__ = ["dot_exact", "dot_exact_bf16_rounded", "dot_small_bf16_rounded3", "mm_small_bf16_rounded",
           "mm_small_bf16_rounded_into"]

_NB = 64  # derived: columns per work item (a multiple of mxu_micro._C)
_MC = 64  # derived: rows per work item (a multiple of mxu_micro._R)


@njit(cache=True)
def _dot_item(af: np.ndarray, bf: np.ndarray, of: np.ndarray, dims: tuple, item: int, tile: int) -> None:
    """One work item: batch bi, column block n0, row chunk mc0 of the padded operands (module docstring),
    K tile by K tile, each tile's sums added to the output by `tile_block` in register blocks."""
    mp, k_total, npad = dims
    n_blocks = (npad + _NB - 1) // _NB
    m_chunks = (mp + _MC - 1) // _MC
    bi = item // (n_blocks * m_chunks)
    rest = item % (n_blocks * m_chunks)
    n0 = (rest // m_chunks) * _NB
    mc0 = (rest % m_chunks) * _MC
    a_base, b_base, o_base = bi * mp * k_total, bi * k_total * npad, bi * mp * npad
    for k0 in range(0, k_total, tile):
        kt = min(tile, k_total - k0)
        for c0 in range(n0, min(npad, n0 + _NB), _C):
            for m0 in range(mc0, min(mp, mc0 + _MC), _R):
                tile_block(af, a_base + m0 * k_total, k_total, bf, b_base + c0, npad, k0, kt,
                           of, o_base + m0 * npad + c0, npad, k0 == 0)


@njit(cache=True)
def _items(batch: int, mp: int, npad: int) -> int:
    return batch * ((npad + _NB - 1) // _NB) * ((mp + _MC - 1) // _MC)


@njit(cache=True)
def _padded(a: np.ndarray, b: np.ndarray) -> tuple:
    """The operands zero-padded to whole register blocks (_R rows of A, _C columns of B; copies only where
    needed), the padded output and its dimensions (padded rows and columns are computed and discarded)."""
    batch, m, k = a.shape
    n = b.shape[2]
    mp, npad = -(-m // _R) * _R, -(-n // _C) * _C
    if mp != m:
        ap = np.zeros((batch, mp, k), np.float32)
        ap[:, :m, :] = a
    else:
        ap = a
    if npad != n:
        bp = np.zeros((batch, k, npad), np.float32)
        bp[:, :, :n] = b
    else:
        bp = b
    return ap, bp, np.empty((batch, mp, npad), np.float32), (mp, k, npad)


@njit(cache=True)
def _unpadded(out: np.ndarray, m: int, n: int) -> np.ndarray:
    return out if out.shape[1] == m and out.shape[2] == n else np.ascontiguousarray(out[:, :m, :n])


@njit(cache=True, parallel=True)
def _dot_exact3(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    ap, bp, out, dims = _padded(a, b)
    af, bf, of = ap.reshape(-1), bp.reshape(-1), out.reshape(-1)
    for item in prange(_items(a.shape[0], dims[0], dims[2])):
        _dot_item(af, bf, of, dims, item, tile)
    return _unpadded(out, a.shape[1], b.shape[2])


# The same work items without the parallel backend: entering a parallel region costs tens of microseconds
# even on one thread, more than a small product itself.
@njit(cache=True)
def _dot_exact3_serial(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    ap, bp, out, dims = _padded(a, b)
    af, bf, of = ap.reshape(-1), bp.reshape(-1), out.reshape(-1)
    for item in range(_items(a.shape[0], dims[0], dims[2])):
        _dot_item(af, bf, of, dims, item, tile)
    return _unpadded(out, a.shape[1], b.shape[2])


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
    """Whether out^T = b^T @ a^T pads less: register blocks are _R rows x _C columns, so a narrow product
    (N = 1 in a transposed convolution's GEMM) would run 64x its work. Each output is the same sum of the same
    products in the same order either way (float multiplication commutes exactly): equal values, NaN payloads aside."""
    return -(-n // _R) * _R * -(-m // _C) * _C < -(-m // _R) * _R * -(-n // _C) * _C


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
