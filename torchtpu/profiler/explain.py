"""`torchtpu.explain(fn, *inputs)` and `torchtpu explain script.py`: one report of what a run did on the
simulated chip. Owns `Explanation` and the capture of Dynamo's graph-break and recompile logs.

The report lists the compiled graphs (their ATen ops and source lines), graph breaks and recompiles with
Dynamo's reasons and the user's lines, deferred regions with what flushed them, CPU fallbacks, and whether the
simulated run was host-bound (launch overhead and Python between launches) or device-bound.
"""

from __future__ import annotations

import logging
import re
import runpy
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from torchtpu.profiler.trace import Window

__all__ = ["Explanation", "explain", "explain_script"]

_BREAK_AT = re.compile(r"user code at (\S+?:\d+)")
_STACK_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_RECOMPILE = re.compile(r"Recompiling function (\S+) in (\S+?:\d+)")


@dataclass
class Explanation:
    """What happened, from one recorded run."""

    window: Window
    graph_breaks: list[dict[str, str]] = field(default_factory=list)
    recompiles: list[dict[str, str]] = field(default_factory=list)
    graphs: list[dict[str, Any]] = field(default_factory=list)
    regions: list[dict[str, Any]] = field(default_factory=list)
    fallbacks: list[dict[str, str]] = field(default_factory=list)
    time: dict[str, Any] = field(default_factory=dict)
    result: Any = None

    def __str__(self) -> str:
        t = self.time
        lines = [f"torchtpu explain: {t['launches']} launches on {self.window.chip} (simulated)",
                 f"  time: simulated wall {t['wall_s'] * 1e3:.3f} ms, device busy {t['device_s'] * 1e3:.3f} ms "
                 f"({t['device_busy']:.0%}) -> {t['verdict']}; real host time {t['real_host_s'] * 1e3:.1f} ms",
                 "  by bound: " + ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in t["by_bound"].items())]
        lines.append(f"compiled graphs: {len(self.graphs)}")
        for g in self.graphs:
            lines.append(f"  {g['executable']}: {g['aten_ops']} ATen ops, launched {g['launches']}x, "
                         f"{g['device_s'] * 1e3:.3f} ms device; from {g['where'] or '?'}")
        lines.append(f"graph breaks: {len(self.graph_breaks)}")
        for b in self.graph_breaks:
            lines.append(f"  at {b['where']}: {b['reason']}")
        lines.append(f"recompiles: {len(self.recompiles)}")
        for r in self.recompiles:
            lines.append(f"  {r['function']} ({r['where']}), called at {r.get('call_site') or '?'}: {r['reason']}")
        lines.append(f"deferred regions flushed: {len(self.regions)}")
        for r in self.regions[:20]:
            lines.append(f"  {r['ops']} ops, flushed at {r['where'] or '?'}: {r['reason']}")
        lines.append(f"CPU fallbacks: {len(self.fallbacks)}")
        for f in self.fallbacks:
            lines.append(f"  {f['op']} at {f['where'] or '?'}")
        return "\n".join(lines)


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append((record.name, record.getMessage()))


