"""Profiling windows over the simulated chips: owns `Window` (what ran on each chip's timeline, with the host
time each launch was made at) and the Chrome-trace form of it (one process per simulated chip, host events for
compiles, recompiles, flushes and CPU fallbacks).

`torchtpu.profiler.record()` opens a window on its own; torch.profiler opens one through torch_profiler.py.
Outside a window nothing here runs: the timeline keeps its records as always, and launches are stamped with
the host clock only while a window is open (the timeline's `issue` is wrapped for that window's duration).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from torchtpu.profiler import events
from torchtpu.profiler.costs import executable_info

__all__ = ["Launch", "Window", "record"]

_open: list[Window] = []
_lock = threading.Lock()


class Launch:
    """One executable on one simulated chip, in a window: the timeline record plus what the profiler adds."""

    __slots__ = ("device", "record", "host_ns", "info", "cpu_op", "line")

    def __init__(self, device: int, record: Any, host_ns: int | None, line: str = "") -> None:
        self.device, self.record, self.host_ns, self.line = device, record, host_ns, line
        self.info = executable_info(record)
        self.cpu_op: str | None = None  # the torch.profiler CPU op it was launched from, when known

    @property
    def seconds(self) -> float:
        return self.record.seconds

    def args(self) -> dict[str, Any]:
        r, info = self.record, self.info
        ops = info["aten_ops"]
        return {"executable": r.name, "aten_ops": ops[:64], "aten_op_count": len(ops), "ir_ops": info["ir_ops"],
                "flops": r.flops, "hbm_bytes": r.hbm_bytes, "bound": r.bound,
                "mxu_utilisation": round(info["mxu_utilisation"], 4), "padding_waste": round(info["padding_waste"], 4),
                "mxu_us": info["mxu_seconds"] * 1e6, "vpu_us": info["vpu_seconds"] * 1e6,
                "hbm_us": info["hbm_seconds"] * 1e6, "device_start_s": r.start, "device_end_s": r.end,
                "host_issue_s": r.issued, "launched_by": self.cpu_op or ""}


class Window:
    """Everything launched on every simulated chip between `open()` and `close()`."""

    def __init__(self, stacks: bool = False) -> None:
        self.stacks = stacks  # note each launch's user source line (a stack walk per launch)
        self.launches: list[Launch] = []
        self.host_events: list[events.HostEvent] = []
        self.chip = ""
        self.start_ns = self.end_ns = 0
        self.sim_start: list[float] = []  # per chip: the simulated wall clock when the window opened / closed
        self.sim_end: list[float] = []
        self._timelines: list[Any] = []
        self._starts: list[int] = []
        self._stamps: list[list[int]] = []
        self._lines: list[list[str]] = []
        self.closed = False

    def open(self) -> Window:
        from torchtpu import runtime

        drv = runtime.driver()
        drv.synchronize()
        self.chip = str(drv.stats().get("chip", drv.name)) if hasattr(drv, "stats") else drv.name
        self._timelines = list(getattr(drv, "timelines", []))
        self._starts = [t.launch_count for t in self._timelines]
        self.sim_start = [t.wall_seconds for t in self._timelines]
        self._stamps = [[] for _ in self._timelines]
        self._lines = [[] for _ in self._timelines]
        with _lock:
            _open.append(self)
            for timeline in self._timelines:
                _wrap_issue(timeline)
        events.start()
        self.start_ns = time.perf_counter_ns()
        return self

    def close(self) -> Window:
        if self.closed:
            return self
        from torchtpu import runtime

        runtime.driver().synchronize()
        self.end_ns = time.perf_counter_ns()
        self.sim_end = [t.wall_seconds for t in self._timelines]
        with _lock:
            _open.remove(self)
            for timeline in self._timelines:
                _wrap_issue(timeline)
        self.host_events = events.stop()
        for device, (timeline, start) in enumerate(zip(self._timelines, self._starts)):
            records = timeline.records_since(start)
            stamps, lines = _align(self._stamps[device], len(records)), _align(self._lines[device], len(records))
            self.launches += [Launch(device, r, s, line or "") for r, s, line in zip(records, stamps, lines)]
        self.closed = True
        return self

    def device_seconds(self, device: int | None = None) -> float:
        return sum(la.seconds for la in self.launches if device is None or la.device == device)

    # ------------------------------------------------------------------ Chrome trace
    def chrome_events(self, host_us: Any = None, pid_base: int = 1_000_000) -> list[dict[str, Any]]:
        """Trace events: a process per simulated chip (track "device (simulated clock)" with one complete event
        per launch, and "host launches" with an instant per launch) and a "torchtpu host" process (compiles,
        recompiles, flushes, fallbacks). `host_us(ns)` maps perf_counter_ns to the trace's microseconds (default:
        microseconds since the window opened); the device track starts at the window's start on the chip's clock."""
        if host_us is None:
            start = self.start_ns

            def host_us(ns: int) -> float:
                return (ns - start) / 1e3

        origin = host_us(self.start_ns)
        out: list[dict[str, Any]] = []
        for device in range(len(self._timelines)):
            pid = pid_base + device
            out += [{"ph": "M", "pid": pid, "name": "process_name",
                     "args": {"name": f"tpu:{device} {self.chip} (simulated)"}},
                    {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}},
                    {"ph": "M", "pid": pid, "tid": 0, "name": "thread_name",
                     "args": {"name": "device (simulated clock)"}},
                    {"ph": "M", "pid": pid, "tid": 1, "name": "thread_name", "args": {"name": "host launches"}}]
        for la in self.launches:
            pid, r = pid_base + la.device, la.record
            sim0 = self.sim_start[la.device]
            out.append({"ph": "X", "pid": pid, "tid": 0, "name": r.name, "cat": f"device,{r.bound}",
                        "ts": origin + (r.start - sim0) * 1e6, "dur": r.seconds * 1e6, "args": la.args()})
            if la.host_ns is not None:
                out.append({"ph": "i", "pid": pid, "tid": 1, "s": "t", "name": f"launch {r.name}",
                            "cat": "launch", "ts": host_us(la.host_ns)})
        host_pid = pid_base - 1
        out += [{"ph": "M", "pid": host_pid, "name": "process_name", "args": {"name": "torchtpu host"}},
                {"ph": "M", "pid": host_pid, "tid": 0, "name": "thread_name",
                 "args": {"name": "compiles, flushes, recompiles, fallbacks"}}]
        for ev in self.host_events:
            args = {"reason": ev.reason, "where": ev.where, **ev.args}
            if ev.end_ns > ev.start_ns:
                out.append({"ph": "X", "pid": host_pid, "tid": 0, "name": ev.name, "cat": ev.kind,
                            "ts": host_us(ev.start_ns), "dur": (ev.end_ns - ev.start_ns) / 1e3, "args": args})
            else:
                out.append({"ph": "i", "pid": host_pid, "tid": 0, "s": "p", "name": ev.name, "cat": ev.kind,
                            "ts": host_us(ev.start_ns), "args": args})
        return out

    def chrome_trace(self) -> dict[str, Any]:
        """A stand-alone Chrome/Perfetto trace of the window (times in microseconds)."""
        return {"traceEvents": self.chrome_events(), "displayTimeUnit": "ms",
                "otherData": {"producer": "torchtpu.profiler", "chip": self.chip,
                              "device_seconds": self.device_seconds()}}

    def export_chrome_trace(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.chrome_trace(), f)


def _align(values: list, n: int) -> list:
    """The last `n` of `values`, padded with None in front (the timeline may have dropped old records)."""
    return values[len(values) - n:] if len(values) >= n else [None] * (n - len(values)) + values


def _wrap_issue(timeline: Any) -> None:
    """(Re)installs, or removes, the per-launch stamping of `timeline` for the windows open on it: an instance
    attribute over the class's `issue`, present only while a window is open."""
    targets = [(w._stamps[i], w._lines[i] if w.stacks else None)
               for w in _open for i, t in enumerate(w._timelines) if t is timeline]
    if not targets:
        timeline.__dict__.pop("issue", None)
        return
    original = type(timeline).issue.__get__(timeline)
    clock = time.perf_counter_ns
    want_lines = any(lines is not None for _, lines in targets)

    def issue(host_seconds: float, charge: tuple) -> None:
        now = clock()  # before the timeline's bookkeeping: the stamp lies well inside the launching op
        original(host_seconds, charge)
        line = events.user_line() if want_lines else ""
        for stamps, lines in targets:
            stamps.append(now)
            if lines is not None:
                lines.append(line)

    timeline.issue = issue


@contextmanager
def record(stacks: bool = False) -> Iterator[Window]:
    """`with torchtpu.profiler.record() as w:` ... then `w.launches`, `w.host_events`, `w.export_chrome_trace()`;
    `stacks=True` also notes each launch's user source line (`Launch.line`)."""
    window = Window(stacks).open()
    try:
        yield window
    finally:
        window.close()
