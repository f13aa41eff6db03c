"""The fast mode's bf16 x bf16 -> float32 product: MKL's `cblas_gemm_bf16bf16f32`, from PyTorch's own library.

The MXU multiplies bf16 operands and accumulates in float32 (DotAlgorithm BF16_BF16_F32, mxu.py). The fast mode
used to hand bf16-valued float32 arrays to numpy's float32 BLAS (OpenBLAS sgemm). This CPU has a bf16 dot
instruction (AVX512_BF16 `vdpbf16ps`: two bf16 products added into a float32 lane), and the MKL that PyTorch's
CPU wheel links into `libtorch_cpu.so` exports a GEMM over it that takes bf16 operands and writes float32: the
MXU's own contract, at half the operand bytes. Measured: benchmarks/mxu.py's second table.

`gemm(x, y, out)` takes what the fast mode gave BLAS before: float32 operands that hold bf16 values (the bf16
parts of HIGH/HIGHEST), C-order or transposed C-order, and writes a C-contiguous float32 result; with `rounding`
it rounds float32 operands to bf16 itself, straight into the 16-bit copy MKL reads (one pass, `round_operand`'s
bits). A value with any of its low 16 bits set is refused, never silently rounded a second time. A transposed
operand is passed with BLAS's transpose flag.

What a product's bits depend on: its shapes, and for a gemv shape (M or N = 1) the transpose flags (MKL's gemv
kernels sum in another order for a transposed operand; mxu_layout.same_bits probes each shape before the fast
path keeps a transposed operand's layout, as it did for OpenBLAS). Checked (tests/test_mxu_gemm.py): the same
bits at every memory alignment, per batch item or batched, call after call. MKL runs on one thread here, always:
its gemv kernels split K over threads (a (1, 96) @ (96, 40) product changed bits between one and two threads),
and a product must not change bits with `torch.set_num_threads` (the old path's OpenBLAS could).

The sums are not OpenBLAS's (another order), and unlike the numba exact mode, `vdpbf16ps` flushes float32
subnormal products and partial sums to zero: the TPU's handling of float32 subnormals inside the MXU is
UNCONFIRMED (tpu-facts section 5), so neither choice contradicts a source; mxu.py's docstring states it. Which
library a process uses is decided at its first fast product and then kept (`reset()` aside, for benchmarks):
MKL's GEMM when `libtorch_cpu.so` exports it and a self-check of exactly representable products passes, else
numpy's BLAS as before (`backend()` names it, `REASON` says why).
"""

from __future__ import annotations

import ctypes
import importlib.util
import math
import os
import threading
from typing import Any

import numpy as np
from numba import njit, uint16, uint32

from .mxu_layout import transposed
from .mxu_round import memo_round16, round_loop16

__all__ = ["ENABLED", "available", "backend", "gemm", "reset", "takes"]

ENABLED = True  # False before the first fast product: numpy's BLAS for this process (benchmarks and tests)
REASON = ""  # why MKL's GEMM is not in use, once decided
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS_LAYOUT / CBLAS_TRANSPOSE
_lib: Any = None
_decided = False


@njit(cache=True, nogil=True)
def _high_halves(src: np.ndarray, dst: np.ndarray) -> int:  # pragma: no cover - compiled
    """dst[i] = the 16 high bits of src[i]; returns the OR of every low half (0 when every value is bf16)."""
    low = uint32(0)
    for i in range(src.shape[0]):
        u = src[i]
        low |= u & uint32(0xFFFF)
        dst[i] = uint16(u >> uint32(16))
    return low


