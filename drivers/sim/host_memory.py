"""Host memory by address as numpy arrays, fast: the process's address space as one byte array (`SPACE`, from
address `BASE`, its second page, up to 2**56), so that a view of a storage's memory at any address is one
`np.ndarray(shape, dtype, SPACE, address - BASE, strides)` (~0.5 us), where ctypes' `from_address` and
`np.frombuffer` take ~2.5 us (`flat`: a slice of it, ~1 us). The array reserves nothing and reads nothing
itself: only the bytes a view covers are ever touched, and its users view only the memory of live storages (the
simulator's buffers are that memory). numpy sees its views as external memory (not owned), as frombuffer's.
"""

from __future__ import annotations

import ctypes

import numpy as np

BASE = 1 << 12
SPACE = np.frombuffer((ctypes.c_char * ((1 << 56) - BASE)).from_address(BASE), np.uint8)


def flat(address: int, nbytes: int) -> np.ndarray:
    """The `nbytes` bytes at `address` as a flat uint8 array (zero-copy, writable)."""
    start = address - BASE
    if start < 0 or start + nbytes > SPACE.size:  # (not on any 64-bit host we run on: user space ends lower)
        return np.frombuffer((ctypes.c_char * nbytes).from_address(address), np.uint8)
    return SPACE[start: start + nbytes]
