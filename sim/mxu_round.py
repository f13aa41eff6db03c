"""MXU operand rounding to bf16 values as a branch-free loop that the compiler vectorizes.

A DEFAULT-precision dot in the fast (BLAS) mode rounds both operands to bf16 values before the product
(`numerics.round_bf16`: RNE on the 16 dropped bits, NaN to the canonical quiet NaN with its sign, inf kept, a
bf16-subnormal result flushed to a signed zero). `numerics._rne_bits` decides NaN, inf and subnormal with early
returns, which keeps LLVM from vectorizing the loop: measured 21-48 us per 65,536 elements against 5 us for a
copy. `_round_loop` computes the same bits with masks instead of branches (every operation on uint32, so the
loop vectorizes): ~8 us. The result is the same array, bit for bit (tests/test_mxu_round.py compares every
special pattern and millions of random ones with `round_bf16`).

    mag = u & 0x7FFFFFFF
    r   = (mag + 0x7FFF + ((mag >> 16) & 1)) & 0xFFFF0000        RNE (a carry into the exponent gives inf)
    r   = 0 where r < 0x00800000                                  bf16 subnormal -> zero (the sign is kept below)
    r   = 0x7FC00000 where mag > 0x7F800000                       NaN -> canonical quiet NaN
    out = (u & 0x80000000) | r

inf needs no case: 0x7F800000 + 0x7FFF rounds back down to 0x7F800000.
"""

from __future__ import annotations

import math
import threading

import numpy as np
from numba import njit, uint16, uint32

from .numerics import round_bf16

__all__ = ["LAST", "STORE", "USE", "RoundMemo", "memo_round16", "round_loop16", "round_operand"]


@njit(cache=True, nogil=True)
def _rounded(u: uint32) -> uint32:  # pragma: no cover - compiled (inlined into the loops below)
    mag = u & uint32(0x7FFFFFFF)
    r = uint32(uint32(mag + uint32(0x7FFF)) + uint32(uint32(mag >> uint32(16)) & uint32(1))) & uint32(0xFFFF0000)
    # all ones unless r < 0x00800000 (r - 0x00800000 wraps, setting the top bit, only then)
    keep = uint32(uint32(uint32(r - uint32(0x00800000)) >> uint32(31)) - uint32(1))
    # all ones when mag > 0x7F800000 (a NaN: 0x7F800000 - mag wraps only then)
    nan = uint32(uint32(0) - uint32(uint32(uint32(0x7F800000) - mag) >> uint32(31)))
    return (u & uint32(0x80000000)) | (r & keep & ~nan) | (uint32(0x7FC00000) & nan)


@njit(cache=True, nogil=True)
def _round_loop(src: np.ndarray, dst: np.ndarray) -> None:  # pragma: no cover - compiled
    for i in range(src.shape[0]):
        dst[i] = _rounded(src[i])


@njit(cache=True, nogil=True)
def round_loop16(src: np.ndarray, dst: np.ndarray) -> None:  # pragma: no cover - compiled
    """dst[i] = the bf16 bits (uint16) of src[i] rounded: the high half of `_round_loop`'s result."""
    for i in range(src.shape[0]):
        dst[i] = uint16(_rounded(src[i]) >> uint32(16))


def round_bits(src: np.ndarray, dst: np.ndarray) -> None:
    """Rounds the binary32 patterns of the 1-D contiguous uint32 array `src` into `dst` (may be `src`)."""
    _round_loop(src, dst)


_BLOCK = 32  # columns per block of `_gather`'s copy
_MIN_PITCH = 1024  # bytes: a transposed operand's column stride from which `_gather` copies in blocks
_MIN_COLUMNS = 128  # columns of a transposed operand from which `_gather` copies in blocks at any pitch


def _gather(x: np.ndarray, dst: np.ndarray | None = None) -> np.ndarray:
    """`np.ascontiguousarray(x)` (the same values, C order), into `dst` (C-contiguous, x's shape) when given.
    A transposed operand (unit stride down its rows) of >= `_MIN_COLUMNS` columns, or whose columns lie >=
    `_MIN_PITCH` bytes apart, is copied in blocks of `_BLOCK` columns: numpy's copy walks each destination row
    across all columns, one cache line per column, so a row of C columns touches C lines (which alias in L1 at a
    1-4 KiB pitch, and outgrow L1 past a few hundred columns at any pitch) and the next 15 rows, which share
    those lines, read them again from L2; a block re-reads only 32 lines per row. Session 24 blocked by pitch
    alone (16 columns); session perf25 measured the transposed operands of the compiled GPT-2 / Llama training
    steps one by one (hidden 128 and 256, median of 11, one process at load ~7): (128, 512) at a 512-byte pitch
    69 -> 27 us, (128, 1000) 133 -> 53, (8, 64, 256) 99 -> 47, (256, 1024) at 1 KiB 204 -> 152; shapes of < 128
    columns (the attention's (8, 32, 64)) lose to the per-block calls, and 64-column blocks lose at a 4 KiB
    pitch (aliasing again)."""
    if (
        x.ndim < 2
        or x.strides[-2] != x.itemsize
        or x.flags.c_contiguous
        or (x.shape[-1] < _MIN_COLUMNS and x.strides[-1] < _MIN_PITCH)
    ):
        if dst is None:
            return np.ascontiguousarray(x)
        np.copyto(dst, x)
        return dst
    if dst is None:
        dst = np.empty(x.shape, x.dtype)
    for j in range(0, x.shape[-1], _BLOCK):
        dst[..., j:j + _BLOCK] = x[..., j:j + _BLOCK]
    return dst


