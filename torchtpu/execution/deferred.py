"""DEFER_AND_FUSE: ops append to a pending region; a flush turns the region into one Program, cached by
structure, which the driver fuses and runs in one launch.

Recording an op is cheap: it notes the op's traced program, where each input and output lives (storage slot,
offset, sizes, strides) and its scalar constants. At a flush the region's event sequence is looked up in a
replay cache: a training loop's second and later steps find their Program and executable there without
building any IR. On a miss, `region_ir.build` replays the events into a Program (views as IR expressions over
each storage's flat value, see region_ir.py). Inputs are the storages read before being written; outputs are
only the written storages someone besides the region still references, so an intermediate that died before the
flush never touches memory. Deferred outputs hold their storage from the call, so memory accounting is exact.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from torchtpu import runtime
from torchtpu.drivers.base import ExecutionError
from torchtpu.drivers.ir import Program
from torchtpu.execution.region_ir import Built, Event, Slot, View, build, hoist_scalars
from torchtpu.ops.tracing import TORCH_TO_IR
from torchtpu.profiler import events as _events

MAX_REGION_OPS = int(os.environ.get("TORCHTPU_MAX_REGION_OPS", "20000"))
_PACKAGE_DIRS = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(torch.__file__))


@dataclass
class _Region:
    slots: list[Slot] = field(default_factory=list)
    slot_of: dict[Any, int] = field(default_factory=dict)  # storage key -> slot
    events: list[Event] = field(default_factory=list)
    ir_ops: int = 0
    device: int = -1


@dataclass
class RegionStats:
    flushes: int = 0
    hits: int = 0
    misses: int = 0
    replays: int = 0
    ops_deferred: int = 0
    consecutive_misses: int = 0
    warned: bool = False
    last_inputs: tuple = ()


@dataclass
class _Replay:
    built: Built
    exe: Any


_lock = threading.RLock()
_region = _Region()
_replays: dict[tuple, _Replay] = {}
_MAX_REPLAYS = 64
stats = RegionStats()


def pending() -> bool:
    return bool(_region.events)


def _key(t: torch.Tensor) -> int | tuple:
    ptr = t.data_ptr() - t.storage_offset() * t.element_size()  # the storage's address, without a storage object
    return ptr if t.data_ptr() else ("empty", t.dtype)  # every zero-byte storage has address 0


def _user_line() -> str:
    frame = sys._getframe(2)
    for _ in range(40):
        if frame is None:
            break
        name = frame.f_code.co_filename
        if not name.startswith(_PACKAGE_DIRS) and "<frozen" not in name:
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def can_defer(tensors: list[torch.Tensor], targets: list[torch.Tensor] | None) -> bool:
    """Zero-size tensors, storages seen under two dtypes and cross-device regions run eagerly instead."""
    for t in (*tensors, *(targets or ())):
        if t.numel() == 0 or not t.data_ptr():
            return False
        slot = _region.slot_of.get(_key(t))
        if slot is not None and _region.slots[slot].holder.dtype != t.dtype:
            return False
        if _region.device >= 0 and (t.device.index or 0) != _region.device:
            return False
    return True


def _view(t: torch.Tensor) -> View:
    key = _key(t)
    slot = _region.slot_of.get(key)
    if slot is None:
        n = t.untyped_storage().nbytes() // t.element_size()
        holder = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), 0, (n,), (1,))
        slot = len(_region.slots)
        _region.slots.append(Slot(holder, TORCH_TO_IR[t.dtype]))
        _region.slot_of[key] = slot
    return (slot, t.storage_offset(), tuple(t.shape), tuple(t.stride()))


def record(op_name: str, program: Program, tensors: list[torch.Tensor], outputs: list[torch.Tensor],
           device: int) -> None:
    """Appends one traced op to the pending region."""
    hoisted, constants, structure = hoist_scalars(program)
    if _region.device >= 0 and device != _region.device:
        flush()
    with _lock:
        _region.device = device
        inputs = tuple(_view(t) for t in tensors)
        outs = tuple(_view(t) for t in outputs)
        for view in outs:
            _region.slots[view[0]].written = True
        _region.events.append(Event(hoisted, structure, inputs, outs, tuple(constants), (op_name, _user_line())))
        _region.ir_ops += len(hoisted.ops)
        stats.ops_deferred += 1
        if _region.ir_ops > MAX_REGION_OPS:
            flush()


def _alive_elsewhere(slot: Slot) -> bool:
    storage = slot.holder.untyped_storage()
    return torch._C._storage_Use_Count(storage._cdata) > 2  # more than our holder and this Python handle


def flush() -> None:
    """Runs the pending region as one Program (replayed or built); afterwards every tensor is materialized."""
    global _region
    with _lock:
        if not pending():
            return
        region = _region
        _region = _Region()
        # Tensors that died in reference cycles during the region (autograd graphs make them) must be collected
        # now, or liveness, and with it the program's outputs and cache key, would vary from step to step.
        gc.collect(1)
        live = {i for i, s in enumerate(region.slots) if s.written and _alive_elsewhere(s)}
        key = (tuple(e.signature() for e in region.events), tuple((s.dtype, s.holder.shape[0]) for s in region.slots))
        replay = _replays.get(key)
        drv = runtime.driver()
        # A replay may write back a few storages that died this time (harmless: our holders keep them until the
        # flush ends); a storage alive now that the replay does not write forces a rebuild with the union, so
        # garbage-collection timing cannot make a loop recompile more than once or twice.
        if replay is None or not live <= set(replay.built.output_slots):
            if replay is not None:
                live |= set(replay.built.output_slots)
            built = build(region.slots, region.events, sorted(live))
            misses_before = drv.cache_stats.misses
            exe = drv.compile(built.program)
            _count(built.program, miss=drv.cache_stats.misses > misses_before)
            if len(_replays) >= _MAX_REPLAYS:
                _replays.clear()
            replay = _replays[key] = _Replay(built, exe)
        else:
            stats.replays += 1
            _count(replay.built.program, miss=False)
        _execute(drv, replay, region)
        if _events.ACTIVE:  # a profiler is recording: note the flush, its reason and the region's ops
            _events.on_flush(region, replay.exe)


def _execute(drv: Any, replay: _Replay, region: _Region) -> None:
    built = replay.built
    try:
        runtime.collect_freed()
        buffers = [runtime.storage_handle(region.slots[s].holder) for s in built.input_slots]
        scalar_inputs = built.program.inputs[len(built.input_slots):]
        values = [v for e in region.events for v in e.scalars]
        buffers += [runtime.scalar_buffer(value, v.dtype) for v, value in zip(scalar_inputs, values)]
        outputs = [runtime.storage_handle(region.slots[s].holder) for s in built.output_slots]
        drv.execute(replay.exe, buffers, outputs, max(region.device, 0))
    except ExecutionError as exc:
        where = _origin(region, built, exc.op_index)
        raise RuntimeError(f"{exc.cause} (in {where}; raised when the deferred region ran)") from exc.cause
    from torchtpu.execution import modes

    if modes.get_eager_mode() is modes.EagerMode.LAUNCH_BLOCKING:
        drv.synchronize(max(region.device, 0))


def _origin(region: _Region, built: Built, op_index: int) -> str:
    found = "<unknown>"
    for start, event in zip(built.op_starts, region.events):
        if start > op_index:
            break
        found = f"{event.origin[0]} issued at {event.origin[1]}"
    return found


def _count(program: Program, miss: bool) -> None:
    stats.flushes += 1
    shapes = tuple((v.shape, v.dtype) for v in program.inputs)
    if not miss:
        stats.hits += 1
        stats.consecutive_misses = 0
    else:
        stats.misses += 1
        stats.consecutive_misses += 1
        from torchtpu.execution import modes

        fusing = modes.get_eager_mode() is modes.EagerMode.DEFER_AND_FUSE  # else one op per region (pjrt)
        if fusing and stats.consecutive_misses >= 8 and stats.flushes > 8 and not stats.warned:
            stats.warned = True
            changed = [f"{a} -> {b}" for a, b in zip(stats.last_inputs, shapes) if a != b][:3]
            reason = ("input shapes changed: " + "; ".join(str(c) for c in changed)) if changed else \
                "the op graph changed between regions"
            warnings.warn(f"DEFER_AND_FUSE keeps recompiling: the last {stats.consecutive_misses} regions all "
                          f"compiled a new program ({reason}). Keep shapes static (pad to buckets) to get cache "
                          "hits.", RuntimeWarning, stacklevel=3)
    stats.last_inputs = shapes


def is_materialized(t: torch.Tensor) -> bool:
    """False while `t`'s storage has a pending (not yet computed) value in the current region."""
    slot = _region.slot_of.get(_key(t))
    return slot is None or not _region.slots[slot].written


def touches(t: torch.Tensor) -> bool:
    return _key(t) in _region.slot_of


def pending_ir() -> str:
    """The pending region as text IR (for debugging)."""
    with _lock:
        written = [i for i, s in enumerate(_region.slots) if s.written]
        return build(_region.slots, _region.events, written).program.text()


def reset_stats() -> None:
    global stats
    stats = RegionStats()
