"""Tests for torchtpu.sim.timeline: async host/device clocks, totals, chrome trace."""

import json

import pytest
from torchtpu.sim.cost import CostModel
from torchtpu.sim.timeline import Timeline


def _run_op_by_op(tl: Timeline, cm: CostModel, rec, n: int) -> None:
    for i in range(n):
        tl.host_issue(cm.launch_seconds())
        tl.launch(rec, f"op{i}")
    tl.synchronize()


def test_small_ops_are_host_bound():
    cm = CostModel("v5e")
    tl = Timeline("v5e")
    rec = cm.vpu("add", 1024, 1.0, 8192, 4096)
    _run_op_by_op(tl, cm, rec, 100)
    assert tl.wall_seconds == pytest.approx(100 * cm.launch_seconds() + rec.seconds)
    assert tl.device_seconds == pytest.approx(100 * rec.seconds)
    assert tl.device_seconds < 0.1 * tl.wall_seconds


def test_large_ops_are_device_bound():
    cm = CostModel("v5e")
    tl = Timeline("v5e")
    rec = cm.matmul(1, 4096, 4096, 4096, "bfloat16", "bfloat16")
    _run_op_by_op(tl, cm, rec, 10)
    assert tl.wall_seconds == pytest.approx(cm.launch_seconds() + 10 * rec.seconds)
    assert tl.device_seconds / tl.wall_seconds > 0.99
    assert tl.host_seconds == tl.wall_seconds  # after synchronize


def test_async_overlap_and_records():
    cm = CostModel("v5e")
    tl = Timeline(cm.chip)
    big = cm.matmul(1, 2048, 2048, 2048, "bfloat16", "bfloat16")
    tl.host_issue(1e-6)
    tl.launch(big, "mm")
    assert tl.host_seconds == 1e-6  # launch does not block the host
    tl.host_issue(1e-6)
    tl.launch(big, "mm2")
    r0, r1 = tl.records
    assert r0.start == 1e-6 and r1.start == pytest.approx(r0.end)  # queued behind the first
    assert r1.issued == 2e-6 and r0.name == "mm" and r0.op == "matmul" and r0.bound == big.bound
    assert tl.synchronize() == pytest.approx(r1.end)
    tot = tl.totals()
    assert tot["launches"] == 2 and tot["flops"] == 2 * big.flops
    assert tot["device_seconds"] == pytest.approx(2 * big.seconds)
    assert tot["by_op"]["matmul"]["count"] == 2
    trace = tl.to_chrome_trace()
    json.dumps(trace)
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == 2 and xs[1]["ts"] == pytest.approx(r1.start * 1e6)
    tl.reset()
    assert tl.records == [] and tl.wall_seconds == 0 and tl.totals()["launches"] == 0
    with pytest.raises(ValueError):
        tl.host_issue(-1)


def test_records_are_bounded_and_totals_cover_every_launch(monkeypatch):
    from torchtpu.sim import timeline as timeline_module

    monkeypatch.setattr(timeline_module, "MAX_RECORDS", 3)
    t = Timeline("v5e")
    rec = CostModel("v5e").vpu("add", 1024, 1.0, 8192, 4096)
    for i in range(10):
        t.launch(rec, f"add{i}")
    assert [r.name for r in t.records] == ["add7", "add8", "add9"]
    totals = t.totals()
    assert totals["launches"] == 10 and totals["by_op"]["add"]["count"] == 10
    assert totals["flops"] == pytest.approx(10 * rec.flops) and totals["device_seconds"] == pytest.approx(
        10 * rec.seconds)


def test_issue_of_a_charge_is_host_issue_then_launch():
    cm = CostModel("v5e")
    small, big = cm.vpu("add", 1024, 1.0, 8192, 4096), cm.matmul(1, 1024, 1024, 1024, "bfloat16", "bfloat16")
    a, b = Timeline("v5e"), Timeline("v5e")
    charges = {id(small): Timeline.charge(small, "add"), id(big): Timeline.charge(big)}
    for i, rec in enumerate([small, small, big, small, big, big, small] * 3):
        overhead = cm.launch_seconds() * (i % 3)
        a.host_issue(overhead)
        a.launch(rec, "add" if rec is small else "")
        b.issue(overhead, charges[id(rec)])
    a.synchronize(), b.synchronize()
    assert a.records == b.records and a.totals() == b.totals()
    assert (a.host_seconds, a.wall_seconds, a.device_seconds) == (b.host_seconds, b.wall_seconds, b.device_seconds)


def test_launches_keep_no_object_the_garbage_collector_tracks():
    """A launch keeps numbers only: a long run's records never trigger collections (records holding their
    CostRecord were promoted to the oldest generation and made full collections of the whole heap)."""
    import gc

    cm = CostModel("v5e")
    tl = Timeline("v5e")
    charge = Timeline.charge(cm.vpu("add", 1024, 1.0, 8192, 4096), "add", source=object())
    tl.issue(1e-6, charge)
    gc.disable()
    try:
        gc.collect()
        before = gc.get_count()[0]
        for _ in range(1000):
            tl.issue(1e-6, charge)
        grown = gc.get_count()[0] - before
    finally:
        gc.enable()
    assert grown < 10
    assert [r.name for r in tl.records] == ["add"] * 1001 and tl.records[-1].cost is charge[7]
    assert tl.records[-1].source is charge[8] and tl.records[-1].issued == pytest.approx(1001e-6)


def test_charges_named_by_records_are_pruned(monkeypatch):
    from torchtpu.sim import timeline as timeline_module

    monkeypatch.setattr(timeline_module, "MAX_RECORDS", 4)
    monkeypatch.setattr(timeline_module, "_PRUNE_SLACK", 2)
    cm = CostModel("v5e")
    tl = Timeline("v5e")
    recs = [cm.vpu("add", 1024 * (i + 1), 1.0, 8192, 4096) for i in range(50)]
    for i, rec in enumerate(recs):
        tl.issue(1e-6, Timeline.charge(rec, f"op{i}"))  # a new charge per launch (driver.charge does so)
        assert len(tl._charges) <= 2 * 4 + 2 + 1
    assert [r.name for r in tl.records] == ["op46", "op47", "op48", "op49"]
    assert [r.flops for r in tl.records] == [r.flops for r in recs[-4:]]
    assert [r.name for r in tl.records_since(48)] == ["op48", "op49"]
