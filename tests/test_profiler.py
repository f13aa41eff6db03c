"""torch.profiler on "tpu": a profiled training step's Chrome trace is valid, its device track sums to the
simulated device time of the same run, every launch names its ATen ops, and flushes, recompiles and CPU
fallbacks appear with their reasons."""

from __future__ import annotations

import json
import numbers
import time

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import torchtpu
from torchtpu.profiler import record

pytestmark = pytest.mark.sim_only

# The Chrome trace event format (Trace Event Format, Google, 2016): the fields each phase needs.
_PHASES = {"X": ("name", "ts", "dur", "pid", "tid"), "i": ("name", "ts", "pid"), "I": ("name", "ts", "pid"),
           "M": ("name", "pid", "args"), "B": ("name", "ts", "pid", "tid"), "E": ("ts", "pid", "tid"),
           "s": ("id", "ts", "pid"), "f": ("id", "ts", "pid"), "t": ("id", "ts", "pid"), "C": ("name", "ts", "pid"),
           "b": ("id", "ts", "pid"), "e": ("id", "ts", "pid"), "n": ("id", "ts", "pid"), "P": ("ts", "pid")}


def check_chrome_trace(trace: dict) -> list[dict]:
    """Schema check against the Chrome trace event format; returns the events."""
    assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list)
    for ev in trace["traceEvents"]:
        ph = ev.get("ph")
        assert ph in _PHASES, f"unknown phase {ph!r} in {ev}"
        for key in _PHASES[ph]:
            assert key in ev, f"{ph} event lacks {key!r}: {ev}"
        if "ts" in ev:
            assert isinstance(ev["ts"], numbers.Real), ev
        if ph == "X":
            assert isinstance(ev["dur"], numbers.Real) and ev["dur"] >= 0, ev
        if ph in ("i", "I") and "s" in ev:
            assert ev["s"] in ("g", "p", "t"), ev
        if "args" in ev:
            assert isinstance(ev["args"], dict)
        json.dumps(ev, allow_nan=False)  # strict JSON: no NaN / inf
    return trace["traceEvents"]


def _device_events(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and str(e.get("cat", "")).startswith("device")]


def _step(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor) -> float:
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.item()


