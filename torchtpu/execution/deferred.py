"""DEFER_AND_FUSE: ops append to a pending region; a flush turns the region into one Program, cached by
structure, which the driver fuses and runs in one launch.

Recording an op is cheap: it notes the op's traced program, where each input and output lives (storage slot,
offset, sizes, strides) and its scalar constants. A repeated op is recorded by the C++ launch cache
(fast_launch.store_record): no dispatcher trampoline, no Python signature, one pass over its tensors
(`record_cached`); on a whole-storage driver (pjrt) outside DEFER_AND_FUSE such an op runs as its cached one-op
region straight from its tensors (`_launch_one`), without making the region.

At a flush the region's event sequence is looked up in a replay cache: a training loop's second and later steps
find their Program and executable there without building any IR. On a miss, `region_ir.build` replays the events
into a Program (views as IR expressions over each storage's flat value, see region_ir.py). Inputs are the storages
read before being written; outputs are only the written storages someone besides the region still references, so an
intermediate that died before the flush never touches memory. Deferred outputs hold their storage from the call, so
memory accounting is exact.

Regions are transactional. Recording is all or nothing. A flush either completes or leaves a defined state:
- an interrupt (KeyboardInterrupt) before the region starts to run leaves it pending, whole: nothing is lost,
  and the next flush (the next read, `synchronize`, leaving `eager_mode`) runs it;
- an op that fails when the region is built or run: the ops recorded before it are committed (run again on
  their own: a failed launch writes no output, in both drivers), and every storage that it or a later op was to
  write is poisoned (poison.py): reading it raises the error, naming the op and the user's line;
- any other failure (a compile error, an interrupt while the region runs): every storage the region was to
  write is poisoned. Storages the region only read are never written.
"""

from __future__ import annotations

import bisect
import gc
import itertools
import sys
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from torchtpu import config, runtime
from torchtpu.drivers.base import ExecutionError
from torchtpu.drivers.ir import Program
from torchtpu.execution import fast_launch, flush_walks, modes, one_op_fast, one_op_streak, poison, record_plan
from torchtpu.execution.one_op_cache import _by_layout, _one_ops, remember, run_one  # noqa: F401 - tests read _one_ops
from torchtpu.execution.one_op_cache import one_key as _one_key
from torchtpu.execution.region_ir import BuildError, Built, Event, Slot, View, build, covers, structure_of
from torchtpu.execution.user_frames import user_line
from torchtpu.ops.tracing import TORCH_TO_IR
from torchtpu.profiler import events as _events

MAX_REGION_OPS = config.get("TORCHTPU_MAX_REGION_OPS")
_FUSE = modes.EagerMode.DEFER_AND_FUSE
_mode = modes.get_eager_mode


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
    last_program: Program | None = None  # the last flush's (the recompilation warning names its changed inputs)


_lock = threading.RLock()
_kept = [False]  # a region interrupted before it ran was kept pending (fast_launch.sync: off while it is)
_region = _Region()
_replays: OrderedDict[tuple, Built] = OrderedDict()  # LRU by region signature, each compiled
_MAX_REPLAYS = 64
stats = RegionStats()


def pending() -> bool:
    return bool(_region.events) or bool(_single)


_key = poison.storage_key

# Event signatures interned as ints at record time, so that a flush's replay key is a tuple of ints: hashing and
# comparing the signatures themselves (tuples of view tuples) cost ~1.5 us per op at each flush of a 2,000-op
# region. Ids are never reused (a cleared table hands out new ones: a replay miss, never a wrong match).
_SIGNATURE_IDS: dict[tuple, int] = {}
_MAX_SIGNATURES = 1 << 16
_next_signature = itertools.count()


def signature_id(signature: tuple) -> int:
    """The interned id of an event signature (`Event.signature()`); equal signatures, equal ids."""
    sid = _SIGNATURE_IDS.get(signature)
    if sid is None:
        if len(_SIGNATURE_IDS) >= _MAX_SIGNATURES:
            _SIGNATURE_IDS.clear()
            _by_layout.clear()  # these hold ids of the old table
            record_plan.clear()
        sid = _SIGNATURE_IDS[signature] = next(_next_signature)
    return sid


def _user_line() -> str:
    return user_line(2)  # from the recording function (ours: skipped) up


