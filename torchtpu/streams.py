"""torch.tpu streams and events: `Stream`, `Event`, `stream()`, `current_stream()`, and the simulated times behind
them (and behind the generic `torch.Stream(device="tpu")`, `torch.Event`, `torch.accelerator` APIs).

Stream ids and the current stream (per thread and device, as CUDA's) live in the C++ device guard
(csrc/tpu_shim.cpp); every operation that needs a clock (record, wait, query, synchronize, elapsed_time, a
stream switch) calls `_on_native` here, which works on the device's `StreamTimeline` (drivers/sim/streams.py):
a clock per stream, one compute engine (two streams' compute serialises), ICI and copy engines that overlap it.
An event is the time its stream reaches it, max(host clock, stream clock) when recorded; waiting on it moves the
waiting stream's clock there; `elapsed_time` is the difference in simulated milliseconds.

Values never depend on streams: the simulator computes every op when it is issued (in host order), so results
are exactly those of a program without streams; streams only shape simulated time. Pending deferred work
(DEFER_AND_FUSE) is flushed before a stream switch or an event operation, so it is charged on the stream it
was issued on. Drivers without a simulated clock (pjrt) run in issue order: events complete when recorded and
their times are host `perf_counter` readings.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from torchtpu import runtime
from torchtpu._native import native

__all__ = ["Event", "Stream", "charge_copy", "current_stream", "default_stream", "set_stream", "stream", "timeline"]

_lock = threading.Lock()
_events: dict[int, tuple[int, float]] = {}  # event id (from the shim) -> (device, simulated seconds)
_comm: dict[int, int] = {}  # device -> the stream id tpu_dist's collectives run on


def _check_device(d: Any) -> int:
    from torchtpu.device_module import _index

    return _index(d)


def timeline(device: int) -> Any | None:
    """tpu:`device`'s StreamTimeline with streams enabled, or None for a driver without a simulated clock."""
    timelines = getattr(runtime.driver(), "timelines", None)
    if timelines is None:
        return None
    tl = timelines[device]
    if not hasattr(tl, "enable_streams"):
        raise RuntimeError(f"tpu:{device}'s timeline ({type(tl).__name__}) has no streams; the sim driver must "
                           "give each chip a drivers/sim/streams.py StreamTimeline")
    if not tl.streams_enabled:
        tl.enable_streams(functools.partial(native().current_stream, device))
    return tl


def charge_copy(device: int, nbytes: int, blocking: bool) -> None:
    """Charges a host<->device copy of `nbytes` to tpu:`device`: `nbytes / ChipSpec.pcie_bw` (the chip table's
    PCIe bandwidth each way, [SB-tpus]) on the current stream's copy engine (`StreamTimeline.transfer`); a
    blocking copy moves the host clock to its end. Nothing for a driver without a simulated clock (pjrt)."""
    timelines = getattr(runtime.driver(), "timelines", None)
    if timelines is None:
        return
    tl = timelines[device]
    tl.transfer(nbytes / tl.chip.pcie_bw, float(nbytes), blocking)


def _flush() -> None:
    from torchtpu.execution import deferred

    deferred.flush()


def _event(event: int) -> tuple[int, float] | None:
    with _lock:
        return _events.get(event)


def _record(event: int, device: int, stream_id: int, timing: int) -> None:
    _flush()
    tl = timeline(device)
    t = tl.stream_time(stream_id) if tl is not None else time.perf_counter()
    with _lock:
        _events[event] = (device, t)


def _block(event: int, device: int, stream_id: int) -> None:
    ev = _event(event)
    if ev is None:
        return
    _flush()
    tl = timeline(device)
    if tl is not None:
        tl.wait(stream_id, ev[1])  # clocks of all chips count simulated seconds since the last reset


def _query(event: int) -> bool:
    ev = _event(event)
    if ev is None:
        return True
    _flush()
    tl = timeline(ev[0])
    return tl is None or ev[1] <= tl.host_seconds


def _sync_event(event: int) -> None:
    ev = _event(event)
    if ev is None:
        return
    _flush()
    tl = timeline(ev[0])
    if tl is not None:
        tl.host_until(ev[1])


def _elapsed(start: int, end: int, device: int) -> float:
    a, b = _event(start), _event(end)
    if a is None or b is None:
        raise ValueError("both tpu events must be recorded before elapsed_time")
    if a[0] != b[0]:
        raise ValueError(f"elapsed_time between an event of tpu:{a[0]} and one of tpu:{b[0]}: both events must "
                         "belong to one device (each simulated chip has its own clock)")
    return (b[1] - a[1]) * 1e3


def _query_stream(device: int, stream_id: int) -> bool:
    _flush()
    tl = timeline(device)
    return tl is None or tl.stream_clock(stream_id) <= tl.host_seconds


