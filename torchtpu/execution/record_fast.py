"""DEFER_AND_FUSE's recording hit in its common case, in one Python call: the C++ launch cache's stored recording
entry (fast_launch.store_record) calls `record_cached` here, which appends the op as an event of a region that
already has events, from a storage layout met before (record_plan), under one lock. Everything else (no event
yet: the kept one-op region; a poisoned storage; another device; a layout met for the first time; a refusal)
goes to `deferred.record_cached`, the long way, unchanged.

It does what `deferred._record_cached` does on that path (same checks, same event, same commit point), without
its second lock, its walk set-up and its second eager-mode lookup, the views from `record_plan.hit`: ~0.7 us
less per recorded 8x8 op (8x8 add unsynced 8.06 -> 7.36 us, interleaved in one process; docs/deferred_regions.md).

Its common case runs in C++ first (csrc/record_native.cpp, installed by `native_recording`): a hit whose layout
plan, region slots and views were all met before is recorded there, on these modules' own objects, with no Python
per op; anything else comes here. On a whole-storage driver (pjrt) outside DEFER_AND_FUSE, the C++ side also
runs an op whose one-op region has a prepared launch (one_op_fast.run) without the Python recording path."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from torchtpu.execution import deferred as _d
from torchtpu.execution import modes, one_op_fast, one_op_streak, poison, record_plan, user_frames
from torchtpu.execution.region_ir import Event, Slot
from torchtpu.execution.user_frames import user_line
from torchtpu.profiler import events as _events

_FUSE = modes.EagerMode.DEFER_AND_FUSE
_mode = modes.get_eager_mode
_lock = _d._lock


def record_cached(token: tuple, operands: list, outputs: list[torch.Tensor], device: int, layout: bytes,
                  addresses: tuple) -> bool:
    """`deferred.record_cached` (same arguments, same answer): the op becomes an event of the pending region."""
    region = _d._region
    if not region.events or _d._single or poison.active or device != region.device or _mode() is not _FUSE:
        return _d.record_cached(token, operands, outputs, device, layout, addresses)
    with _lock:
        if region is not _d._region or not region.events or _d._single or poison.active:  # another thread's flush
            return _d.record_cached(token, operands, outputs, device, layout, addresses)
        slots = region.slots
        added = len(slots)
        try:
            planned = record_plan.hit(token, operands, outputs, layout, addresses, region.slot_of, slots)
            if planned is None:
                _drop(region, added)  # (a slot the hit path made before it missed)
                planned = record_plan.views(token, operands, outputs, layout, addresses, region.slot_of, slots)
            if not planned:
                _drop(region, added)
                if planned is False:
                    return False
                return _d._record_cached(token, operands, outputs, device, user_line(), layout, addresses)
            ins, outs, sid = planned
            event = Event(token[1], token[2], ins, outs, tuple(operands[token[3]:]), (token[0], user_line()), sid)
        except BaseException:
            _drop(region, added)
            raise
        for view in outs:
            slots[view[0]].written = True
        region.events.append(event)  # the commit point
        region.ir_ops += len(token[1].ops)
        _d.stats.ops_deferred += 1
        if region.ir_ops > _d.MAX_REGION_OPS:
            _d.flush()
    return True


def _drop(region: Any, added: int) -> None:
    """The slots this call added go again (it refused, or raised)."""
    slots = region.slots
    for slot in slots[added:]:
        del region.slot_of[slot.key if slot.key else ("empty", slot.torch_dtype)]
    del slots[added:]


# the attributes csrc/record_native.cpp sets on the Event and Slot objects it makes (without their __init__)
NATIVE_EVENT_FIELDS = ("program", "structure", "inputs", "outputs", "scalars", "origin", "key")
NATIVE_SLOT_FIELDS = ("storage", "torch_dtype", "dtype", "written", "key", "nbytes", "numel", "_holder")


def native_recording(on: bool = True) -> None:
    """Turns the C++ recording hit (csrc/record_native.cpp) on or off; off, every recording hit runs
    `record_cached` here (the same result, as tests check)."""
    from torchtpu._native import native

    if on:
        if (tuple(f.name for f in dataclasses.fields(Event)) != NATIVE_EVENT_FIELDS
                or Slot.__slots__ != NATIVE_SLOT_FIELDS):
            raise RuntimeError("region_ir.Event or Slot has other fields than csrc/record_native.cpp sets: "
                               "change both together")
        native().fast_record_hooks(_d, poison, modes, record_plan, user_frames, one_op_fast, one_op_streak,
                                   _events, Event, Slot, _FUSE, user_line)
    else:
        native().fast_record_hooks(*(None,) * 12)


native_recording()
