"""Pending work lands before a tpu storage changes its block: the shim calls `settle` with the old block's address
when `resize_` grows a tensor's storage or `storage.resize_` replaces it (csrc/realloc_settle.cpp). A deferred
region holds the old block's address; had it run later it would write freed memory and the new block would miss
its values (DEFER_AND_FUSE: `g = torch.full(...); g.resize_(bigger)` read back garbage and corrupted the heap).
Only a region that touches that storage runs: an out= result resized from empty keeps the region fusing. A poisoned
storage stays poisoned at its new block (poison.moving): its old bytes, copied over, have no value either."""

from __future__ import annotations

from torchtpu._native import native
from torchtpu.execution import deferred, poison


def settle(block: int) -> None:
    """Runs the pending region if it reads or writes the storage at `block` (its error raises at the resize, the
    region's outputs poisoned)."""
    if block and deferred.pending() and deferred.touches_storage(block):
        deferred.flush()
    if block and poison.active:
        poison.moving(block)


def install() -> None:
    hook = getattr(native(), "set_settle_callback", None)
    if hook is not None:  # a shim built before the hook existed: rebuilt at the next import
        hook(settle)