def _sync_stream(device: int, stream_id: int) -> None:
    _flush()
    tl = timeline(device)
    if tl is not None:
        tl.host_until(tl.stream_clock(stream_id))


def _sync_device(device: int) -> None:
    _flush()
    runtime.driver().synchronize(device)


def _switch(device: int, old: int, new: int) -> None:
    _flush()  # what was issued on `old` is charged there
    timeline(device)


def _destroy(event: int, device: int) -> None:
    with _lock:
        _events.pop(event, None)


_HANDLERS = {"record": _record, "block": _block, "query": _query, "sync_event": _sync_event,
             "elapsed": _elapsed, "query_stream": _query_stream, "sync_stream": _sync_stream,
             "sync_device": _sync_device, "switch": _switch, "destroy": _destroy}


def _on_native(kind: str, *args: int) -> Any:
    """The shim's device guard calls this for every stream or event operation (csrc/tpu_shim.cpp)."""
    return _HANDLERS[kind](*args)


native().set_stream_callback(_on_native)


class Stream(torch.Stream):
    """A tpu stream: an in-order queue on one device's simulated timeline (module docstring).

    `priority`: lower is higher, clamped to -8..7 and kept (`.priority`); it does not reorder the simulated
    schedule, where work is placed when the host issues it."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Stream:
        if "stream_id" in kwargs:
            return super().__new__(cls, **kwargs)
        index = _check_device(device)
        return super().__new__(cls, device=torch.device("tpu", index), priority=int(priority))

    @property
    def priority(self) -> int:
        return int(native().stream_priority(self.stream_id))

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        """Records `event` (a new torch.tpu.Event when None) on this stream and returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __repr__(self) -> str:
        return f"torch.tpu.Stream(device=tpu:{self.device_index} stream_id={self.stream_id} priority={self.priority})"


class Event(torch.Event):
    """A tpu event: a point on a stream's simulated clock; `elapsed_time` in simulated milliseconds."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> Event:
        if interprocess:
            raise NotImplementedError("tpu events cannot be shared between processes (interprocess=True); each "
                                      "process has its own simulated clock")
        event = super().__new__(cls, device="tpu", enable_timing=enable_timing, blocking=blocking)
        event._timing = bool(enable_timing)
        return event

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Simulated milliseconds from this event to `end_event` (both recorded with enable_timing=True, and
        complete: synchronize the end event first, as with CUDA)."""
        if not isinstance(end_event, Event):  # the generic event: torch's own checks, then the device guard
            return super().elapsed_time(end_event)
        if not (self._timing and getattr(end_event, "_timing", False)):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if _event(self.event_id) is None or _event(end_event.event_id) is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        if not (self.query() and end_event.query()):
            raise RuntimeError("Both events must be completed before calculating elapsed time (synchronize the "
                               "end event first).")
        return _elapsed(self.event_id, end_event.event_id, -1)

    def __repr__(self) -> str:
        return f"torch.tpu.Event(device={self.device}, event_id={self.event_id})"


def _as_tpu_stream(s: torch.Stream) -> Stream:
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


def current_stream(device: Any = None) -> Stream:
    """The current stream of tpu:`device` (default: the current device) on this thread."""
    return _as_tpu_stream(torch.accelerator.current_stream(_check_device(device)))


def default_stream(device: Any = None) -> Stream:
    """tpu:`device`'s default stream (id 0)."""
    index = _check_device(device)
    return Stream(stream_id=0, device_index=index, device_type=torch.accelerator.current_stream(index).device_type)


def set_stream(s: torch.Stream) -> None:
    """Makes `s` the current stream of its device (and its device the current device), as torch.cuda.set_stream."""
    if s is None:
        return
    _check_stream(s)
    torch.accelerator.set_stream(s)


def _check_stream(s: Any) -> None:
    if not isinstance(s, torch.Stream) or s.device.type != "tpu":
        raise ValueError(f"expected a tpu stream (torch.tpu.Stream or torch.Stream(device='tpu')), got {s!r}")


@contextmanager
def stream(s: torch.Stream | None) -> Iterator[None]:
    """Inside the block, `s` is the current stream of its device (and that device the current device)."""
    if s is None:
        yield
        return
    _check_stream(s)
    prev_device = torch.accelerator.current_device_index()
    prev = torch.accelerator.current_stream(s.device_index)
    torch.accelerator.set_stream(s)
    try:
        yield
    finally:
        torch.accelerator.set_stream(prev)
        torch.accelerator.set_device_index(prev_device)


def comm_stream(device: int) -> int:
    """The stream id tpu_dist's collectives on tpu:`device` run on (one per device, made on first use)."""
    with _lock:
        sid = _comm.get(device)
    if sid is None:
        sid = torch.Stream(device=torch.device("tpu", device), priority=-1).stream_id
        with _lock:
            sid = _comm.setdefault(device, sid)
    return sid
