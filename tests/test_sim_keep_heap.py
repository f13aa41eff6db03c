"""The sim driver's glibc settings (drivers/sim/driver.py `_keep_heap`): a multi-MB array freed and made again
reuses the heap's pages instead of a fresh mapping, so a launch's temporaries do not fault their pages in anew on
every launch (setting the trim threshold alone froze glibc's mmap threshold at 128 KiB: each such array was
mapped and unmapped, ~16,500 minor faults per compiled GPT-2 hidden-256 training step)."""

from __future__ import annotations

import ctypes
import resource

import pytest
from torchtpu.drivers.sim import driver as sim_driver
from torchtpu.drivers.sim.driver import SimDriver


def _faults_of_a_block_made_again(nbytes: int) -> int:
    """Minor page faults of writing a `nbytes` malloc block made right after an equal one was written and freed
    (malloc itself, not numpy: numpy asks for huge pages from 4 MiB, which would hide a fresh mapping's faults)."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    first = libc.malloc(nbytes)
    ctypes.memset(first, 1, nbytes)
    libc.free(first)
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    again = libc.malloc(nbytes)
    ctypes.memset(again, 2, nbytes)
    faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before
    libc.free(again)
    return faults


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallopt"), reason="glibc's mallopt only (the setting's target)")
def test_a_freed_multi_mb_array_is_reused_without_page_faults():
    SimDriver()  # sets the process's malloc options once
    assert sim_driver._keep_heap_done
    for nbytes in (1 << 20, 24 << 20):  # under the 32 MiB mmap threshold: from the heap, whose pages stay
        assert _faults_of_a_block_made_again(nbytes) < nbytes // resource.getpagesize() // 8, nbytes
