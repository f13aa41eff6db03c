"""Pending work lands before a tpu storage changes its block: the shim calls `settle` when `resize_` grows a
tensor's storage or `storage.resize_` replaces it (csrc/tpu_shim.cpp, settle_before_realloc). A deferred region
holds the old block's address; had it run later it would write freed memory and the new block would miss its
values (DEFER_AND_FUSE: `g = torch.full(...); g.resize_(bigger)` read back garbage and corrupted the heap)."""

from __future__ import annotations

from torchtpu._native import native
from torchtpu.execution import deferred


def settle() -> None:
    """Runs the pending region, if any (its error raises at the resize, the region's outputs poisoned)."""
    if deferred.pending():
        deferred.flush()


def install() -> None:
    hook = getattr(native(), "set_settle_callback", None)
    if hook is not None:  # a shim built before the hook existed: rebuilt at the next import
        hook(settle)
