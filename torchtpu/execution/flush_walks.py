"""A flush's two walks over the whole pending region, in C++ (csrc/region_flush.cpp): the written slots that
something besides the region still references (its outputs), and the key its replay is looked up by. In Python
they cost ~1 us a slot (`Slot.referenced_elsewhere` and a tuple per slot), a few percent of a small model's step
under DEFER_AND_FUSE."""

from __future__ import annotations

from typing import Any

from torchtpu._native import native


def live(region: Any) -> list[int]:
    """The slots the region writes that someone besides it still references (`Slot.referenced_elsewhere`)."""
    return native().region_live_slots(region.slots)


def replay_key(region: Any) -> tuple:
    """(each event's interned signature id, IR dtype and bytes of each slot in one flat tuple: (dtype of slot 0,
    its bytes, dtype of slot 1, ...)): a region's replay key. A slot's (dtype, bytes) names its flat length: the
    storage's nbytes // element size elements. (Flat: a tuple per slot was ~0.1 us a slot to make and compare.)"""
    return native().region_replay_key(region.events, region.slots)