@contextmanager
def _dynamo_logs() -> Iterator[_Capture]:
    """Dynamo's graph_breaks and recompiles artifacts, captured (not printed) for the duration."""
    import torch

    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    capture = _Capture()
    loggers = [logging.getLogger(name) for name in list(logging.Logger.manager.loggerDict)
               if name.startswith("torch") and name.endswith(("__graph_breaks", "__recompiles"))]
    saved = [(lg, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(capture)
        lg.propagate = False
    try:
        yield capture
    finally:
        for lg, propagate in saved:
            lg.removeHandler(capture)
            lg.propagate = propagate
        torch._logging.set_logs()


def _graph_breaks(capture: _Capture) -> list[dict[str, str]]:
    out, seen = [], set()
    for name, message in capture.messages:
        if not name.endswith("__graph_breaks") or "Graph Break Reason" not in message and "graph break" not in \
                message.lower():
            continue
        where = ""
        m = _BREAK_AT.search(message)
        if m:
            where = m.group(1)
        stack = _STACK_LINE.findall(message)
        if stack:
            where = f"{stack[-1][0]}:{stack[-1][1]}"
        reason = ""
        for line in message.splitlines():
            line = line.strip()
            if line.startswith("Explanation:"):
                reason = line.removeprefix("Explanation:").strip()
                break
            if line.startswith("Graph Break Reason:") and not reason:
                reason = line.removeprefix("Graph Break Reason:").strip()
        if (where, reason) in seen:
            continue
        seen.add((where, reason))
        out.append({"where": where, "reason": reason or message.splitlines()[0]})
    return out


def _summarise(window: Window, capture: _Capture, real_host_s: float) -> Explanation:
    ex = Explanation(window=window, graph_breaks=_graph_breaks(capture))
    for ev in window.host_events:
        if ev.kind == "recompile":
            ex.recompiles.append({"function": ev.args.get("function", ""), "where": ev.where, "reason": ev.reason,
                                  "call_site": ev.args.get("call_site", "")})
        elif ev.kind == "flush":
            ex.regions.append({"ops": ev.args.get("ops", 0), "reason": ev.reason, "where": ev.where})
        elif ev.kind == "fallback":
            ex.fallbacks.append({"op": ev.name.removeprefix("CPU fallback "), "where": ev.where})
    graphs: dict[int, dict[str, Any]] = {}
    by_bound: dict[str, float] = {}
    for la in window.launches:
        by_bound[la.record.bound] = by_bound.get(la.record.bound, 0.0) + la.seconds
        if la.record.name != "compiled_graph":
            continue
        g = graphs.setdefault(id(la.record.source), {
            "executable": la.record.name, "aten_ops": len(la.info["aten_ops"]), "launches": 0, "device_s": 0.0,
            "where": next((line for _, line in la.info["sources"] if line), "")})
        g["launches"] += 1
        g["device_s"] += la.seconds
    ex.graphs = list(graphs.values())
    wall = sum(window.sim_end[i] - window.sim_start[i] for i in range(len(window.sim_start)))
    device = window.device_seconds()
    busy = device / wall if wall > 0 else 0.0
    verdict = "device-bound" if busy >= 0.5 else "host-bound (the chip waits for launches: compile or DEFER_AND_FUSE)"
    ex.time = {"launches": len(window.launches), "wall_s": wall, "device_s": device, "device_busy": busy,
               "verdict": verdict, "by_bound": dict(sorted(by_bound.items(), key=lambda kv: -kv[1])),
               "real_host_s": real_host_s}
    return ex


def explain(fn: Callable[..., Any], *example_inputs: Any, compile: bool = False, calls: int = 1,
            inputs: Sequence[Sequence[Any]] | None = None) -> Explanation:
    """Runs `fn(*example_inputs)` (`calls` times, or once per argument tuple in `inputs`) in a recording window
    and explains it; `compile=True` wraps a plain `fn` in `torch.compile(backend="tpu")` first. `.result`
    holds the last call's return value; `print(explanation)` gives the report."""
    import torch

    if calls < 1:
        raise ValueError(f"explain(calls={calls}): calls must be >= 1")
    if compile:
        fn = torch.compile(fn, backend="tpu")
    arg_sets = [tuple(a) for a in inputs] if inputs is not None else [example_inputs] * calls
    with _dynamo_logs() as capture:
        window = Window().open()
        t0 = time.perf_counter()
        result = None
        try:
            for args in arg_sets:
                result = fn(*args)
        finally:
            window.close()
        real = time.perf_counter() - t0
    ex = _summarise(window, capture, real)
    ex.result = result
    return ex


def explain_script(path: str, argv: Sequence[str] = ()) -> Explanation:
    """`torchtpu explain script.py args...`: runs the script as __main__ in a recording window."""
    saved = sys.argv
    sys.argv = [path, *argv]
    try:
        with _dynamo_logs() as capture:
            window = Window().open()
            t0 = time.perf_counter()
            try:
                runpy.run_path(path, run_name="__main__")
            finally:
                window.close()
            real = time.perf_counter() - t0
    finally:
        sys.argv = saved
    return _summarise(window, capture, real)
