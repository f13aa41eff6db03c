"""A recording hit's views from its storage layout: the C++ launch path hands `deferred.record_cached` the call's
layout (csrc/fast_launch.cpp's storage_layout: per tensor its storage's number, dtype, offset, sizes, strides;
per storage its bytes) and each storage's address. A layout seen before for the same recording entry maps each of
its storages to a region slot by address and reuses the views and the interned event signature it made last
time, instead of asking every tensor for its pointer, offset, sizes, strides and storage (`_record_cached`'s
walk, which stays the way for a layout met for the first time)."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.execution import deferred as _deferred  # (imported by deferred: its slots and signature ids)
from torchtpu.execution.region_ir import Slot
from torchtpu.ops.tracing import TORCH_TO_IR

# (token id, layout) -> (per storage: (index of its first tensor, torch dtype, IR dtype, bytes, whether a fresh
# output), per tensor: (storage number, offset, sizes, strides)), or None where the walk must run (an empty
# tensor, a storage under two dtypes: the walk refuses those as it always did)
_plans: dict[tuple, tuple | None] = {}
# (token id, layout, the storages' region slots) -> (input views, output views, signature id)
_views: dict[tuple, tuple] = {}
_MAX = 1 << 15


def clear() -> None:
    """Forgets every plan (the interned signature ids they hold were dropped)."""
    _plans.clear()
    _views.clear()


def _plan(token: tuple, operands: list, outputs: list[torch.Tensor]) -> tuple | None:
    n, fresh = token[3], token[4]
    tensors = (*operands[:n], *outputs)
    storages: list[tuple] = []
    number: dict[int, int] = {}
    views = []
    for i, t in enumerate(tensors):
        ptr = t.data_ptr()
        if not ptr or not t.numel():
            return None
        offset = t.storage_offset()
        base = ptr - offset * t.element_size()
        s = number.get(base)
        if s is None:
            s = number[base] = len(storages)
            storages.append((i, t.dtype, TORCH_TO_IR[t.dtype], t.untyped_storage().nbytes(), fresh and i >= n))
        elif storages[s][1] != t.dtype:
            return None
        views.append((s, offset, tuple(t.shape), tuple(t.stride())))
    return tuple(storages), tuple(views)


def views(token: tuple, operands: list, outputs: list[torch.Tensor], layout: bytes, addresses: tuple,
          slot_of: dict[Any, int], slots: list[Slot]) -> tuple | bool | None:
    """(input views, output views, signature id) of the recording hit, its new storages added to `slot_of` and
    `slots` (the caller drops them again when it refuses); False when the op cannot be recorded (a storage
    the region holds under another dtype); None when the layout needs the walk."""
    memo = (token[5], layout)
    plan = _plans.get(memo, False)
    if plan is False:
        plan = _plan(token, operands, outputs)
        if len(_plans) >= _MAX:
            _plans.clear()
        _plans[memo] = plan
    if plan is None:
        return None
    storages, tensor_views = plan
    n = token[3]
    mapped = []
    for (first, dtype, ir_dtype, nbytes, is_fresh), address in zip(storages, addresses):
        if is_fresh:  # made by this call (at::empty, or empty_strided): dense, its whole storage, not in the region
            slot_of[address] = slot = len(slots)
            slots.append(Slot(outputs[first - n], dtype, ir_dtype, address, nbytes,
                              nbytes // dtype.itemsize))
        else:
            slot = slot_of.get(address)
            if slot is None:
                slot = _deferred._new_slot(address, operands[first] if first < n else outputs[first - n])
            elif slots[slot].torch_dtype != dtype:
                return False
        mapped.append(slot)
    key = (memo, tuple(mapped))
    found = _views.get(key)
    if found is None:
        made = tuple((mapped[s], offset, shape, stride) for s, offset, shape, stride in tensor_views)
        ins, outs = made[:n], made[n:]
        found = (ins, outs, _deferred.signature_id((token[2], ins, outs)))
        if len(_views) >= _MAX:
            _views.clear()
        _views[key] = found
    return found


def hit(token: tuple, operands: list, outputs: list[torch.Tensor], layout: bytes, addresses: tuple, slot_of: dict,
        slots: list[Slot]) -> tuple | bool | None:
    """`views` where the layout and the storages' slots were met before (its hit, in ~0.4 us less: record_fast's
    path; a storage new to the region gets its slot here, as `views` gives it); False where `views` refuses;
    None otherwise (the caller then drops any slot this made and asks `views`)."""
    memo = (token[5], layout)
    plan = _plans.get(memo)
    if not plan:
        return None
    mapped = []
    n = token[3]
    for first, dtype, ir_dtype, nbytes, is_fresh in plan[0]:
        address = addresses[len(mapped)]
        if is_fresh:  # made by this call: its whole storage, not in the region (as record_plan.views)
            slot_of[address] = slot = len(slots)
            slots.append(Slot(outputs[first - n], dtype, ir_dtype, address, nbytes,
                              nbytes // dtype.itemsize))
        else:
            slot = slot_of.get(address)
            if slot is None:
                slot = _deferred._new_slot(address, operands[first] if first < n else outputs[first - n])
            elif slots[slot].torch_dtype != dtype:
                return False
        mapped.append(slot)
    return _views.get((memo, tuple(mapped)))