def _torch_library() -> str | None:
    """The path of PyTorch's `libtorch_cpu.so` (found without importing torch), or None."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "lib", "libtorch_cpu.so")
    return path if os.path.exists(path) else None


def _load() -> Any:
    """MKL's GEMM with its argument types, or None with REASON set."""
    global REASON
    path = _torch_library()
    if path is None:
        REASON = "PyTorch's libtorch_cpu.so was not found"
        return None
    try:
        lib = ctypes.CDLL(path)
        fn = lib.cblas_gemm_bf16bf16f32
        threads = lib.MKL_Set_Num_Threads_Local
    except (OSError, AttributeError) as e:
        REASON = f"libtorch_cpu.so has no MKL bf16 GEMM ({e})"
        return None
    c_int, ptr = ctypes.c_int, ctypes.c_void_p
    fn.restype = None
    fn.argtypes = [c_int, c_int, c_int, c_int, c_int, c_int, ctypes.c_float, ptr, c_int, ptr, c_int,
                   ctypes.c_float, ptr, c_int]
    threads.restype = c_int
    threads.argtypes = [c_int]
    return lib


def _self_check() -> str:
    """'' when MKL's GEMM computes products whose every partial sum is exact (small integers, an inf * 0, a -0.0
    operand) to their exact values; else what differed."""
    a = np.array([[1, 2, 3, -4, 5], [0, -0.0, 7, 8, -9], [np.inf, 1, 0, 2, 1]], np.float32)
    b = np.array([[1, 0, -1, 2], [3, 1, 0, 0], [0, 2, 1, -1], [1, 0, 1, 1], [2, 2, 2, -2]], np.float32)
    with np.errstate(invalid="ignore"):
        want = a.astype(np.float64) @ b.astype(np.float64)
    got = np.full((3, 4), np.nan, np.float32)  # beta = 0 must not read C
    _call(a, b, got)
    if not np.array_equal(got, want.astype(np.float32), equal_nan=True):
        return f"self-check product differs: {got.tolist()} != {want.tolist()}"
    return ""


def available() -> bool:
    """Whether this process's fast products go through MKL's GEMM (decided on the first call, then fixed)."""
    global _lib, _decided, REASON
    if not _decided:
        _decided = True
        if not ENABLED:
            REASON = "disabled (mxu_gemm.ENABLED = False)"
        else:
            _lib = _load()
            if _lib is not None:
                problem = _self_check()
                if problem:
                    REASON, _lib = problem, None
    return _lib is not None


