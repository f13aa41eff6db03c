"""DEFER_AND_FUSE's kept one-op region (execution/deferred.py `_single`): an op flushed alone runs through the
cached one-op path, bit-identical to DEFER_NEVER; anything else that touches the region first records it."""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch

import torchtpu
from torchtpu.execution import deferred, one_op_cache

pytestmark = pytest.mark.usefixtures("one_op_regions_kept")


def _spy_runs(monkeypatch) -> list[bool]:
    runs: list[bool] = []
    real = deferred._run_one

    def run_one(*args):
        ran = real(*args)
        runs.append(ran)
        return ran

    monkeypatch.setattr(deferred, "_run_one", run_one)
    return runs


def test_one_op_regions_run_the_cached_way_bit_identical_to_defer_never(tpu, monkeypatch):
    gen = torch.Generator().manual_seed(0)
    a_cpu, b_cpu = torch.randn(8, 8, generator=gen), torch.randn(8, 8, generator=gen)
    results = {}
    for mode in ("DEFER_NEVER", "DEFER_AND_FUSE"):
        runs = _spy_runs(monkeypatch)
        a, b = a_cpu.to(tpu), b_cpu.to(tpu)
        acc = torch.zeros(8, 8).to(tpu)
        with torchtpu.eager_mode(mode):
            outs = []
            for _ in range(4):
                outs.append(torch.add(a, b))
                torch.tpu.synchronize()
                outs.append(torch.mm(a, b))
                torch.tpu.synchronize()
                acc.add_(a)
                torch.tpu.synchronize()
            assert not deferred.pending()
        results[mode] = [o.cpu() for o in (*outs, acc)]
        if mode == "DEFER_AND_FUSE":
            assert runs.count(True) >= 6  # the first calls of each op take the long way, later ones replay
    for x, y in zip(results["DEFER_NEVER"], results["DEFER_AND_FUSE"]):
        assert torch.equal(x, y) and x.view(torch.int32).equal(y.view(torch.int32))


def test_a_dropped_result_takes_the_long_way(tpu, monkeypatch):
    a = torch.randn(8, 8).to(tpu)
    runs = _spy_runs(monkeypatch)
    # no program of an earlier test (the same op on the same shapes) may be cached: this one's first run builds
    monkeypatch.setattr(deferred, "_replays", OrderedDict())
    monkeypatch.setattr(one_op_cache, "_one_ops", OrderedDict())
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for _ in range(3):
            torch.add(a, a)
            torch.tpu.synchronize()
        assert runs == []  # nobody holds the output: the long way leaves it unwritten (region_dce drops the op)
        kept = [torch.add(a, a) for _ in range(1)]
        torch.tpu.synchronize()
        kept.append(torch.add(a, a))
        torch.tpu.synchronize()
    # the dropped calls built no program: the first kept call builds it the long way, the next one replays it
    assert runs == [False, True] and all(torch.equal(k.cpu(), a.cpu() + a.cpu()) for k in kept)


def test_a_second_op_or_a_write_to_an_input_records_the_kept_op_first(tpu):
    a_cpu = torch.randn(8, 8)
    a = a_cpu.to(tpu)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for _ in range(2):  # cached: later calls are kept
            y = a + 1
            torch.tpu.synchronize()
        y = a + 1
        z = y * 2  # a second op: the kept one becomes the region's first event
        assert deferred.pending() and len(deferred._region.events) == 2
        assert torch.equal(z.cpu(), (a_cpu + 1) * 2)
        y = a + 1
        a.copy_(torch.zeros(8, 8))  # a host write to its input: the kept op must read the old value
        assert torch.equal(y.cpu(), a_cpu + 1)
        assert torch.equal(a.cpu(), torch.zeros(8, 8))
