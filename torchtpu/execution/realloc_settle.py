"""Pending work lands before a tpu storage changes its block: the shim calls `settle` with the old block's address
when `resize_` grows a tensor's storage or `storage.resize_` replaces it (csrc/realloc_settle.cpp). A deferred
region holds the old block's address; had it run later it would write freed memory and the new block would miss
its values (DEFER_AND_FUSE: `g = torch.full(...); g.resize_(bigger)` read back garbage and corrupted the heap).
Only a region that touches that storage runs: an out= result resized from empty keeps the region fusing."""

from __future__ import annotations

import torch

from torchtpu._native import native
from torchtpu.execution import deferred, poison


def _held_by_region(block: int) -> bool:
    if block in deferred._region.slot_of:
        return True
    for entry in deferred._single:  # the kept one-op region: (token, operands, outputs, ...)
        for t in (*entry[1], *entry[2]):
            if isinstance(t, torch.Tensor) and t.device.type != "cpu" and poison.storage_key(t) == block:
                return True
    return False


def settle(block: int) -> None:
    """Runs the pending region if it reads or writes the storage at `block` (its error raises at the resize, the
    region's outputs poisoned)."""
    if block and deferred.pending() and _held_by_region(block):
        deferred.flush()


def install() -> None:
    hook = getattr(native(), "set_settle_callback", None)
    if hook is not None:  # a shim built before the hook existed: rebuilt at the next import
        hook(settle)
