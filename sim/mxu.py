"""MXU numerics: owns `matmul` (and re-exports `conv`), precision passes, and the exact/fast mode switch.

Precision (tpu-facts section 5, [XLA-rw] DotAlgorithmRewriter, [JAX-lax]) for float32 operands:
* "DEFAULT" (ALG_DOT_BF16_BF16_F32): one pass, dot(bf16(a), bf16(b)).
* "HIGH" (_X3): a = hi + lo (`split_bf16x3`); low = dot(lo_a, hi_b) + dot(hi_a, lo_b); NaN guard;
  result = low + dot(hi_a, hi_b). 3 passes.
* "HIGHEST" (_X6): a = hi + mid + lo (`split_bf16x6`); r = dot(mid, mid) + dot(hi, lo); r += dot(lo, hi);
  r += dot(hi, mid); r += dot(mid, hi); NaN guard; result = r + dot(hi, hi). 6 passes.
* NaN guard (ReplaceNaNWithZeros): keep the small-term sum where inf >= |s|, else 0 (inf * 0 from a zero
  low part must not poison an infinite hi * hi term).
Each dot is a full K reduction with float32 accumulation; the "+" combining dots are elementwise float32.
bfloat16 operands always take one pass (their values are used as they are; bf16 subnormal inputs are
flushed like every bf16 value on the TPU). A float32 x bfloat16 pair is treated as float32 x float32.
int8/uint8 x int8/uint8 -> int32 exactly (precision ignored; wraps like int32 on overflow).

Modes (how each dot sums):
* "exact": the systolic order of `torchtpu.sim.mxu_kernel` (sequential float32 sums within K tiles of `array`
  rows, tiles accumulated in order), in numba.
* "fast": a BLAS bf16 x bf16 -> float32 GEMM (MKL's, from PyTorch's library: `mxu_gemm`; numpy's float32
  BLAS where that is missing) on the same bf16 operands. The summation order differs from exact's, and MKL's
  bf16 kernel flushes float32 subnormal products and partial sums to zero (mxu_gemm.py's docstring).
* "auto" (default): exact when batch*M*N*K <= AUTO_EXACT_MAX_MACS, else fast.
Set with `set_mode()`, or by the mode source the driver layer installs (`set_mode_source`: the sim driver routes
TORCHTPU_MXU_MODE=auto|exact|fast through its config module); an explicit `mode=` argument wins. This package
reads no environment variable itself.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from . import mxu_gemm
from .mxu_kernel import dot_exact, dot_exact_bf16_rounded
from .mxu_layout import same_bits, transposed
from .mxu_round import round_operand
from .numerics import BF16, split_bf16x3, split_bf16x6, to_bf16

__all__ = [
    "AUTO_EXACT_MAX_MACS",
    "MODES",
    "PRECISIONS",
    "PASSES",
    "conv",
    "convert_out",
    "fast_default",
    "get_mode",
    "matmul",
    "resolve_mode",
    "set_mode",
]

MODES = ("auto", "exact", "fast")
PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")
PASSES = {"DEFAULT": 1, "HIGH": 3, "HIGHEST": 6}  # bf16 MXU passes per precision [JAX-lax], [XLA-proto]
AUTO_EXACT_MAX_MACS = 2**18  # assumption: above 64^3 MACs "auto" prefers BLAS speed over the exact order
DEFAULT_ARRAY = 128  # MXU width on v4/v5e/v5p [SB-tpus]; 256 on v6e/v7x (ChipSpec.mxu_array)
_mode: str | None = None
_source: Callable[[], str] | None = None  # the process default when set_mode is not in force (None: "auto")


def _check_mode(mode: str, where: str) -> str:
    m = str(mode).strip().lower()
    if m not in MODES:
        raise ValueError(f"invalid MXU mode {mode!r} ({where}); valid modes: {', '.join(MODES)}")
    return m


def set_mode(mode: str | None) -> None:
    """Set the process-wide MXU mode ('auto', 'exact', 'fast'); None goes back to env/default."""
    global _mode
    _mode = None if mode is None else _check_mode(mode, "set_mode")


def set_mode_source(source: Callable[[], str] | None) -> None:
    """Installs the callable giving the process default mode (read per call: the sim driver passes its config's
    reader of TORCHTPU_MXU_MODE, which validates and parses each raw value once); None: 'auto'."""
    global _source
    _source = source


def get_mode() -> str:
    """The current process-wide mode: set_mode() value, else the installed source's, else 'auto'."""
    if _mode is not None:
        return _mode
    if _source is None:
        return "auto"
    return _source()  # the source checks its values (config.py parses each raw value once)