def test_profiled_training_step_trace(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(16, 32, device="tpu")
    _step(model, opt, x)  # warm the caches: the profiled step runs from the C++ launch cache too
    torchtpu.reset_stats()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        _step(model, opt, x)
        with torch.tpu.eager_mode("DEFER_AND_FUSE"):
            _step(model, opt, x)
    device_seconds = torchtpu.stats()["device_seconds"]
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = check_chrome_trace(json.loads(path.read_text()))
    dev = _device_events(events)
    assert len(dev) == torchtpu.stats()["launches"] > 10
    assert sum(e["dur"] for e in dev) == pytest.approx(device_seconds * 1e6, rel=1e-9)
    for e in dev:  # every launch has its ops and its cost
        assert e["args"]["aten_ops"] and all(isinstance(o, str) for o in e["args"]["aten_ops"])
        assert e["args"]["bound"] in ("mxu", "vpu", "hbm", "launch", "ici")
        assert 0 <= e["args"]["padding_waste"] <= 1 and e["args"]["mxu_utilisation"] >= 0
    region = [e for e in dev if e["name"] == "deferred_region"]
    assert region and len(region[0]["args"]["aten_ops"]) > 5
    mm = [e for e in dev if "addmm" in e["name"]]
    assert mm and mm[0]["args"]["launched_by"] == "aten::addmm"
    names = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    assert any(n.startswith("tpu:0 ") and "simulated" in n for n in names)
    flushes = [e for e in events if e.get("cat") == "flush"]
    assert flushes and flushes[0]["args"]["reason"] == "a value was read (.item())"
    assert flushes[0]["args"]["where"].endswith(f"{__file__}:{_step.__code__.co_firstlineno + 5}".split("/")[-1])
    # the table puts simulated device time next to host time
    table = prof.key_averages().table(sort_by="self_device_time_total", row_limit=20)
    assert "Self TPU" in table and "aten::addmm" in table
    from torch.autograd import DeviceType

    device_rows = sum(e.self_device_time_total for e in prof.events() if e.device_type == DeviceType.PrivateUse1)
    on_cpu_ops = sum(e.self_device_time_total for e in prof.events() if e.device_type == DeviceType.CPU)
    assert device_rows == pytest.approx(device_seconds * 1e6, rel=1e-6)
    assert on_cpu_ops == pytest.approx(device_seconds * 1e6, rel=1e-6)  # each launch found its CPU op
    line = next(s for s in table.splitlines() if s.startswith("Self TPU time total"))
    assert float(line.split(":")[1].strip().removesuffix("us")) == pytest.approx(device_seconds * 1e6, abs=1e-3)


def test_recompile_and_fallback_have_reasons():
    def double(x):
        return torch.sin(x) * 2

    compiled = torch.compile(double, backend="tpu")
    with record() as window:
        compiled(torch.randn(4, 8, device="tpu"))
        compiled(torch.randn(5, 8, device="tpu"))  # a new size: Dynamo recompiles
    kinds = [e.kind for e in window.host_events]
    assert kinds.count("compile") >= 2
    recompiles = [e for e in window.host_events if e.kind == "recompile"]
    assert recompiles and "size mismatch" in recompiles[0].reason
    assert recompiles[0].where == f"{__file__}:{double.__code__.co_firstlineno}"
    graphs = [la for la in window.launches if la.record.name == "compiled_graph"]
    assert graphs and graphs[0].info["aten_ops"] == ["aten.sin.default", "aten.mul.Tensor"]
    assert graphs[0].info["sources"][0][1].endswith(f":{double.__code__.co_firstlineno + 1}")
    events = check_chrome_trace(window.chrome_trace())
    assert any(e.get("cat") == "recompile" and "size mismatch" in e["args"]["reason"] for e in events)


def test_cpu_fallback_in_trace(monkeypatch):
    from torchtpu.ops import fallback

    with record() as window:
        fallback.cpu_fallback(torch.ops.aten.sin.default, torch.ones(3, device="tpu"))
    found = [e for e in window.host_events if e.kind == "fallback"]
    assert found and "aten.sin.default" in found[0].name and found[0].reason


def test_window_is_off_outside_profiling():
    x = torch.ones(4, device="tpu")
    timeline = torchtpu.runtime.driver().timelines[0]
    with record():
        assert "issue" in timeline.__dict__  # stamped only while a window is open
        x + 1
    assert "issue" not in timeline.__dict__
    from torchtpu.profiler import events

    assert events.ACTIVE is False


def test_timeline_records_keep_cost_and_program():
    torchtpu.reset_stats()
    a = torch.randn(130, 130, device="tpu")
    (a @ a).sum().item()
    rows = torchtpu.timeline_records()
    mm = next(r for r in rows if "mm" in r["name"])
    assert mm["mxu_seconds"] > 0 and mm["padded_flops"] > mm["flops"]  # 130 pads to two 128-wide tiles
    timeline = torchtpu.runtime.driver().timelines[0]
    record = next(r for r in timeline.records if "mm" in r.name)
    assert record.source is not None and record.source.ops[0].name == "dot_general"
    assert record.cost.seconds == pytest.approx(record.seconds)


def test_a_launch_stamped_just_past_its_ops_end_still_finds_it():
    """The host clock is mapped onto kineto's with an error of the order of the gap between a launch and its op's
    return (about a microsecond): a launch no op contains goes to the op it just left, an exact one to its op."""
    from torch.autograd.profiler_util import FunctionEvent

    from torchtpu.profiler.torch_profiler import _clock_pair, _launching_op

    def op(name: str, start: float, end: float) -> FunctionEvent:
        return FunctionEvent(id=0, name=name, thread=0, start_us=start, end_us=end)

    cpu = [op("aten::linear", 0.0, 40.0), op("aten::addmm", 5.0, 30.0), op("aten::item", 45.0, 60.0)]
    starts = [fe.time_range.start for fe in cpu]
    assert _launching_op(cpu, starts, 29.5, 0.0).name == "aten::addmm"
    assert _launching_op(cpu, starts, 35.0, 0.0).name == "aten::linear"
    assert _launching_op(cpu, starts, 60.8, 0.0) is None
    assert _launching_op(cpu, starts, 60.8, 2.0).name == "aten::item"
    assert _launching_op(cpu, starts, 70.0, 2.0) is None
    perf, epoch = _clock_pair()
    assert abs((time.perf_counter_ns() - perf + epoch) - time.time_ns()) < 1_000_000
