"""C-order copies of MXU operands whose layout makes numpy's copy slow (a transpose with a power-of-two row pitch).

A DEFAULT-precision dot in the fast (BLAS) mode gathers each operand into C order before rounding it
(mxu_round.py), so that BLAS always sums in the same order whatever the operand's layout (eager and compiled
stay bit-identical). The backward of a linear layer reads transposed operands: a (512, 128) view of a
(128, 512) array has a 2 KiB stride between the elements numpy's copy reads one after another, and at such
power-of-two pitches every read maps to the same few cache sets (4 KiB aliasing): numpy's element-order copy
took 152 us for it against 41 us for the same array untransposed, and 800 us for a (1024, 256) transpose with
a 4 KiB pitch. PyTorch's copy kernel walks a transposed source in blocks: 42 us and 154 us there. A copy is
exact, so the gathered values, and everything computed from them, are the same bits either way.

`c_order(x)` takes PyTorch's copy only where measured faster: float32 operands of at least `MIN_ELEMENTS`
elements whose last axis is not contiguous and whose largest stride is a multiple of `PITCH` bytes (at
non-power-of-two pitches, e.g. 4000 bytes, numpy's copy was as fast or faster), and only when torch is already
loaded (the simulator does not import it).
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["c_order", "MIN_ELEMENTS", "PITCH", "ENABLED"]

ENABLED = True  # False: numpy's copy always (benchmarks/compile.py compares both in one run)

MIN_ELEMENTS = 16384  # below this the copy is a few microseconds either way and torch's dispatch dominates
PITCH = 1024  # bytes: a largest stride that is a multiple of this aliases in the cache


def blocked(x: np.ndarray) -> bool:
    """Whether `c_order` copies `x` with PyTorch's blocked copy (see the module docstring)."""
    if x.dtype != np.float32 or x.size < MIN_ELEMENTS or x.ndim < 2 or x.flags.c_contiguous:
        return False
    strides = x.strides
    if strides[-1] == 4 or min(strides) <= 0:  # rows already contiguous, or a broadcast / reversed axis
        return False
    return max(strides) % PITCH == 0


def c_order(x: np.ndarray) -> np.ndarray:
    """`np.ascontiguousarray(x)`: the same array when already C-contiguous, else a C-contiguous copy (through
    PyTorch's copy where `blocked(x)`)."""
    torch = sys.modules.get("torch")
    if not ENABLED or torch is None or not hasattr(torch, "from_numpy") or not blocked(x):
        return np.ascontiguousarray(x)
    if not x.flags.aligned or not x.flags.writeable:  # (from_numpy refuses the one, warns about the other)
        return np.ascontiguousarray(x)
    return torch.from_numpy(x).contiguous().numpy()