_SCRATCH_MAX_BYTES = 1 << 25  # operands up to 32 MiB round into a thread's reused scratch (`round_operand(slot=)`)
_scratch = threading.local()  # .bufs: {slot: 1-D float32 array}, per thread (the autograd device thread has its own)


def _scratch_array(slot: str, shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialized float32 array of `shape` over this thread's scratch for `slot` (grown to the largest size
    asked so far), or a new array when it would exceed `_SCRATCH_MAX_BYTES`."""
    n = math.prod(shape)
    if n * 4 > _SCRATCH_MAX_BYTES:
        return np.empty(shape, np.float32)
    bufs = getattr(_scratch, "bufs", None)
    if bufs is None:
        bufs = _scratch.bufs = {}
    buf = bufs.get(slot)
    if buf is None or buf.size < n:
        buf = bufs[slot] = np.empty(n, np.float32)
    return buf[:n].reshape(shape)


def round_operand(x: np.ndarray, slot: str | None = None, keep_transposed: bool = False) -> np.ndarray:
    """`round_bf16(x)`: a C-contiguous float32 array holding `x`'s values rounded to bf16, for an MXU operand
    (float32 operands through the vectorized loop, others through `round_bf16`).

    With `slot=None` the array is new. With a slot name (the MXU's "lhs"/"rhs") a float32 operand rounds into
    this thread's scratch for that slot (and a transposed one gathers into the "gather" slot's), valid until
    the next call for the same slot on this thread: for an operand that only the product reads. The reason is
    the kernel, not the copy: glibc serves an allocation above its mmap threshold with fresh pages, and a
    compiled training step at hidden 256 x 2 x 256 tokens (GPT-2) took ~16,500 minor page faults per step,
    half of them on rounded operands (~27 ms of system time in a ~145 ms step).

    With `keep_transposed` a float32 operand that is a transposed C-order array (mxu_layout.transposed) rounds
    in its own memory order, one contiguous pass, and comes back transposed the same way (no C-order gather):
    for a product whose BLAS bits were found layout-independent (mxu_layout.same_bits)."""
    if x.dtype != np.float32:
        return round_bf16(x)
    if slot is not None and getattr(_request, "current", None) is not None:
        shared = _memo_round(x, slot, keep_transposed)
        if shared is not None:
            return shared
    if keep_transposed:
        src = x.swapaxes(-1, -2)  # C-contiguous (the caller checked `transposed(x)`)
        out = np.empty(src.shape, np.float32) if slot is None else _scratch_array(slot, src.shape)
        _round_loop(src.reshape(-1).view(np.uint32), out.reshape(-1).view(np.uint32))
        return out.swapaxes(-1, -2)
    if slot is None:
        src = _gather(x)
        out = np.empty(src.shape, np.float32)
    else:
        src = x if x.flags.c_contiguous else _gather(x, _scratch_array("gather", x.shape))
        out = _scratch_array(slot, x.shape)
    _round_loop(src.reshape(-1).view(np.uint32), out.reshape(-1).view(np.uint32))
    return out


# One program run's shared rounded operands (`RoundMemo`): a plan whose value is read by several DEFAULT dots
# rounds it once. `_request.current` is (memo, roles) while such a dot runs on this thread (`RoundMemo.call`).
_request = threading.local()

STORE, USE, LAST = "store", "use", "last"  # a dot's role for an operand slot (see `RoundMemo.call`)


class RoundMemo:
    """The bf16-rounded forms of the operands that several dots of one program run read (the same value slot).

    The plan gives each such dot, for each shared operand, a role under a key (the value's slot, through views):
    the first reader in the plan's order STOREs (it first drops whatever this thread's memo held for the key,
    then keeps the memory owner of its operand and a rounded copy of the C-order memory the operand views:
    `_memo_round`), a later reader USEs it, the last one also drops it (LAST). A reader is served from the copy
    only if its operand has the same memory owner (`ndarray.base`, or the array itself) and is C-order or
    transposed C-order memory from the same start address within the copied block; otherwise it rounds as
    usual (fail closed). A plan runs its steps in order, every one, so a USE follows its run's STORE; a value is
    not written while the run still reads it (the plan's value semantics), and the memo keeps the owner alive,
    so its memory is not reused; entries are per thread (a plan may run on two threads). A served operand has
    `round_operand`'s values and layout, so the product has the same bits."""

    __slots__ = ("_local",)

    def __init__(self) -> None:
        self._local = threading.local()

    def _entries(self) -> dict:
        entries = getattr(self._local, "entries", None)
        if entries is None:
            entries = self._local.entries = {}
        return entries

    def call(self, fn: object, roles: tuple, args: tuple, kwargs: dict) -> np.ndarray:
        """`fn(*args, **kwargs)` (a dot kernel) with `roles`: per operand side (lhs, rhs), None or (slot key,
        role); the side's `round_operand(x, "lhs"/"rhs")` call then goes through this memo."""
        entries = self._entries()
        for role in roles:
            if role is not None and role[1] == STORE:
                entries.pop(role[0], None)
        previous = getattr(_request, "current", None)
        _request.current = (self, entries, roles, args)
        try:
            return fn(*args, **kwargs)  # type: ignore[operator]
        finally:
            _request.current = previous
            for role in roles:
                if role is not None and role[1] == LAST:
                    entries.pop(role[0], None)

    def kept(self) -> int:
        """How many rounded operands this thread's memo holds now (tests: none once a run is over)."""
        return len(self._entries())


def _c_order(x: np.ndarray) -> tuple[np.ndarray, bool] | None:
    """(c, swapped): `x` itself when C-contiguous (swapped False), else its last two axes swapped when that is
    C-contiguous (a transposed C-order array, swapped True); None for any other layout."""
    if x.flags.c_contiguous:
        return x, False
    if x.ndim >= 2:
        t = x.swapaxes(-1, -2)
        if t.flags.c_contiguous:
            return t, True
    return None


def _serve(entry: tuple, x: np.ndarray, slot: str, keep_transposed: bool) -> np.ndarray | None:
    """`round_operand(x, slot, keep_transposed)` (its values and layout) from the entry's rounded copy of a
    block of memory, when `x` is C-order or transposed C-order memory starting where the block starts and
    within it; else None."""
    _, start, nbytes, mirror = entry
    order = _c_order(x)
    if order is None or x.__array_interface__["data"][0] != start or x.nbytes > nbytes:
        return None
    c, swapped = order
    rounded = mirror[: c.size].reshape(c.shape)  # the block's first c.size elements are c's, rounded
    if not swapped:
        return rounded
    if keep_transposed:
        return rounded.swapaxes(-1, -2)
    dst = _scratch_array(slot, x.shape) if mirror.dtype == np.float32 else None
    return _gather(rounded.swapaxes(-1, -2), dst)


def memo_round16(x: np.ndarray, slot: str, keep_transposed: bool) -> np.ndarray | None:
    """`_memo_round` for a product that reads bf16 bits (sim/mxu_gemm.py): x's rounded bf16 bits as uint16, in
    the layout `round_operand(x, slot, keep_transposed)` returns; None where the active memo does not serve x."""
    if getattr(_request, "current", None) is None:
        return None
    return _memo_round(x, slot, keep_transposed, np.uint16)


def _memo_round(x: np.ndarray, slot: str, keep_transposed: bool, kind: type = np.float32) -> np.ndarray | None:
    """The rounded `x` through the active memo request, or None when this call is not one it serves.

    An entry is (memory owner, start address, bytes, rounded copy): the reader that STOREs rounds the C-order
    memory its operand views (its operand, or its transpose) in one contiguous pass, and every reader, that one
    included, takes its operand's view of that copy, gathered into C order where `round_operand` would gather
    (rounding commutes with the copy: the same values either way, in the layout `round_operand` returns). `kind`:
    float32 (bf16 values) or uint16 (their bf16 bits); an entry of the other kind serves nothing."""
    _, entries, roles, args = _request.current
    side = 0 if slot == "lhs" else 1 if slot == "rhs" else -1
    if side < 0 or side >= len(roles) or roles[side] is None or x.dtype != np.float32:
        return None
    key, role = roles[side]
    owner = getattr(args[side], "base", None)
    source = args[side] if owner is None else owner
    if role == STORE:
        order = _c_order(x)
        if order is None:
            return None
        c = order[0]
        mirror = np.empty(c.size, kind)
        if kind is np.float32:
            _round_loop(c.reshape(-1).view(np.uint32), mirror.view(np.uint32))
        else:
            round_loop16(c.reshape(-1).view(np.uint32), mirror)
        entries[key] = (source, c.__array_interface__["data"][0], c.nbytes, mirror)
    entry = entries.get(key)
    if entry is None or entry[0] is not source or entry[3].dtype != kind:
        return None
    return _serve(entry, x, slot, keep_transposed)
