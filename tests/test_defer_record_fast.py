"""DEFER_AND_FUSE's recording hit in one call (execution/record_fast.py): a cached op recorded into a region that
already has events, from a layout met before, becomes its event without `deferred._record_cached` (the long way),
with the same views, user line and results as the long way; a refusal leaves the region as it was."""

from __future__ import annotations

import pytest
import torch

import torchtpu
from torchtpu.execution import deferred, record_plan

pytestmark = pytest.mark.usefixtures("launch_cache_live", "one_op_regions_kept")


def _loop(tpu, mode: str, n: int = 6) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(8, 8, generator=gen).to(tpu)
    b = torch.randn(8, 8, generator=gen).to(tpu)
    out = []
    with torchtpu.eager_mode(mode):
        for _ in range(n):
            out.append(a + b)
            out.append(a @ out[-1])
            a.mul_(0.5)
        torch.tpu.synchronize()
    return [t.cpu() for t in (*out, a)]


def test_hits_recorded_without_the_long_way_bit_identical(tpu, monkeypatch):
    never = _loop(tpu, "DEFER_NEVER")
    _loop(tpu, "DEFER_AND_FUSE")  # warm: the C++ entries stored, every layout met once
    calls = []
    long_way = deferred._record_cached
    monkeypatch.setattr(deferred, "_record_cached", lambda *a, **k: calls.append(a[0][0]) or long_way(*a, **k))
    fused = _loop(tpu, "DEFER_AND_FUSE")
    for x, y in zip(never, fused, strict=True):
        assert x.view(torch.int32).equal(y.view(torch.int32))
    # only the region's first two ops take the long way: the kept one-op region, recorded when the second comes,
    # and that second op (the region had no event yet); the other 16 are record_fast's
    assert len(calls) <= 2, calls


def test_event_names_the_users_line(tpu):
    a = torch.ones(8, 8).to(tpu)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for _ in range(3):
            a + a
            torch.tpu.synchronize()
        x = a + a
        y = a + x  # recorded by record_fast into the region that x started
        origins = [e.origin for e in deferred._region.events]
        torch.tpu.synchronize()
    assert y.cpu().equal(torch.full((8, 8), 3.0))
    line = origins[-1][1]
    assert line.endswith(f"test_defer_record_fast.py:{_line_of('y = a + x')}"), origins


def _line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, s in enumerate(f, 1) if text in s and "_line_of" not in s)


def _aliased(tpu, mode: str) -> list[torch.Tensor]:
    a = torch.ones(8, 8).to(tpu)
    ints = torch.arange(64, dtype=torch.int32).reshape(8, 8).to(tpu)
    out = []
    with torchtpu.eager_mode(mode):
        for i in range(4):
            out.append(ints + ints)  # cached int32 add
            out.append(a + a)
            if i == 3:  # the region holds a's storage as float32: the int32 hit on it is refused
                out.append(a.view(torch.int32) + ints)
            out.append(out[-1] + a)
            torch.tpu.synchronize()
    return [t.cpu() for t in out]


def test_refused_hit_runs_as_never(tpu, monkeypatch):
    never = _aliased(tpu, "DEFER_NEVER")
    _aliased(tpu, "DEFER_AND_FUSE")  # warm: the C++ entries stored, the layouts met
    refused = []

    def counted(planner):
        def plan(*args):
            answer = planner(*args)
            refused.append(answer is False)
            return answer
        return plan

    for name in ("hit", "views"):  # the hit refuses a storage held under another dtype; a first layout, views
        monkeypatch.setattr(record_plan, name, counted(getattr(record_plan, name)))
    fused = _aliased(tpu, "DEFER_AND_FUSE")
    assert any(refused)  # the int32 hit on a's storage was refused, and the Python kernel ran it
    for x, y in zip(never, fused, strict=True):
        assert x.view(torch.int32).equal(y.view(torch.int32))
    assert not deferred.pending()
