"""Streams on one simulated chip: owns `StreamTimeline`, a `Timeline` with a clock per stream and one per engine.

Until `enable_streams` is called a StreamTimeline is exactly a Timeline (one in-order device queue, the same
numbers, the same per-launch cost). Afterwards each launch runs on the stream current on the issuing thread
(`current()`, supplied by the torch layer) and on an engine:

* a stream is an in-order queue: its work starts no earlier than the end of its previous work (its clock);
* an engine is a unit of the chip that runs one thing at a time: the TensorCore ("compute": every executable),
  the ICI links ("ici": collectives) and the host<->device DMA ("copy"). Work on different engines overlaps;
  two streams' compute serialises in simulated time. Engines are in order (work is placed when the host
  issues it; a later launch never fills an earlier gap);
* start = max(host clock, stream clock, engine free time); end = start + seconds; the stream's and the engine's
  clocks move to the end. `wait(stream, t)` (an event wait) moves a stream's clock to t.

A host<->device copy (`transfer`) is not a launch: it takes its PCIe seconds on the copy engine and the current
stream (on the one device queue before streams are enabled), leaves no record and no launch count (`copies`
counts them), and a blocking one moves the host clock to its end.

The device's free time (`wall_seconds`, `synchronize`) is the latest end of anything, so a device-wide
synchronize waits for every stream. Events are times on these clocks (the torch layer keeps them). Nothing
here looks at values: the simulator computes eagerly, streams only shape simulated time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torchtpu.sim.chips import ChipSpec
from torchtpu.sim.cost import CostRecord
from torchtpu.sim.timeline import Timeline

__all__ = ["COMPUTE", "COPY", "DEFAULT_STREAM", "ENGINES", "ICI", "StreamTimeline"]

COMPUTE, ICI, COPY = "compute", "ici", "copy"
ENGINES = (COMPUTE, ICI, COPY)
DEFAULT_STREAM = 0


class StreamTimeline(Timeline):
    """A chip's host and device clocks with streams and engines (module docstring)."""

    def __init__(self, chip: ChipSpec | str | None = None) -> None:
        self.current: Callable[[], int] | None = None
        super().__init__(chip)

    def reset(self) -> None:
        """Clocks (streams and engines too) back to 0, records cleared; streams stay enabled."""
        super().reset()
        self._streams: dict[int, float] = {}
        self._engines: dict[str, float] = dict.fromkeys(ENGINES, 0.0)
        self.copies = {"count": 0, "seconds": 0.0, "bytes": 0.0}  # host<->device transfers since the reset

    @property
    def streams_enabled(self) -> bool:
        return self.current is not None

    def enable_streams(self, current: Callable[[], int]) -> None:
        """From now on launches run on `current()`'s stream (idempotent). Work so far was on the default stream."""
        if self.current is not None:
            return
        free = self._device_free
        self._streams = {DEFAULT_STREAM: free}
        self._engines = dict.fromkeys(ENGINES, free)
        self.current = current
        self.issue = self._issue_on_stream  # shadows Timeline.issue: the one-queue path keeps its speed until now

    # -- clocks --
    def stream_clock(self, stream: int) -> float:
        """When the work issued so far on `stream` ends (0.0 for a stream that never ran anything)."""
        return self._streams.get(stream, 0.0)

    def stream_time(self, stream: int) -> float:
        """When an event recorded now on `stream` completes: max(host clock, stream clock)."""
        clock = self._streams.get(stream, 0.0)
        return clock if clock > self._host else self._host

    def engine_free(self, engine: str) -> float:
        return self._engines[engine]

    def ready(self, stream: int, engine: str) -> float:
        """When work issued now on `stream` and `engine` would start."""
        return max(self._host, self._streams.get(stream, 0.0), self._engines[engine])

    def wait(self, stream: int, t: float) -> None:
        """`stream`'s later work starts no earlier than `t` (an event wait)."""
        if t > self._streams.get(stream, 0.0):
            self._streams[stream] = t

    def host_until(self, t: float) -> float:
        """The host waits until `t` (an event or stream synchronize); returns the host clock."""
        if t > self._host:
            self._host = t
        return self._host

    # -- launches --
    def _issue_on_stream(self, host_seconds: float, charge: tuple) -> None:
        self._host += host_seconds
        self.run(self.current(), COMPUTE, charge)

    def run(self, stream: int, engine: str, charge: tuple, start: float | None = None) -> float:
        """Run `charge` (made by `Timeline.charge`) on `stream` and `engine` from `ready(stream, engine)` or from
        `start` when given (a collective's start agreed by every rank, not earlier than `ready`); returns its end."""
        if engine not in self._engines:
            raise ValueError(f"unknown engine {engine!r}; valid: {', '.join(ENGINES)}")
        ready = self.ready(stream, engine)
        begin = ready if start is None or start < ready else start
        end = begin + charge[2]
        self._streams[stream] = end
        self._engines[engine] = end
        if end > self._device_free:
            self._device_free = end
        self._account(charge, begin, end)
        return end

    def run_record(self, stream: int, engine: str, record: CostRecord, name: str = "",
                   start: float | None = None, source: Any = None) -> float:
        """`run` for a CostRecord (collectives, copies)."""
        return self.run(stream, engine, Timeline.charge(record, name, source), start)

    def transfer(self, seconds: float, nbytes: float, blocking: bool) -> float:
        """A host<->device copy taking `seconds` (module docstring); returns its end."""
        if self.current is None:
            start = self._device_free if self._device_free > self._host else self._host
            end = self._device_free = start + seconds
        else:
            stream = self.current()
            end = self.ready(stream, COPY) + seconds
            self._streams[stream] = end
            self._engines[COPY] = end
            if end > self._device_free:
                self._device_free = end
        self.copies["count"] += 1
        self.copies["seconds"] += seconds
        self.copies["bytes"] += nbytes
        if blocking:
            self.host_until(end)
        return end
