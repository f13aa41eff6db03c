"""torch.profiler on "tpu": owns the adapter that puts the simulated chips into `torch.profiler.profile`.

torch 2.13 takes PrivateUse1 device activity only from a C++ `libkineto::IActivityProfiler` registered with
`REGISTER_PRIVATEUSE1_PROFILER` (torch/csrc/profiler/standalone/privateuse1_profiler.h); it has no Python
entry point for device events. Until torchtpu ships such a plugin, `install()` wraps four methods of
`torch.autograd.profiler.profile` (the object `torch.profiler.profile` drives), active only when the profile
asked for `ProfilerActivity.PrivateUse1` (use_device == "tpu"):
* `_start_trace` / `__exit__` open and close a `trace.Window` inside kineto's window;
* `_parse_kineto_results` adds each launch's simulated device time to the CPU op that launched it (the
  innermost op whose host interval contains the launch; `FunctionEvent.append_kernel`, as kineto does for a
  device kernel) and one PrivateUse1 `FunctionEvent` per launch, so `key_averages()` tables show device time;
* `export_chrome_trace` writes kineto's trace, then adds the window's chip and host tracks to the JSON.
"""

from __future__ import annotations

import bisect
import functools
import json
import time
from typing import Any

from torchtpu.profiler.trace import Window

_installed = False


def _ours(prof: Any) -> bool:
    import torch

    return getattr(prof, "use_device", None) == torch._C._get_privateuse1_backend_name() and prof.enabled


def install() -> None:
    """Wraps torch.autograd.profiler.profile's start, exit, parse and export (idempotent)."""
    global _installed
    if _installed:
        return
    from torch.autograd import profiler as autograd_profiler

    cls = autograd_profiler.profile
    start, exit_, parse, export = cls._start_trace, cls.__exit__, cls._parse_kineto_results, cls.export_chrome_trace

    @functools.wraps(start)
    def _start_trace(self: Any) -> Any:
        result = start(self)
        if _ours(self):
            self._tpu_window = Window().open()
            self._tpu_clock = _clock_pair()
        return result

    @functools.wraps(exit_)
    def __exit__(self: Any, *exc: Any) -> Any:
        window = getattr(self, "_tpu_window", None)
        if window is not None and not window.closed:
            window.close()
        return exit_(self, *exc)

    @functools.wraps(parse)
    def _parse_kineto_results(self: Any, result: Any, *args: Any, **kwargs: Any) -> Any:
        function_events = parse(self, result, *args, **kwargs)
        window = getattr(self, "_tpu_window", None)
        if window is not None and window.closed:
            _merge_events(self, window, function_events, result.trace_start_ns())
        return function_events

    @functools.wraps(export)
    def export_chrome_trace(self: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        out = export(self, path, *args, **kwargs)
        window = getattr(self, "_tpu_window", None)
        if window is not None and window.closed and self.kineto_results is not None:
            self._ensure_function_events()  # links each launch to its CPU op ("launched_by")
        if window is not None and window.closed and path.endswith(".json"):
            _merge_trace(self, window, path)
        return out

    cls._start_trace, cls.__exit__ = _start_trace, __exit__
    cls._parse_kineto_results, cls.export_chrome_trace = _parse_kineto_results, export_chrome_trace
    _installed = True


# A launch is stamped a microsecond or two before its op returns (measured: 0.6-1.7 us on the mm, mul and foreach
# launches of a training step), the same order as the error of mapping our clock onto kineto's; a launch that no
# op contains is given to the op whose end, widened by this much, holds it. Launches lie 7 us or more after their
# op's start, so the widening cannot reach into the next op.
_END_SLACK_US = 2.0


def _clock_pair(tries: int = 32) -> tuple[int, int]:
    """(perf_counter_ns, time_ns) read at one moment: the read of time_ns bracketed most tightly by two reads of
    perf_counter_ns. One unbracketed pair is off by however long the thread was descheduled between the reads,
    which on a loaded machine moved launches out of the CPU op that made them."""
    best = (1 << 62, 0, 0)
    for _ in range(tries):
        before = time.perf_counter_ns()
        epoch = time.time_ns()
        after = time.perf_counter_ns()
        if after - before < best[0]:
            best = (after - before, (before + after) // 2, epoch)
    return best[1], best[2]


def _to_epoch_ns(prof: Any, perf_ns: int) -> int:
    perf0, epoch0 = prof._tpu_clock
    return perf_ns - perf0 + epoch0


def _merge_events(prof: Any, window: Window, function_events: list, trace_start_ns: int) -> None:
    """Device time onto the launching CPU ops, plus one PrivateUse1 event per launch."""
    from torch.autograd import DeviceType
    from torch.autograd.profiler_util import FunctionEvent

    cpu = sorted((fe for fe in function_events if fe.device_type == DeviceType.CPU and not fe.is_async),
                 key=lambda fe: fe.time_range.start)
    starts = [fe.time_range.start for fe in cpu]
    next_id = max((fe.id for fe in function_events), default=0) + 1
    for la in window.launches:
        if la.host_ns is None:
            continue
        t_us = (_to_epoch_ns(prof, la.host_ns) - trace_start_ns) / 1e3
        owner = _launching_op(cpu, starts, t_us, 0.0) or _launching_op(cpu, starts, t_us, _END_SLACK_US)
        dur = la.seconds * 1e6
        name = la.record.name
        if owner is not None:
            owner.append_kernel(name, la.device, dur)
            la.cpu_op = owner.name
        device_event = FunctionEvent(id=next_id, name=name, thread=0, start_us=t_us, end_us=t_us + dur,
                                     use_device=prof.use_device, device_type=DeviceType.PrivateUse1,
                                     device_index=la.device, flops=int(la.record.flops), trace_name=name,
                                     input_shapes=[], stack=[])
        next_id += 1
        function_events.append(device_event)


def _launching_op(cpu: list, starts: list[float], t_us: float, end_slack_us: float) -> Any:
    """The innermost (shortest) CPU op whose interval, its end widened by `end_slack_us`, holds `t_us`."""
    owner = None
    i = bisect.bisect_right(starts, t_us) - 1
    scanned = 0
    while i >= 0 and scanned < 256:
        fe = cpu[i]
        shorter = owner is None or fe.time_range.elapsed_us() < owner.time_range.elapsed_us()
        if fe.time_range.end + end_slack_us >= t_us and shorter:
            owner = fe
        i, scanned = i - 1, scanned + 1
    return owner


def _merge_trace(prof: Any, window: Window, path: str) -> None:
    with open(path) as f:
        trace = json.load(f)
    events = trace.setdefault("traceEvents", [])
    base_ns = int(trace.get("baseTimeNanoseconds", 0) or 0)

    def host_us(perf_ns: int) -> float:
        return (_to_epoch_ns(prof, perf_ns) - base_ns) / 1e3

    events += window.chrome_events(host_us=host_us)
    trace.setdefault("torchtpu", {"chip": window.chip, "device_seconds": window.device_seconds(),
                                  "launches": len(window.launches)})
    with open(path, "w") as f:
        json.dump(trace, f)
