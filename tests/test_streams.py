"""Streams and events on the simulated timeline (torchtpu/streams.py, drivers/sim/streams.py, the device guard in
csrc/tpu_shim.cpp): ordering, overlap arithmetic, elapsed_time in simulated ms, the generic torch.Stream /
torch.Event / torch.accelerator path, storage resize accounting, and the errors."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torchtpu.drivers.sim.streams import COMPUTE, COPY, ICI, StreamTimeline
from torchtpu.sim.cost import CostRecord
from torchtpu.sim.timeline import Timeline

import torchtpu
from torchtpu import streams


def _timeline() -> StreamTimeline:
    return streams.timeline(0)


def _last(n: int = 1) -> list[dict]:
    return torchtpu.timeline_records(0)[-n:]


def _big() -> torch.Tensor:
    return torch.randn(1024, 1024, device="tpu")  # a 1024^3 matmul is MXU-bound, well above the launch overhead


def test_side_stream_work_is_ordered_by_wait_event_and_values_do_not_change() -> None:
    a = _big()
    expected = (a @ a).cpu()
    torch.tpu.synchronize()
    s = torch.tpu.Stream()
    with torch.tpu.stream(s):
        assert torch.tpu.current_stream() == s and torch.accelerator.current_stream() == s
        b = a @ a
        done = s.record_event()
    assert torch.tpu.current_stream() == torch.tpu.default_stream()
    produced = _last()[0]
    torch.tpu.current_stream().wait_event(done)
    c = b + 1
    consumed = _last()[0]
    assert consumed["start"] >= produced["end"]
    assert torch.equal(b.cpu(), expected) and torch.equal(c.cpu(), expected + 1)


def test_two_streams_compute_serialises_on_the_one_tensorcore() -> None:
    a = _big()
    torch.tpu.synchronize()
    s1, s2 = torch.tpu.Stream(), torch.tpu.Stream()
    with torch.tpu.stream(s1):
        a @ a
    with torch.tpu.stream(s2):
        a @ a
    first, second = _last(2)
    assert second["start"] == pytest.approx(first["end"])  # not overlapped: one compute engine


def _record(op: str, seconds: float, bound: str) -> CostRecord:
    return CostRecord(op=op, flops=0.0, hbm_bytes=0.0, seconds=seconds, mxu_seconds=0.0, vpu_seconds=0.0,
                      hbm_seconds=0.0, bound=bound, cycles=0.0)


def test_engines_overlap_and_the_step_lies_between_max_and_sum() -> None:
    tl = StreamTimeline("v5e")
    tl.enable_streams(lambda: 0)
    compute = Timeline.charge(_record("mm", 3e-3, "mxu"), "mm")
    comm, copy = _record("all_gather", 2e-3, "ici"), _record("h2d", 1e-3, "copy")
    end_ici = tl.run_record(7, ICI, comm)
    end_copy = tl.run_record(9, COPY, copy)
    tl.issue(0.0, compute)  # default stream, compute engine: overlaps both
    assert tl.records[-1].start == 0.0 and end_ici == pytest.approx(2e-3) and end_copy == pytest.approx(1e-3)
    tl.wait(0, end_ici)  # the default stream waits for the all-gather, then computes again
    tl.issue(0.0, compute)
    step = tl.synchronize()
    assert step == pytest.approx(6e-3)
    assert max(3e-3 * 2, 2e-3) <= step < 3e-3 * 2 + 2e-3 + 1e-3
    assert tl.engine_free(COMPUTE) == pytest.approx(6e-3)
    with pytest.raises(ValueError, match="unknown engine 'dma'; valid: compute, ici, copy"):
        tl.run_record(0, "dma", copy)


def test_a_timeline_without_streams_is_the_one_queue_timeline() -> None:
    plain, streamed = Timeline("v5e"), StreamTimeline("v5e")
    rec = Timeline.charge(_record("mm", 2e-6, "hbm"))
    for tl in (plain, streamed):
        for _ in range(3):
            tl.issue(5e-6, rec)
    assert [r.start for r in plain.records] == [r.start for r in streamed.records]
    assert plain.wall_seconds == streamed.wall_seconds and "issue" not in vars(streamed)


def test_elapsed_time_is_simulated_milliseconds() -> None:
    a = _big()
    torch.tpu.synchronize()
    tl = _timeline()
    start, end = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
    t0 = tl.host_seconds
    start.record()
    a @ a
    a @ a
    end.record()
    end.synchronize()
    assert start.query() and end.query()
    assert start.elapsed_time(end) == pytest.approx((_last()[0]["end"] - t0) * 1e3)
    assert start.elapsed_time(end) > 2 * _last()[0]["seconds"] * 1e3
    # the generic torch.Event goes through the C++ device guard to the same clocks
    g0, g1 = torch.Event(device="tpu", enable_timing=True), torch.Event(device="tpu", enable_timing=True)
    g0.record()
    a @ a
    g1.record()
    g1.synchronize()
    assert g0.elapsed_time(g1) == pytest.approx((_last()[0]["end"] - _event_time(g0)) * 1e3)
    assert start.elapsed_time(g1) == pytest.approx((_last()[0]["end"] - t0) * 1e3)  # tpu event to generic one


def _event_time(event: torch.Event) -> float:
    return streams._event(event.event_id)[1]


def test_elapsed_time_errors() -> None:
    a, b = torch.tpu.Event(), torch.tpu.Event(enable_timing=True)
    a.record()
    b.record()
    with pytest.raises(ValueError, match="enable_timing=True"):
        a.elapsed_time(b)
    c = torch.tpu.Event(enable_timing=True)
    with pytest.raises(ValueError, match="must be recorded"):
        b.elapsed_time(c)
    big = _big()
    b.record()
    big @ big
    c.record()
    if not c.query():
        with pytest.raises(RuntimeError, match="completed"):
            b.elapsed_time(c)
    c.synchronize()
    assert b.elapsed_time(c) > 0
    with pytest.raises(NotImplementedError, match="interprocess"):
        torch.tpu.Event(interprocess=True)


def test_query_and_synchronize_of_a_stream_move_the_host() -> None:
    a = _big()
    torch.tpu.synchronize()
    tl = _timeline()
    s = torch.Stream(device="tpu")  # the generic API: getNewStream in the device guard
    with torch.tpu.stream(s):
        for _ in range(3):
            a @ a
    assert not s.query() and tl.stream_clock(s.stream_id) > tl.host_seconds
    s.synchronize()
    assert s.query() and tl.host_seconds == pytest.approx(tl.stream_clock(s.stream_id))
    torch.accelerator.synchronize()
    assert tl.host_seconds == pytest.approx(tl.wall_seconds)


def test_priority_is_kept_and_clamped() -> None:
    assert torch.tpu.Stream(priority=-1).priority == -1
    assert torch.tpu.Stream(priority=-100).priority == -8 and torch.tpu.Stream(priority=100).priority == 7
    assert torch.tpu.default_stream().priority == 0 and torch.tpu.default_stream().stream_id == 0
    assert torch.tpu.Stream(priority=-1) != torch.tpu.Stream(priority=-1)
    s = torch.tpu.Stream()
    e = s.record_event(torch.tpu.Event())
    assert isinstance(e, torch.tpu.Event) and e.query()


def test_storage_resize_to_zero_and_back_keeps_the_accounting() -> None:
    x = torch.arange(1000, dtype=torch.float32, device="tpu")
    before = torch.tpu.memory_allocated()
    storage = x.untyped_storage()
    storage.resize_(0)
    assert torch.tpu.memory_allocated() == before - 4000
    storage.resize_(4000)
    assert torch.tpu.memory_allocated() == before and x.device.type == "tpu"
    x.copy_(torch.arange(1000, dtype=torch.float32))  # resize_(0) dropped the values, as CUDA's does
    storage.resize_(8000)  # growing keeps the old bytes
    assert torch.tpu.memory_allocated() == before + 4000
    assert torch.equal(torch.tensor([], device="tpu").set_(storage, 0, (1000,), (1,)).cpu(),
                       torch.arange(1000, dtype=torch.float32))


def test_bad_device_and_cross_device_errors() -> None:
    code = textwrap.dedent("""
        import torch, torchtpu
        out = []
        def expect(fn):
            try:
                fn()
                out.append("no error")
            except Exception as e:
                out.append(f"{type(e).__name__}: {e}".splitlines()[0])
        expect(lambda: torch.tpu.Stream(device="tpu:7"))
        expect(lambda: torch.Stream(device="tpu:7"))
        e = torch.tpu.Event(enable_timing=True)
        e.record(torch.tpu.Stream(device="tpu:0"))
        expect(lambda: e.record(torch.tpu.Stream(device="tpu:1")))
        f = torch.tpu.Event(enable_timing=True)
        f.record(torch.tpu.Stream(device="tpu:1"))
        torch.tpu.synchronize(0); torch.tpu.synchronize(1)
        expect(lambda: e.elapsed_time(f))
        expect(lambda: torch.tpu.stream(object()).__enter__())
        s1 = torch.tpu.Stream(device="tpu:1")
        with torch.tpu.stream(s1):
            inner = (torch.tpu.current_stream(1) == s1, torch.tpu.current_device())
        out.append(repr((inner, torch.tpu.current_device(), torch.tpu.current_stream(1).stream_id)))
        print(out)
    """)
    env = {**os.environ, "TORCHTPU_NUM_DEVICES": "2"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 - our own subprocess's repr
    assert got[0].startswith("InvalidDeviceError: tpu:7 is not a device of this process") and "0..1" in got[0]
    assert got[1].startswith("RuntimeError: tpu:7 is not a device of this process")
    assert got[2].startswith("RuntimeError: tpu event of tpu:0 cannot be recorded on a stream of tpu:1")
    assert got[3].startswith("ValueError: elapsed_time between an event of tpu:0 and one of tpu:1")
    assert got[4].startswith("ValueError: expected a tpu stream")
    assert got[5] == "((True, 1), 0, 0)"


def test_host_device_copies_are_charged_on_the_copy_engine_at_pcie_bandwidth() -> None:
    tl = _timeline()
    pcie = tl.chip.pcie_bw  # the chip table's PCIe bandwidth each way [SB-tpus]: 1.6e10 B/s for v5e
    x = torch.arange(1 << 20, dtype=torch.float32)  # 4 MiB
    nbytes = x.numel() * 4
    torch.tpu.synchronize()
    host = tl.host_seconds
    y = x.to("tpu")  # blocking: the host waits for the copy's end
    assert tl.host_seconds == pytest.approx(host + nbytes / pcie, rel=1e-12)
    assert torch.equal(y.cpu(), x)
    a = _big()
    torch.tpu.synchronize()
    t0, copies = tl.host_seconds, dict(tl.copies)
    s = torch.tpu.Stream()
    with torch.tpu.stream(s):
        z = x.to("tpu", non_blocking=True)  # a side-stream upload overlaps the compute below
    assert tl.host_seconds == t0
    for _ in range(4):
        a = a @ a
    compute_end, copy_end = tl.stream_clock(0), tl.stream_clock(s.stream_id)
    assert copy_end == pytest.approx(t0 + nbytes / pcie, rel=1e-12) and tl.engine_free(COPY) == copy_end
    torch.tpu.synchronize()
    assert tl.host_seconds == pytest.approx(max(compute_end, copy_end), rel=1e-12)
    assert tl.host_seconds < compute_end + nbytes / pcie  # overlapped, not serial
    assert tl.copies["count"] == copies["count"] + 1 and tl.copies["bytes"] == copies["bytes"] + nbytes
    back = torch.empty(x.shape)
    before = tl.host_seconds
    back.copy_(z)  # blocking download: after the device, then the transfer
    assert tl.host_seconds == pytest.approx(before + nbytes / pcie, rel=1e-12) and torch.equal(back, x)


def test_a_timeline_without_streams_queues_copies_with_compute() -> None:
    tl = StreamTimeline("v5e")
    tl.launch(CostRecord("mm", 0, 0, 1e-3, 0, 0, 0, "mxu", 0))
    end = tl.transfer(2e-3, 3.2e7, blocking=False)
    assert end == pytest.approx(3e-3) and tl.host_seconds == 0.0 and tl.wall_seconds == pytest.approx(3e-3)
    tl.transfer(1e-3, 1.6e7, blocking=True)
    assert tl.host_seconds == pytest.approx(4e-3) and len(tl.records) == 1  # copies are not launches