def resolve_mode(mode: str | None, macs: int) -> str:
    """'exact' or 'fast' for a call with `macs` multiply-adds (per pass) under `mode` (None = get_mode())."""
    m = get_mode() if mode is None else _check_mode(mode, "mode argument")
    if m == "auto":
        return "exact" if macs <= AUTO_EXACT_MAX_MACS else "fast"
    return m


_blas: Any = None  # threadpoolctl's controller of numpy's BLAS libraries, made on the first fast matmul
_blas_threads: int | None = None  # the thread count last given to them


def blas_matmul(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The fast mode's product. Float32 operands (bf16 values) with equal batch dims go through MKL's bf16 GEMM
    (mxu_gemm.py: one thread, bits decided by the shapes) where this process has it. Others, and every product in
    a process without it, through `np.matmul` with numpy's BLAS on as many threads as PyTorch's intra-op pool
    (`torch.get_num_threads()`, when torch is loaded), so that the simulator uses this CPU as the user told
    PyTorch to. A BLAS thread beyond that count also waits in a sleep loop whenever another process holds a core:
    measured on the shared 2-core machine, a (1600, 320) @ (320, 1) product took 8 ms on two BLAS threads and
    32 us on one. With `out` (the result's shape, float32, C-contiguous) either writes there: the same bits, no
    new array (tests/test_sim_direct_dots.py)."""
    global _blas, _blas_threads
    if mxu_gemm.takes(x, y):
        return mxu_gemm.gemm(x, y, out)
    threads = _torch_threads()
    if threads is not None and threads != _blas_threads:
        if _blas is None:
            from threadpoolctl import ThreadpoolController

            _blas = ThreadpoolController().select(user_api="blas")
        _blas.limit(limits=threads)  # kept, not restored: it follows torch's setting
        _blas_threads = threads
    return np.matmul(x, y, out=out)


def _torch_threads() -> int | None:
    """PyTorch's intra-op thread count when torch is loaded (what `blas_matmul` gives BLAS), else None."""
    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None and hasattr(torch, "get_num_threads") else None


def _check_shapes(a: np.ndarray, b: np.ndarray) -> None:
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"matmul needs operands of rank >= 2, got {a.shape} and {b.shape}")
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"matmul batch dims differ: {a.shape[:-2]} vs {b.shape[:-2]} (caller broadcasts)")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul contracting dims differ: {a.shape} @ {b.shape}")


def _guard(s: np.ndarray) -> np.ndarray:
    """XLA ReplaceNaNWithZeros: keep s where inf >= |s| (NaN fails the compare), else +0."""
    return np.where(np.float32(np.inf) >= np.abs(s), s, np.float32(0.0)).astype(np.float32)


def _passes(
    a: np.ndarray, b: np.ndarray, precision: str, dot: Callable[..., np.ndarray], out: np.ndarray | None = None
) -> np.ndarray:
    """Combine bf16 passes exactly as XLA's rewriter does; `dot` runs one bf16 x bf16 -> f32 dot. `out`: where the
    one DEFAULT pass writes (`dot`'s `out=`: blas_matmul), None for a new array."""
    with np.errstate(invalid="ignore", over="ignore"):
        if precision == "DEFAULT":
            return _default(a, b, dot, out)
        if precision == "HIGH":
            ah, al = split_bf16x3(a)
            bh, bl = split_bf16x3(b)
            low = dot(al, bh) + dot(ah, bl)
            return _guard(low) + dot(ah, bh)
        ah, am, al = split_bf16x6(a)
        bh, bm, bl = split_bf16x6(b)
        r = dot(am, bm) + dot(ah, bl)
        r = r + dot(al, bh)
        r = r + dot(ah, bm)
        r = r + dot(am, bh)
        return _guard(r) + dot(ah, bh)


def _default(a: np.ndarray, b: np.ndarray, dot: Callable[..., np.ndarray], out: np.ndarray | None) -> np.ndarray:
    """The one DEFAULT pass: `dot` of the operands rounded to bf16 values (round_bf16's bits, vectorized, into this
    thread's scratch: only the product reads them, mxu_round.py); transposed operands stay transposed where BLAS
    sums them with the C-order bits (mxu_layout.py). The caller holds the errstate."""
    kw = {} if out is None else {"out": out}
    ta, tb = transposed(a), transposed(b)
    keep = (ta or tb) and dot is blas_matmul and same_bits(a.shape, b.shape, ta, tb, _torch_threads(), dot)
    if dot is blas_matmul and mxu_gemm.takes(a, b):
        return mxu_gemm.gemm(a, b, out, rounding=(ta and keep, tb and keep))
    if keep:
        return dot(round_operand(a, "lhs", ta), round_operand(b, "rhs", tb), **kw)
    return dot(round_operand(a, "lhs"), round_operand(b, "rhs"), **kw)


