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
order, adding each tile's sums to the output in register blocks of _R rows x _C columns
(`tile_block`: the partial sums stay in vector registers, B is loaded once per k for all _R rows, no
packing). Padded rows and columns are computed and dropped. An eager mm of at most SMALL_INTO_MAX_MACS
multiply-adds instead runs the plain loop nest of `_mm_rounded_into`, writing the caller's output buffer (same
sums in the same order); a larger one (`_mm_blocked_into`) has the register blocks write that buffer directly.

FMA: where every product of the two operands is exact in float32 (bf16 values, no product overflowing or below
2^-126, no inf or NaN: `fma_exact`, decided from a scan of both operands, after the rounding pass where there is
one), `tile_block_fma` runs instead, one llvm.fma per multiply-add: fl(s + a*b) with a*b exact is the same float32
as fl(s + fl(a*b)), so the sums are bit for bit those above (tests/sim/test_mxu_fma.py), ~20-25% faster.

NaN signs are not part of the order: where a +NaN product meets a -NaN one (inf * 0), which one survives depends
on LLVM's operand order for `+`, and that differs between a freshly compiled `_mm_rounded_serial` and the same
function loaded from numba's cache (measured: 0xffc00000 vs 0x7fc00000 in 35 of ~1.3M special-valued outputs).
"""

from __future__ import annotations

import math
import os

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from .mxu_round import _round_loop
from .numerics import _round_bits_loop, round_bf16

PARALLEL_MIN_MACS = 1 << 22  # below this many multiply-adds the exact kernel runs single-threaded

if "NUMBA_THREADING_LAYER" not in os.environ:
    # numba's own pool: an OpenMP layer would share libgomp with PyTorch, and set_num_threads below would then
    # change PyTorch's thread count too (seen: torch.get_num_threads() 1 -> 2 after one exact matmul).
    numba.config.THREADING_LAYER = "workqueue"

__all__ = ["dot_exact", "dot_exact_bf16_rounded", "dot_small_bf16_rounded3", "mm_small_bf16_rounded",
           "mm_small_bf16_rounded_into"]

# The register-blocked micro kernel, written as LLVM vector IR (kept in this file: numba's cache of the kernels
# that inline it only watches this file).
#
# `tile_block(af, ao, lda, bf, bo, ldb, k0, kt, of, oo, ldo, first)` adds one K tile to an _R x _C block of
# outputs: for each output (r, c) it forms s = +0.0, then s = fl32(s + a[r, k] * b[k, c]) for k = k0..k0+kt-1 in
# order, and stores out[r, c] = fl32(acc + s) with acc = +0.0 when `first` is true, else the stored out[r, c].
# That is one tile of the module docstring's summation order, per output, exactly (fmul and fadd without fast-math
# flags, so LLVM neither contracts them into an FMA nor reassociates; multiplication commutes exactly).
#
# Element (r, k) of A is af[ao + r*lda + k], element (k, c) of B is bf[bo + k*ldb + c], output (r, c) is
# of[oo + r*ldo + c]; all three are flat float32 arrays and the caller keeps every index in bounds (no checks).
#
# Why IR: numba compiles with LLVM's SLP vectorizer off (numba.config.SLP_VECTORIZE) and the loop vectorizer
# only vectorizes the innermost loop, so a numba loop nest keeps the partial sums in memory and reloads the
# same B row for every output row (load-bound, Session 50). Here the _R x _C partial sums are _R*_W vectors of
# _V float32 lanes that stay in registers for the whole tile; each k loads _W vectors of B once for _R rows and
# broadcasts _R scalars of A.

_V = 8  # derived: float32 lanes per vector (ymm; numba's LLVM prefers 256-bit vectors on AVX-512 hosts)
_W = 2  # derived: vectors per block row (measured, see benchmarks/dispatch.py Session 51)
_R = 8  # derived: rows per register block (measured, see _W)
_C = _V * _W  # columns per register block

_F32 = ir.FloatType()
_VEC = ir.VectorType(_F32, _V)
_I64 = ir.IntType(64)


def _address(builder: ir.IRBuilder, base: ir.Value, index: ir.Value, typ: ir.Type) -> ir.Value:
    """A pointer to `typ` at float32 element `index` of the buffer whose address (i64) is `base`."""
    addr = builder.add(base, builder.mul(index, ir.Constant(_I64, 4)))
    return builder.inttoptr(addr, typ.as_pointer())


def _data(context, builder: ir.IRBuilder, aryty, value) -> ir.Value:
    return builder.ptrtoint(context.make_array(aryty)(context, builder, value).data, _I64)


def _tile_block(fused: bool):  # noqa: ANN202 - a numba intrinsic
    """`tile_block` (fused False: fmul then fadd) or `tile_block_fma` (fused True: llvm.fma, one rounding per
    multiply-add; equal to the unfused sums only where every product is exact in float32, see `fma_exact`)."""

    def tile(typingctx, af, ao, lda, bf, bo, ldb, k0, kt, of, oo, ldo, first):  # noqa: ANN001, ANN202
        sig = types.void(af, ao, lda, bf, bo, ldb, k0, kt, of, oo, ldo, first)

        def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
            a_ty, _, _, b_ty, _, _, _, _, o_ty = signature.args[:9]
            af_v, ao_v, lda_v, bf_v, bo_v, ldb_v, k0_v, kt_v, of_v, oo_v, ldo_v, first_v = args
            abase, bbase, obase = (_data(context, builder, a_ty, af_v), _data(context, builder, b_ty, bf_v),
                                   _data(context, builder, o_ty, of_v))
            zero = ir.Constant(_VEC, None)
            sums = [[cgutils.alloca_once_value(builder, zero) for _ in range(_W)] for _ in range(_R)]
            rows = [builder.add(ao_v, builder.add(builder.mul(ir.Constant(_I64, r), lda_v), k0_v))
                    for r in range(_R)]
            bstart = builder.add(bo_v, builder.mul(k0_v, ldb_v))
            with cgutils.for_range(builder, kt_v) as loop:
                k = loop.index
                brow = builder.add(bstart, builder.mul(k, ldb_v))
                bv = [builder.load(_address(builder, bbase, builder.add(brow, ir.Constant(_I64, w * _V)), _VEC),
                                   align=4, typ=_VEC) for w in range(_W)]
                for r in range(_R):
                    av = builder.load(_address(builder, abase, builder.add(rows[r], k), _F32), align=4, typ=_F32)
                    splat = builder.shuffle_vector(builder.insert_element(ir.Constant(_VEC, ir.Undefined), av,
                                                                          ir.Constant(ir.IntType(32), 0)),
                                                   ir.Constant(_VEC, ir.Undefined),
                                                   ir.Constant(ir.VectorType(ir.IntType(32), _V), [0] * _V))
                    for w in range(_W):
                        old = builder.load(sums[r][w], typ=_VEC)
                        if fused:
                            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VEC, [_VEC] * 3),
                                                                 f"llvm.fma.v{_V}f32")
                            new = builder.call(fma, [splat, bv[w], old])
                        else:
                            new = builder.fadd(old, builder.fmul(splat, bv[w]))
                        builder.store(new, sums[r][w])
            is_first = context.cast(builder, first_v, signature.args[11], types.boolean)
            for r in range(_R):
                orow = builder.add(oo_v, builder.mul(ir.Constant(_I64, r), ldo_v))
                for w in range(_W):
                    ptr = _address(builder, obase, builder.add(orow, ir.Constant(_I64, w * _V)), _VEC)
                    old = builder.load(ptr, align=4, typ=_VEC)
                    acc = builder.select(is_first, zero, old)
                    builder.store(builder.fadd(acc, builder.load(sums[r][w], typ=_VEC)), ptr, align=4)
            return context.get_dummy_value()

        return sig, codegen

    tile.__name__ = tile.__qualname__ = "tile_block_fma" if fused else "tile_block"
    return intrinsic(tile)


tile_block = _tile_block(False)
tile_block_fma = _tile_block(True)

_NB = 64  # derived: columns per work item (a multiple of _C)
_MC = 64  # derived: rows per work item (a multiple of _R)


@njit(cache=True)
def _dot_item(af: np.ndarray, bf: np.ndarray, of: np.ndarray, dims: tuple, item: int, tile: int,
              fused: bool) -> None:
    """One work item: batch bi, column block n0, row chunk mc0 of the padded operands (module docstring),
    K tile by K tile, each tile's sums added to the output by `tile_block` in register blocks (`tile_block_fma`
    when `fused`: the caller has checked `fma_exact`)."""
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
                if fused:
                    tile_block_fma(af, a_base + m0 * k_total, k_total, bf, b_base + c0, npad, k0, kt,
                                   of, o_base + m0 * npad + c0, npad, k0 == 0)
                else:
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
def _dot_exact3_fused(a: np.ndarray, b: np.ndarray, tile: int, fused: bool) -> np.ndarray:
    ap, bp, out, dims = _padded(a, b)
    af, bf, of = ap.reshape(-1), bp.reshape(-1), out.reshape(-1)
    for item in prange(_items(a.shape[0], dims[0], dims[2])):
        _dot_item(af, bf, of, dims, item, tile, fused)
    return _unpadded(out, a.shape[1], b.shape[2])


# The same work items without the parallel backend: entering a parallel region costs tens of microseconds
# even on one thread, more than a small product itself.
@njit(cache=True)
def _dot_exact3_serial_fused(a: np.ndarray, b: np.ndarray, tile: int, fused: bool) -> np.ndarray:
    ap, bp, out, dims = _padded(a, b)
    af, bf, of = ap.reshape(-1), bp.reshape(-1), out.reshape(-1)
    for item in range(_items(a.shape[0], dims[0], dims[2])):
        _dot_item(af, bf, of, dims, item, tile, fused)
    return _unpadded(out, a.shape[1], b.shape[2])


# ---- FMA selection ----
# A bf16 value has at most 8 significant bits, so the product of two is exact in float32 (16 bits) unless it
# overflows or falls below FLT_MIN (2^-126: a subnormal product may lose bits). Where every product is exact,
# fl(s + fl(a*b)) == fl(s + a*b) == fma(a, b, s) bit for bit (zero products too: s + (+-0) == s for s != 0 and
# +0 for s = +0, either way), so `tile_block_fma` gives the unfused kernel's sums. `fma_exact` decides it from
# four numbers per operand pair, gathered while the operands are read anyway: the largest magnitude's bits
# (>= 0x7F800000: an inf or NaN, which take the unfused kernel), the smallest nonzero magnitude's bits less one
# (0xFFFFFFFF when all are zero), and the OR of the low 16 bits (nonzero: not bf16 values, unfused).

_FLT_MAX = 3.4028234663852886e38
_FLT_MIN = 2.0 ** -126


@njit(cache=True)
def _bits_value(bits: np.uint32) -> float:
    """The float64 value of a nonnegative finite binary32 pattern (exact)."""
    e = np.int64(bits >> np.uint32(23))
    mant = np.int64(bits & np.uint32(0x7FFFFF))
    if e == 0:
        return math.ldexp(float(mant), -149)
    return math.ldexp(float(mant | 0x800000), int(e) - 150)


@njit(cache=True)
def fma_exact(a_hi: np.uint32, a_lo: np.uint32, b_hi: np.uint32, b_lo: np.uint32, low: np.uint32) -> bool:
    """Whether every product of an A and a B element is exact in float32 (see above); `*_hi` the largest
    magnitude bits, `*_lo` the smallest nonzero magnitude bits less one (wrapping), `low` the OR of all low
    16 bits. float64 holds the products of the extremes exactly (at most 48 significant bits)."""
    if low != 0 or a_hi >= np.uint32(0x7F800000) or b_hi >= np.uint32(0x7F800000):
        return False
    if a_lo == np.uint32(0xFFFFFFFF) or b_lo == np.uint32(0xFFFFFFFF):  # an all-zero operand: all products 0
        return True
    if _bits_value(a_hi) * _bits_value(b_hi) > _FLT_MAX:
        return False
    return _bits_value(a_lo + np.uint32(1)) * _bits_value(b_lo + np.uint32(1)) >= _FLT_MIN


@njit(cache=True)
def _scan(bits: np.ndarray) -> tuple:
    """(largest magnitude bits, smallest nonzero magnitude bits - 1, OR of the low 16 bits) of a flat uint32
    array (branch-free: the loop vectorizes)."""
    hi = np.uint32(0)
    lo = np.uint32(0xFFFFFFFF)
    low = np.uint32(0)
    for i in range(bits.shape[0]):
        mag = bits[i] & np.uint32(0x7FFFFFFF)
        hi = max(hi, mag)
        lo = min(lo, np.uint32(mag - np.uint32(1)))
        low |= mag
    return hi, lo, low & np.uint32(0xFFFF)


@njit(cache=True)
def _fused_for(a: np.ndarray, b: np.ndarray) -> bool:
    """`fma_exact` of two C-contiguous float32 arrays (a pass over both; `_rounded_scan` does it while rounding)."""
    a_hi, a_lo, a_low = _scan(a.reshape(-1).view(np.uint32))
    b_hi, b_lo, b_low = _scan(b.reshape(-1).view(np.uint32))
    return fma_exact(a_hi, a_lo, b_hi, b_lo, a_low | b_low)


@njit(cache=True)
def _dot_exact3(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    return _dot_exact3_fused(a, b, tile, _fused_for(a, b))


@njit(cache=True)
def _dot_exact3_serial(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    return _dot_exact3_serial_fused(a, b, tile, _fused_for(a, b))


@njit(cache=True)
def _rounded_scan(bits: np.ndarray, dst: np.ndarray) -> tuple:
    """Rounds the flat uint32 patterns `bits` to bf16 values into the flat uint32 `dst` (sim/mxu_round.py's
    branch-free `_round_loop`, equal to `numerics.round_bf16` on every pattern) and returns `_scan`'s largest and
    smallest-nonzero-less-one magnitude bits of the rounded values. Two loops: measured faster than one (LLVM
    does not vectorize the rounding loop with the two reductions in it; the second reads `dst` from cache)."""
    _round_loop(bits, dst)
    hi, lo, _ = _scan(dst)
    return hi, lo


@njit(cache=True)
def _rounded(bits: np.ndarray) -> np.ndarray:
    out = np.empty(bits.shape, np.float32)
    _round_bits_loop(bits.reshape(-1), out.reshape(-1).view(np.uint32))
    return out


@njit(cache=True)
def _rounded_pair(a_bits: np.ndarray, b_bits: np.ndarray) -> tuple:
    """Both operands' bits rounded to bf16 values into fresh float32 arrays, and whether the FMA kernel is exact
    on them (`fma_exact`)."""
    ar = np.empty(a_bits.shape, np.float32)
    br = np.empty(b_bits.shape, np.float32)
    a_hi, a_lo = _rounded_scan(a_bits.reshape(-1), ar.reshape(-1).view(np.uint32))
    b_hi, b_lo = _rounded_scan(b_bits.reshape(-1), br.reshape(-1).view(np.uint32))
    return ar, br, fma_exact(a_hi, a_lo, b_hi, b_lo, np.uint32(0))


# DEFAULT precision in one call: both operands rounded to bf16 exactly as `numerics.round_bf16` does, then the
# serial kernel (two Python-level calls and their checks fewer; small products are most of an eager step).
@njit(cache=True)
def _dot_rounded3_serial(a_bits: np.ndarray, b_bits: np.ndarray, tile: int) -> np.ndarray:
    ar, br, fused = _rounded_pair(a_bits, b_bits)
    return _dot_exact3_serial_fused(ar, br, tile, fused)


# A 2-D (M, K) @ (K, N) DEFAULT-precision product of C-contiguous float32 operands written into the C-contiguous
# (M, N) float32 `out` by the register-blocked kernel (FMA where `fma_exact`): an eager `mm` above
# SMALL_INTO_MAX_MACS, also through the native entry (sim/mxu_native.py). The operands are rounded into fresh
# arrays first (so `out` may share memory with either), padded to whole register blocks only at ragged edges;
# `out` itself takes the sums when no padding is needed (no result array, no copy).
@njit(cache=True)
def _mm_blocked_into(a: np.ndarray, b: np.ndarray, out: np.ndarray, tile: int) -> None:
    m, k = a.shape
    n = b.shape[1]
    ar, br, fused = _rounded_pair(a.view(np.uint32), b.view(np.uint32))
    mp, npad = -(-m // _R) * _R, -(-n // _C) * _C
    if mp != m:
        ap = np.zeros((mp, k), np.float32)
        ap[:m, :] = ar
    else:
        ap = ar
    if npad != n:
        bp = np.zeros((k, npad), np.float32)
        bp[:, :n] = br
    else:
        bp = br
    padded = mp != m or npad != n
    of = np.empty(mp * npad, np.float32) if padded else out.reshape(-1)
    af, bf = ap.reshape(-1), bp.reshape(-1)
    dims = (mp, k, npad)
    for item in range(_items(1, mp, npad)):
        _dot_item(af, bf, of, dims, item, tile, fused)
    if padded:
        out[:, :] = of.reshape(mp, npad)[:m, :n]


# A 2-D (M, K) @ (K, N) DEFAULT-precision product of C-contiguous float32 operands (an eager `mm`) into a fresh
# array: the operands' bits are viewed inside the compiled function, so a call crosses numba's dispatcher once
# with no Python-level reshapes or views (each ~0.2-0.3 us, on a ~5 us 8x8 launch).
@njit(cache=True)
def _mm_rounded_serial(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    out = np.empty((a.shape[0], b.shape[1]), np.float32)
    _mm_blocked_into(a, b, out, tile)
    return out


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
    (M, N) `out` (any strides; it may overlap the operands), under `mm_small_bf16_rounded`'s conditions: the
    loop nest of `_mm_rounded_into` up to SMALL_INTO_MAX_MACS multiply-adds, the register-blocked kernel above
    (`_mm_into`); the caller checks `out`'s shape."""
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    if not b.flags.c_contiguous:
        b = np.ascontiguousarray(b)
    if a.shape[0] * a.shape[1] * b.shape[1] <= SMALL_INTO_MAX_MACS:
        _mm_rounded_into(a, b, out, tile)
    elif out.flags.c_contiguous:
        _mm_blocked_into(a, b, out, tile)
    else:
        np.copyto(out, _mm_rounded_serial(a, b, tile))


@njit(cache=True)
def _mm_into(a: np.ndarray, b: np.ndarray, out: np.ndarray, tile: int) -> None:
    """`mm_small_bf16_rounded_into` on C-contiguous arrays in one compiled call (sim/mxu_native.py's body)."""
    if a.shape[0] * a.shape[1] * b.shape[1] <= SMALL_INTO_MAX_MACS:
        _mm_rounded_into(a, b, out, tile)
    else:
        _mm_blocked_into(a, b, out, tile)


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