def can_defer(tensors: list[torch.Tensor], targets: list[torch.Tensor] | None) -> bool:
    """Storages seen under two dtypes and cross-device regions run eagerly instead. A zero-size tensor is recorded
    (an empty read, a write of nothing; one without memory maps to its dtype's empty slot, as on a whole-storage
    driver): refusing it flushed the region, which split a model's step at every cat onto an empty cache."""
    if _single:
        with _lock:
            _record_single()
    for t in (*tensors, *(targets or ())):
        slot = _region.slot_of.get(_key(t))
        if slot is not None and _region.slots[slot].torch_dtype != t.dtype:
            return False
        if _region.device >= 0 and (t.device.index or 0) != _region.device:
            return False
    return True


def _new_slot(key: Any, t: torch.Tensor) -> int:
    """A slot for the storage of `t` (not in the region yet): it holds the storage itself (region_ir.Slot)."""
    storage = t.untyped_storage()
    nbytes = storage.nbytes()
    slot = len(_region.slots)
    _region.slots.append(Slot(t, t.dtype, TORCH_TO_IR[t.dtype], storage.data_ptr(), nbytes,
                              nbytes // t.element_size()))
    _region.slot_of[key] = slot
    return slot


def _view(t: torch.Tensor) -> View:
    key = _key(t)
    slot = _region.slot_of.get(key)
    if slot is None:
        slot = _new_slot(key, t)
    return (slot, t.storage_offset(), tuple(t.shape), tuple(t.stride()))


def record(op_name: str, program: Program, tensors: list[torch.Tensor], outputs: list[torch.Tensor],
           device: int, scalars: Sequence[Any] = ()) -> None:
    """Appends one traced op to the pending region. `program`'s inputs are `tensors`, then one 0-d input per
    value of `scalars` (its scalar arguments, inputs from the first trace: ops/scalar_args.py).

    All or nothing: an error or an interrupt leaves the region as it was (at most with a slot no event uses).
    """
    if one_op_streak._granted:
        one_op_streak.take_back()
    _record(op_name, program, structure_of(program), tensors, outputs, device, scalars, _user_line())


def record_cached(token: tuple, operands: list, outputs: list[torch.Tensor], device: int, layout: bytes,
                  addresses: tuple) -> bool:
    """The C++ launch cache's recording hit (fast_launch.store_record): records the op of `token` (op name, traced
    program, its structure id, number of tensors, whether the outputs are fresh, a unique id) on `operands` (its
    tensors, then the 0-d buffers of its scalars) writing `outputs`, all on `device` (the C++ key checked);
    `layout`, `addresses`: their storages (one_op_cache.one_key). False, with the
    region as it was, when the op cannot be deferred now (what `can_defer` refuses, or a poisoned storage: the
    Python kernel then runs the call)."""
    if one_op_streak._granted:
        one_op_streak.take_back()
    fusing = _mode() is _FUSE
    one = not fusing and not _region.events and not _single and not _events.ACTIVE
    if one:  # a whole-storage driver outside DEFER_AND_FUSE (pjrt): this op is a region of its own
        with _lock:
            one_key = _launch_one(token, operands, outputs, device, layout, addresses)
        if one_key is None:
            return True
    elif fusing and not _region.events and not _events.ACTIVE and not poison.active:
        with _lock:
            if not _single and not _region.events:
                found = _one_key(token, operands, outputs, layout, addresses)
                if found:  # kept as a one-op region until a second op comes (then recorded) or a flush (run)
                    _single.append((token, operands, outputs, device, _user_line(), found, layout, addresses))
                    stats.ops_deferred += 1
                    return True
    with _lock:
        _record_single()
        return _record_cached(token, operands, outputs, device, _user_line(), layout, addresses, one,
                              one_key if one else None)


def _record_cached(token: tuple, operands: list, outputs: list[torch.Tensor], device: int, line: str,
                   layout: bytes, addresses: tuple, one: bool = False, one_key: tuple | bool | None = None) -> bool:
    """`record_cached` the long way: the op becomes an event of the pending region (its views from a layout seen
    before: record_plan; else from its tensors)."""
    op_name, program, structure, n, fresh, _ = token
    with _lock:
        region = _region
        if poison.active or (region.device >= 0 and device != region.device):
            return False
        slot_of, slots = region.slot_of, region.slots
        added = len(slots)
        views = []
        try:
            planned = record_plan.views(token, operands, outputs, layout, addresses, slot_of, slots)
            if planned is False:
                return False
            for t in () if planned else operands[:n] if fresh else (*operands[:n], *outputs):  # can_defer, _view
                ptr, offset = t.data_ptr(), t.storage_offset()
                if not ptr or not t.numel():
                    return False
                key = ptr - offset * t.element_size()
                slot = slot_of.get(key)
                if slot is None:
                    slot = _new_slot(key, t)
                elif slots[slot].torch_dtype != t.dtype:
                    return False
                views.append((slot, offset, tuple(t.shape), tuple(t.stride())))
            if fresh and not planned:  # made by this call (at::empty or empty_strided): whole dense storages
                for t in outputs:
                    ptr, shape = t.data_ptr(), tuple(t.shape)
                    if not ptr:
                        return False
                    slot_of[ptr] = slot = len(slots)
                    slots.append(Slot(t, t.dtype, TORCH_TO_IR[t.dtype], ptr, t.nbytes, t.numel()))
                    views.append((slot, 0, shape, t.stride()))
            added = len(slots)
        finally:
            if added != len(slots):  # refused: the slots this call made go again
                for slot in slots[added:]:
                    del slot_of[slot.key if slot.key else ("empty", slot.torch_dtype)]
                del slots[added:]
        ins, outs, sid = planned or (tuple(views[:n]), tuple(views[n:]), None)
        event = Event(program, structure, ins, outs, tuple(operands[n:]), (op_name, line),
                      signature_id((structure, ins, outs)) if sid is None else sid)
        for view in outs:
            slots[view[0]].written = True
        region.device = device
        region.events.append(event)  # the commit point
        region.ir_ops += len(program.ops)
        stats.ops_deferred += 1
        if region.ir_ops > MAX_REGION_OPS:
            flush()
    if _mode() is not _FUSE:  # a whole-storage driver outside DEFER_AND_FUSE: the op runs now (launch.launch)
        flush(raised_at_call=True)
        built = _replays.get(one_key) if one and one_key else None
        if built is not None:
            remember(one_key, built)
    return True


def _launch_one(token: tuple, operands: list, outputs: list[torch.Tensor], device: int, layout: bytes,
                addresses: tuple) -> tuple | bool | None:
    """Runs a cached op as the one-op region `flush` would replay, without making the region (its Built from
    `_one_ops`). None when it ran; else the region's replay key (False: none) for the caller to record and flush
    the op the long way (a miss, or a launch that raised: it wrote nothing, and the long way raises its error)."""
    if (built := one_op_fast.run(token, operands[token[3]:], layout, addresses, device)) is not None:
        return _replayed(built)  # a (token, layout) that ran before: its prepared launch
    found = _one_key(token, operands, outputs, layout, addresses)
    if not found or not _run_one(found, operands[token[3]:], device):
        return found and found[0]
    one_op_fast.learn(token, layout, found, device)
    return None


# DEFER_AND_FUSE's pending op while it is the region's only one: (token, operands, outputs, device, user line,
# one_key's answer) from `record_cached`. A flush runs it as `_launch_one` runs a pjrt op (no region made);
# any other use of the region first records it as the event it would have been (`_record_single`).
_single: list[tuple] = []


def _run_one(found: tuple, scalars: Sequence[Any], device: int, direct: tuple | None = None) -> bool:
    """one_op_cache.run_one on `one_key`'s answer, counted as a replayed region; False when it did not run."""
    return (built := run_one(*found, scalars, device, direct)) is not None and _replayed(built) is None


def _replayed(built: Built) -> None:
    stats.replays += 1
    _count(built.program, miss=False)


def _record_single() -> None:
    """Records the kept one-op region's op as the region's event (call under `_lock`)."""
    if _single:
        token, operands, outputs, device, line, _, layout, addresses = _single.pop()
        if not _record_cached(token, operands, outputs, device, line, layout, addresses):
            raise RuntimeError(f"internal error: {token[0]} was deferred but cannot be recorded; its outputs would "
                               "have no value")


def _held_elsewhere(outputs: list[torch.Tensor]) -> bool:
    """Whether every output is referenced from Python beyond `outputs` (a result the caller dropped is not: the
    long way leaves a storage nobody holds unwritten). sys.getrefcount counts `outputs`, the loop variable and
    its own argument; a tensor referenced only from C++ counts as dropped (the long way then decides)."""
    for t in outputs:
        if sys.getrefcount(t) <= 3:
            return False
    return True


def _flush_single() -> bool:
    """Runs the kept one-op region through `_one_ops` (call under `_lock`, with no other pending event); False
    when the long way must run it (recorded now): a cache miss, an output nobody else holds (the long way leaves
    it unwritten), a poisoned storage, a profiler recording, or a failed launch."""
    token, operands, outputs, device, _, found, layout, _ = _single[0]
    if poison.active or _events.ACTIVE or not _held_elsewhere(outputs):
        _record_single()
        return False
    try:
        ran = _run_one(found, operands[token[3]:], device, (token, operands, outputs, layout))
    except BaseException:  # an interrupt while it ran: what it was to write has no defined value
        _single.clear()
        poison.mark(outputs, f"the DEFER_AND_FUSE region that was to write it was interrupted ({token[0]})")
        raise
    if ran:
        _single.clear()
        return True
    _record_single()
    return False


def _record(op_name: str, program: Program, structure: int, tensors: list[torch.Tensor],
            outputs: list[torch.Tensor], device: int, scalars: Sequence[Any], line: str) -> None:
    with _lock:
        _record_single()
    if _region.device >= 0 and device != _region.device:
        flush()
    with _lock:
        if poison.active:
            # a poisoned storage that an earlier op of this region writes whole is valid by then
            poison.check_inputs(op_name, tensors, program,
                                lambda t: _region.slot_of.get(_key(t)) in _covered(_region.slots, _region.events))
        inputs = tuple(_view(t) for t in tensors)
        outs = tuple(_view(t) for t in outputs)
        event = Event(program, structure, inputs, outs, tuple(scalars), (op_name, line),
                      signature_id((structure, inputs, outs)))
        slots = _region.slots
        for view in outs:  # before the event: a slot marked written that no event writes passes through
            slots[view[0]].written = True
        _region.device = device
        _region.events.append(event)  # the commit point
        _region.ir_ops += len(program.ops)
        stats.ops_deferred += 1
        if _region.ir_ops > MAX_REGION_OPS:
            flush()


def _live(region: _Region) -> list[int]:
    """The slots the region writes that someone besides it still references."""
    return flush_walks.live(region)


def _covered(slots: list[Slot], events: Sequence[Event]) -> set[int]:
    """The slots that one of `events` writes whole."""
    return {v[0] for e in events for v in e.outputs if covers(v, slots[v[0]].numel)}


@dataclass
class _Stage:
    """How far a flush got: its failure handling depends on it."""

    name: str = "prepare"  # prepare, build, compile, execute
    built: Built | None = None


def flush(raised_at_call: bool = False) -> None:
    """Runs the pending region as one Program (replayed or built); afterwards every tensor is materialized, or,
    when the region failed, poisoned (see the module docstring). `raised_at_call`: the caller recorded the
    region's only op just now, so its error raises at the op's own call and, as in DEFER_NEVER, needs no poison."""
    global _region
    if not (_single or _region.events or _region.slots or poison.active):  # nothing to do (an eager sync)
        if one_op_streak._granted:
            one_op_streak.synchronized()
        return
    with _lock:
        if poison.active:
            poison.sweep()
        one_key = None
        if _single:
            if _region.events:
                _record_single()
            else:
                one_key = _single[0][5][0]
                if _flush_single():
                    one_op_streak.region_ran(1)
                    return
        if not _region.events:
            if _region.slots:  # left by a record that failed or was interrupted
                _region = _Region()
            return
        region = _region
        stage = _Stage()
        try:
            _region = _Region()
            warning = _run(region, stage)
        except BaseException as exc:  # noqa: BLE001 - every failure leaves a defined state, then re-raises
            _fail(region, stage, exc, raised_at_call)
        one_op_streak.region_ran(len(region.events))
    if _kept[0]:  # the C++ launch cache was off while a kept region was pending outside DEFER_AND_FUSE
        _kept[0] = False
        fast_launch.sync()
    if one_key is not None:  # a kept one-op region that ran the long way: the next one with its key need not
        built = _replays.get(one_key)
        if built is not None:
            remember(one_key, built)
    if warning is not None:  # after the region ran: a warning made an error must not fail it
        warnings.warn(warning, RuntimeWarning, stacklevel=2)


def _run(region: _Region, stage: _Stage) -> str | None:
    live = set(_live(region))
    key = flush_walks.replay_key(region)
    built = _replays.get(key)
    drv = runtime.driver()
    # A replay may write back a few storages that died this time (harmless: our holders keep them until the
    # flush ends); a storage alive now that the replay does not write forces a rebuild with the union, so
    # garbage-collection timing cannot make a loop recompile more than once or twice.
    if built is None or not live <= built.output_set:
        # Tensors that died in reference cycles during the region (autograd graphs make them) are collected
        # before a build, or liveness, and with it the program's outputs, would vary from step to step. A replay
        # needs no collection: a dead storage it writes back costs nothing.
        gc.collect(1)
        live = set(_live(region))
        if built is not None:
            live |= built.output_set
        stage.name = "build"
        built = stage.built = build(region.slots, region.events, sorted(live))
        stage.name = "compile"
        misses_before = drv.cache_stats.misses
        built.exe = drv.compile(built.program)
        warning = _count(built.program, miss=drv.cache_stats.misses > misses_before)
        _replays[key] = built
        while len(_replays) > _MAX_REPLAYS:
            _replays.popitem(last=False)
    else:
        _replays.move_to_end(key)
        stats.replays += 1
        warning = _count(built.program, miss=False)
    stage.name, stage.built = "execute", built
    _execute(drv, built, region, region.events)
    if _events.ACTIVE:  # a profiler is recording: note the flush, its reason and the region's ops
        _events.on_flush(region, built.exe)
    if poison.active:  # a poisoned storage written whole is valid again
        poison.discard(region.slots[s].key for s in _covered(region.slots, region.events))
    return warning


def _execute(drv: Any, built: Built, region: _Region, events: Sequence[Event]) -> None:
    runtime.collect_freed()  # a freed storage's address may already belong to one of the region's: drop it first
    storage_buffer, slots, device = drv.storage_buffer, region.slots, max(region.device, 0)

    def handle(index: int) -> Any:  # runtime.storage_handle, from what the slot knows already
        slot = slots[index]
        return storage_buffer(slot.key, slot.nbytes, slot.dtype, device)

    buffers = [handle(s) for s in built.input_slots]
    scalar_inputs = built.program.inputs[len(built.input_slots):]
    values = [v for e in events for v in e.scalars]
    buffers += [value if value.__class__ is np.ndarray else runtime.scalar_buffer(value, v.dtype)
                for v, value in zip(scalar_inputs, values)]
    outputs = [handle(s) for s in built.output_slots]
    from torchtpu.execution import launch

    launch.execute(drv, built.exe, buffers, outputs, max(region.device, 0))


def _fail(region: _Region, stage: _Stage, exc: BaseException, raised_at_call: bool) -> None:
    """Leaves a defined state after `region` failed at `stage`, then raises: the error of the op that failed
    (a RuntimeError naming it and the user's line), or the interrupt itself."""
    global _region
    interrupted = not isinstance(exc, Exception)
    if interrupted and stage.name != "execute" and not _region.events:
        _region = region  # nothing was written: the region stays pending, and the next flush runs it
        _kept[0] = True
        raise exc
    bad = _failing_event(stage, exc, len(region.events))
    message = _describe(region, stage, exc, bad)
    written = _live(region)
    if not (raised_at_call and len(region.events) == 1 and not interrupted):
        # Poison first, then clear what the events before the failing one commit: an interrupt in between
        # leaves more poisoned, never a storage that holds a wrong value.
        added = set(poison.mark((region.slots[s].holder for s in written),
                                f"the DEFER_AND_FUSE region that was to write it failed: {message}"))
        if bad and not interrupted:
            try:
                done = _commit_prefix(region, bad)
            except Exception:  # noqa: BLE001 - the ops before it failed too: everything stays poisoned
                done = []
            covered = _covered(region.slots, region.events[:bad])
            poison.discard(k for s in done for k in [region.slots[s].key] if k in added or s in covered)
    if interrupted:
        raise exc
    if isinstance(exc, ExecutionError):  # a check on the device: the class CPU raises (IndexError, ...)
        raise ExecutionError.restated(exc, message) from exc.cause
    cause = exc.cause if isinstance(exc, BuildError) else exc
    raise RuntimeError(message) from cause


def _failing_event(stage: _Stage, exc: BaseException, n_events: int) -> int | None:
    """The index of the event whose op failed, when the error names one."""
    if isinstance(exc, BuildError):
        return exc.event_index
    if isinstance(exc, ExecutionError) and stage.built is not None and len(stage.built.op_starts) == n_events:
        return max(bisect.bisect_right(stage.built.op_starts, exc.op_index) - 1, 0)  # the last event started
    return None


def _describe(region: _Region, stage: _Stage, exc: BaseException, bad: int | None) -> str:
    if bad is not None:
        op, line = region.events[bad].origin
        when = "ran" if isinstance(exc, ExecutionError) else "was built"
        cause = exc.cause if isinstance(exc, ExecutionError | BuildError) else exc
        return f"{cause} (in {op} issued at {line}; raised when the deferred region {when})"
    first, last = region.events[0].origin, region.events[-1].origin
    span = f"the deferred region of {len(region.events)} ops issued from {first[1]} ({first[0]}) to {last[1]}"
    if not isinstance(exc, Exception):
        return f"{type(exc).__name__} while {span} ran: its writes may be partial"
    return f"{type(exc).__name__}: {exc} (raised at the {stage.name} stage of {span})"


def _commit_prefix(region: _Region, count: int) -> list[int]:
    """Runs the region's first `count` events (those before the failing op); the slots it wrote: only those that
    no later event writes (a later write failed, or never ran)."""
    events = region.events[:count]
    later = {v[0] for e in region.events[count:] for v in e.outputs}
    mine = {v[0] for e in events for v in e.outputs}
    live = sorted(s for s in mine - later if region.slots[s].referenced_elsewhere())
    built, drv = build(region.slots, events, live), runtime.driver()
    built.exe = drv.compile(built.program)
    _execute(drv, built, region, events)
    return live


def _count(program: Program, miss: bool) -> str | None:
    """Counts a flush; returns the recompilation warning to give once the region has run, if any."""
    stats.flushes += 1
    last, stats.last_program = stats.last_program, program  # input shapes are read only for the warning
    if not miss:
        stats.hits += 1
        stats.consecutive_misses = 0
    else:
        stats.misses += 1
        stats.consecutive_misses += 1
        fusing = modes.get_eager_mode() is modes.EagerMode.DEFER_AND_FUSE  # else one op per region (pjrt)
        if fusing and stats.consecutive_misses >= 8 and stats.flushes > 8 and not stats.warned:
            stats.warned = True
            before = () if last is None else tuple((v.shape, v.dtype) for v in last.inputs)
            shapes = tuple((v.shape, v.dtype) for v in program.inputs)
            changed = [f"{a} -> {b}" for a, b in zip(before, shapes) if a != b][:3]
            reason = ("input shapes changed: " + "; ".join(str(c) for c in changed)) if changed else \
                "the op graph changed between regions"
            return (f"DEFER_AND_FUSE keeps recompiling: the last {stats.consecutive_misses} regions all compiled "
                    f"a new program ({reason}). Keep shapes static (pad to buckets) to get cache hits.")
    return None


def is_materialized(t: torch.Tensor) -> bool:
    """False while `t`'s storage has a pending (not yet computed) value in the current region."""
    if _single:
        with _lock:
            _record_single()
    slot = _region.slot_of.get(_key(t))
    return slot is None or not _region.slots[slot].written


def touches(t: torch.Tensor) -> bool:
    return touches_storage(_key(t))


def touches_storage(key: int | tuple) -> bool:
    """Whether the pending region reads or writes the storage with this key (poison.storage_key: its address)."""
    if _single:
        with _lock:
            _record_single()
    return key in _region.slot_of


def pending_ir() -> str:
    """The pending region as text IR (for debugging)."""
    with _lock:
        _record_single()
        written = [i for i, s in enumerate(_region.slots) if s.written]
        return build(_region.slots, _region.events, written).program.text()


def reset_stats() -> None:
    global stats
    stats = RegionStats()