def fast_default(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """`matmul(a, b, precision="DEFAULT", mode="fast", out=out)` for float32 arrays a (batch, M, K) and b (batch,
    K, N), `out` None or a C-contiguous float32 (batch, M, N) array, without `matmul`'s argument checks and
    dispatch: for a caller that fixed the shapes, dtypes, precision and mode beforehand (drivers/sim/fast.py's
    dot kernels, once per plan step). The same calls in the same order, so the same bits
    (tests/test_mxu_fast_default.py)."""
    if a.dtype != np.float32 or b.dtype != np.float32:
        raise TypeError(f"fast_default takes float32 operands, got {a.dtype} and {b.dtype} (matmul takes others)")
    with np.errstate(invalid="ignore", over="ignore"):
        return _default(a, b, blas_matmul, out)


def convert_out(res: np.ndarray, out_dtype: Any) -> np.ndarray:
    """Cast an MXU result to out_dtype (None keeps it; bfloat16 uses TPU rounding)."""
    if out_dtype is None:
        return res
    dt = np.dtype(out_dtype)
    if dt == res.dtype:
        return res
    if dt == BF16:
        return to_bf16(res)
    return res.astype(dt)


def matmul(
    a: np.ndarray,
    b: np.ndarray,
    *,
    precision: str = "DEFAULT",
    out_dtype: Any = None,
    mode: str | None = None,
    array: int = DEFAULT_ARRAY,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """MXU matmul of a (..., M, K) and b (..., K, N) with identical batch dims (see module docstring).

    Returns float32 (int32 for integer operands) converted to `out_dtype` (None keeps it; bfloat16 output is
    rounded with `round_bf16` semantics). `array` is the K tile of the exact order (128, 256 on v6e/v7x).
    `out` (the result's shape and dtype): the result is written there and `out` returned, the same bits; a fast
    DEFAULT float32 product writes it from BLAS itself (no result array, no copy), any other is copied in.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    _check_shapes(a, b)
    prec = str(precision).upper()
    if prec not in PASSES:
        raise ValueError(f"invalid precision {precision!r}; valid: {', '.join(PRECISIONS)}")
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        if a.dtype.itemsize > 1 or b.dtype.itemsize > 1:
            raise TypeError(f"integer matmul supports int8/uint8 operands, got {a.dtype} and {b.dtype}")
        # exact: products <= 2^16 and sums far below 2^53 in float64, so order does not matter
        res = blas_matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64).astype(np.int32)
        return _copied(convert_out(res, out_dtype), out)
    both_bf16 = a.dtype == BF16 and b.dtype == BF16
    a = a.astype(np.float32) if a.dtype != np.float32 else a
    b = b.astype(np.float32) if b.dtype != np.float32 else b
    if both_bf16:
        prec = "DEFAULT"  # bf16 inputs: always one pass
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch = math.prod(a.shape[:-2])
    how = resolve_mode(mode, batch * m * n * k)
    if how == "exact" and prec == "DEFAULT":
        return _copied(convert_out(dot_exact_bf16_rounded(a, b, array), out_dtype), out)
    if how == "exact":
        def dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            return dot_exact(x, y, array)
    else:
        dot = blas_matmul
    if out is not None and dot is blas_matmul and prec == "DEFAULT" and out.dtype == np.float32 \
            and (out_dtype is None or np.dtype(out_dtype) == np.float32) and out.flags.c_contiguous:
        _passes(a, b, prec, dot, out)
        return out
    return _copied(convert_out(_passes(a, b, prec, dot), out_dtype), out)


def _copied(res: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """`res`, or `out` with `res` copied in (`matmul`'s result when BLAS did not write `out` itself)."""
    if out is None:
        return res
    np.copyto(out, res)
    return out


def conv(*args: Any, **kwargs: Any) -> np.ndarray:
    """N-d convolution through the MXU matmul (lhs (N, C, *spatial), rhs (O, C/groups, *kernel));
    see `torchtpu.sim.conv.conv` for the arguments."""
    from .conv import conv as _conv

    return _conv(*args, **kwargs)
