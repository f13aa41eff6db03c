"""The small exact-order `mm` as a native function (a numba cfunc) that C++ calls with raw pointers.

The C++ launch cache (torchtpu/csrc/fast_launch.cpp) calls an eager 8x8 `mm` thousands of times a second; through
numba's Python dispatcher each call types its three arrays (~1 us, most of the kernel's cost at that size), and
the C++ side first has to wrap the tensors in numpy views. `mm_into_address()` is the address of a C function

    void mm_into(const float* a, const float* b, float* out, int64 m, int64 k, int64 n, int64 tile)

over C-contiguous (m, k), (k, n) and (m, n) float32 buffers that runs `mxu_kernel._mm_into` itself on arrays
over those pointers (the loop nest `_mm_rounded_into` up to SMALL_INTO_MAX_MACS multiply-adds, the register-blocked
`_mm_blocked_into` above, e.g. a 64x64 mm): the same compiled kernels, so the same sums in the same order, bit for
bit. It is compiled on first use (then loaded from numba's cache), not at import.
"""

from __future__ import annotations

from functools import lru_cache

from .mxu_kernel import _mm_into


@lru_cache(maxsize=1)
def mm_into_address() -> int:
    """The address of the native `mm_into` (module docstring); the cfunc is kept alive by the cache."""
    return _mm_into_cfunc().address


@lru_cache(maxsize=1)
def _mm_into_cfunc():  # noqa: ANN202 - a numba CFunc
    from numba import carray, cfunc, types

    f32p = types.CPointer(types.float32)
    signature = types.void(f32p, f32p, f32p, types.int64, types.int64, types.int64, types.int64)

    @cfunc(signature, cache=True)
    def mm_into(a, b, out, m, k, n, tile):  # noqa: ANN001, ANN202
        _mm_into(carray(a, (m, k)), carray(b, (k, n)), carray(out, (m, n)), tile)

    return mm_into