def takes(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether `gemm` computes x @ y in this process: float32 operands of rank >= 2 with equal batch dims, and
    MKL's GEMM in use."""
    return x.dtype == np.float32 and y.dtype == np.float32 and min(x.ndim, y.ndim) >= 2 \
        and x.shape[:-2] == y.shape[:-2] and available()


def reset() -> None:
    """Forget this process's decision: the next fast product decides again from `ENABLED`. For benchmarks that
    time both libraries in one process (a product's bits change across a reset)."""
    global _lib, _decided, REASON
    _lib, _decided, REASON = None, False, ""


def backend() -> str:
    """'mkl-bf16' or 'numpy-blas': the library this process's fast products use."""
    return "mkl-bf16" if available() else "numpy-blas"


_scratch_bufs = threading.local()  # .bufs: {slot: 1-D uint16 array}, per thread, like mxu_round's scratch
_SCRATCH_MAX_ELEMENTS = 1 << 24


def _aligned(n: int) -> np.ndarray:
    """A new 1-D uint16 array of n elements starting on a 64-byte boundary."""
    raw = np.empty(n + 32, np.uint16)
    skip = (-raw.ctypes.data % 64) // 2
    return raw[skip:skip + n]


def _scratch(slot: str, n: int) -> np.ndarray:
    """An uninitialized 1-D uint16 array of n elements over this thread's scratch for `slot` (a new array past
    `_SCRATCH_MAX_ELEMENTS`), starting on a 64-byte boundary like every operand MKL reads here: valid until this
    thread's next product."""
    if n > _SCRATCH_MAX_ELEMENTS:
        return _aligned(n)
    bufs = getattr(_scratch_bufs, "bufs", None)
    if bufs is None:
        bufs = _scratch_bufs.bufs = {}
    buf = bufs.get(slot)
    if buf is None or buf.size < n:
        buf = bufs[slot] = _aligned(n)
    return buf[:n]


def _layout(x: np.ndarray, keep_transposed: bool) -> tuple[np.ndarray, bool]:
    """(C-contiguous memory of x, transposed): x's transpose when x is a transposed C-order array and the caller
    keeps that layout, else x in C order."""
    if keep_transposed and transposed(x):
        return x.swapaxes(-1, -2), True
    return np.ascontiguousarray(x), False


def _narrow(x: np.ndarray, slot: str) -> tuple[np.ndarray, bool]:
    """(bf16 bits of x as a C-contiguous uint16 array, transposed) for x holding bf16 values (a transposed C-order
    x keeps its layout, BLAS's flag reads it, as np.matmul passed it to OpenBLAS); raises on a value that is not
    bf16 (never rounds a second time)."""
    src, transposed = _layout(x, True)
    dst = _scratch(slot, src.size)
    if _high_halves(src.reshape(-1).view(np.uint32), dst):
        raise ValueError("MXU fast product: an operand holds float32 values that are not bf16 values "
                         "(mxu_gemm.gemm takes operands already rounded to bf16)")
    return dst.reshape(src.shape), transposed


def _round(x: np.ndarray, slot: str, keep_transposed: bool) -> tuple[np.ndarray, bool]:
    """(bf16 bits of x rounded (`round_operand`'s values), C-contiguous uint16, transposed) in one pass, or the
    active rounding memo's copy (mxu_round.RoundMemo, kept as bf16 bits) where it serves x."""
    served = memo_round16(x, slot, keep_transposed)
    if served is not None:
        return _layout(served, keep_transposed)
    src, transposed = _layout(x, keep_transposed)
    dst = _scratch(slot, src.size)
    round_loop16(src.reshape(-1).view(np.uint32), dst)
    return dst.reshape(src.shape), transposed


def _call(x: np.ndarray, y: np.ndarray, out: np.ndarray, rounding: tuple[bool, bool] | None = None) -> None:
    """out[...] = x @ y for float32 x (..., M, K), y (..., K, N) holding bf16 values (`rounding` None) or rounded
    here (`rounding`: whether each keeps a transposed layout), C-contiguous float32 out."""
    m, k = x.shape[-2:]
    n = y.shape[-1]
    if m == 0 or n == 0:
        return
    if k == 0:
        out.fill(0.0)
        return
    if rounding is None:
        (a, ta), (b, tb) = _narrow(x, "lhs"), _narrow(y, "rhs")
    else:
        (a, ta), (b, tb) = _round(x, "lhs", rounding[0]), _round(y, "rhs", rounding[1])
    batch = math.prod(x.shape[:-2])
    a3, b3, c3 = a.reshape(batch, *a.shape[-2:]), b.reshape(batch, *b.shape[-2:]), out.reshape(batch, m, n)
    fn = _lib.cblas_gemm_bf16bf16f32
    flag_a, lda = (_TRANS, m) if ta else (_NO_TRANS, k)
    flag_b, ldb = (_TRANS, k) if tb else (_NO_TRANS, n)
    previous = _lib.MKL_Set_Num_Threads_Local(1)
    try:
        for i in range(batch):
            fn(_ROW_MAJOR, flag_a, flag_b, m, n, k, 1.0, a3[i].ctypes.data, lda, b3[i].ctypes.data, ldb, 0.0,
               c3[i].ctypes.data, n)
    finally:
        _lib.MKL_Set_Num_Threads_Local(previous)


def gemm(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None,
         rounding: tuple[bool, bool] | None = None) -> np.ndarray:
    """x @ y through MKL's bf16 GEMM (module docstring) for float32 operands with equal batch dims, holding bf16
    values (`rounding` None) or rounded to bf16 here as `round_operand` rounds them (`rounding`: per operand,
    whether a transposed C-order one keeps its layout, mxu_layout.same_bits), into `out` (float32, the result's
    shape) when given. One MKL thread (module docstring)."""
    if not available():
        raise RuntimeError(f"the MXU's MKL bf16 GEMM is not in use in this process: {REASON}")
    shape = (*x.shape[:-1], y.shape[-1])
    direct = out is not None and out.dtype == np.float32 and out.shape == shape and out.flags.c_contiguous
    res = out if direct else np.empty(shape, np.float32)
    _call(x, y, res, rounding)
    if out is not None and not direct:
        np.copyto(out, res)
        return out
    return res
