"""DEFER_AND_FUSE's recording hit in C++ (csrc/record_native.cpp): an op whose layout, region slots and views were
met before is recorded without Python per op, into the same region, as the same Event and Slot objects
record_fast.py would make (views, scalars, signature id, user line), with bit-identical results; every case it
does not take (a storage new to the region, the lock held by another thread, autograd's thread) goes the Python
way."""

from __future__ import annotations

import threading

import pytest
import torch

import torchtpu
from torchtpu._native import native
from torchtpu.execution import deferred, record_fast

pytestmark = pytest.mark.usefixtures("launch_cache_live", "one_op_regions_kept")


@pytest.fixture
def python_recording():
    """The C++ recording hit off for the test's body (each test turns it back on where it compares)."""
    yield lambda on: record_fast.native_recording(on)
    record_fast.native_recording(True)


def _step(tpu, n: int = 5) -> tuple[list[torch.Tensor], list[tuple]]:
    """Results, and the events of the last region before its flush (as comparable tuples), of a small loop."""
    gen = torch.Generator().manual_seed(3)
    a = torch.randn(8, 8, generator=gen).to(tpu)
    b = torch.randn(8, 8, generator=gen).to(tpu)
    w = torch.randn(8, generator=gen).to(tpu)
    out, events = [], []
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for i in range(n):
            y = torch.addmm(w, a, b, alpha=0.5 + i)  # a float scalar: a 0-d buffer per call
            z = (y * 0.25).relu_()
            b.add_(z, alpha=-0.1)
            out += [y, z]
            if i == n - 1:
                region = deferred._region
                events = [(e.structure, e.inputs, e.outputs, e.key, e.origin[0], [s.item() for s in e.scalars])
                          for e in region.events]
                slots = [(s.torch_dtype, s.dtype, s.nbytes, s.numel, s.written) for s in region.slots]
                events.append(slots)
            torch.tpu.synchronize()
    return [t.cpu() for t in (*out, b)], events


def test_native_hits_record_what_python_records(tpu, python_recording):
    python_recording(False)
    _step(tpu)  # warm: entries stored, layouts planned
    before = native().fast_record_count()
    py_results, py_events = _step(tpu)
    assert native().fast_record_count() == before
    python_recording(True)
    native_results, native_events = _step(tpu)
    assert native().fast_record_count() > before + 5  # the loop's later ops took the C++ way
    assert native_events == py_events
    for x, y in zip(py_results, native_results, strict=True):
        assert x.view(torch.int32).equal(y.view(torch.int32))


def _region_with_an_event(a: torch.Tensor) -> torch.Tensor:
    """a + a + a, pending in a region with one event, after the same three ops (a + a + a + a) were met three
    times: the next `y + a` is a native hit."""
    for _ in range(3):
        x = a + a
        y = a + x
        z = y + a  # noqa: F841 - held until the flush, as the hit below holds its result
        torch.tpu.synchronize()
    x = a + a  # kept as a one-op region
    return a + x  # the region's first event (the Python way)


def test_native_event_names_the_users_line(tpu):
    a = torch.ones(8, 8).to(tpu)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        y = _region_with_an_event(a)
        before = native().fast_record_count()
        z = y + a  # the line the event must name
        origins = [e.origin for e in deferred._region.events]
        assert native().fast_record_count() == before + 1
        torch.tpu.synchronize()
    assert z.cpu().equal(torch.full((8, 8), 4.0))
    assert origins[-1][1].endswith(f"test_record_native.py:{_line_of('z = y + a  # the line')}"), origins


def _line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, s in enumerate(f, 1) if text in s and "_line_of" not in s)


def test_region_flushes_at_its_op_limit(tpu, monkeypatch):
    a = torch.ones(8, 8).to(tpu)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for _ in range(2):
            ys = [a + a for _ in range(6)]
            torch.tpu.synchronize()
        monkeypatch.setattr(deferred, "MAX_REGION_OPS", 3)
        flushes, before = deferred.stats.flushes, native().fast_record_count()
        ys = [a + a for _ in range(6)]
        assert native().fast_record_count() > before
        assert deferred.stats.flushes > flushes  # a native hit past the limit flushed the region
        torch.tpu.synchronize()
    assert all(y.cpu().equal(torch.full((8, 8), 2.0)) for y in ys)


def test_lock_held_elsewhere_waits_on_the_python_way(tpu):
    a = torch.ones(8, 8).to(tpu)
    held, release = threading.Event(), threading.Event()

    def holder():
        with deferred._lock:
            held.set()
            release.wait(10)

    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        y = _region_with_an_event(a)
        thread = threading.Thread(target=holder)
        thread.start()
        held.wait(10)
        before = native().fast_record_count()
        threading.Timer(0.2, release.set).start()
        z = y + a  # the C++ way cannot take the lock: the Python way waits for it
        assert native().fast_record_count() == before
        assert release.is_set()
        thread.join(10)
        torch.tpu.synchronize()
    assert z.cpu().equal(torch.full((8, 8), 4.0))


def test_backward_ops_recorded_on_autograds_thread(tpu):
    gen = torch.Generator().manual_seed(5)
    w_cpu = torch.randn(8, 8, generator=gen)
    x_cpu = torch.randn(4, 8, generator=gen)
    grads, recorded = {}, {}
    for mode in ("DEFER_NEVER", "DEFER_AND_FUSE"):
        w = w_cpu.to(tpu).requires_grad_()
        with torchtpu.eager_mode(mode):
            for _ in range(3):
                loss = ((x_cpu.to(tpu) @ w).tanh() * 2).sum()
                before = native().fast_record_count()
                loss.backward()
                recorded[mode] = native().fast_record_count() - before
                torch.tpu.synchronize()  # (a region per step: its slots numbered alike each time)
        grads[mode] = w.grad.cpu()
    assert recorded == {"DEFER_NEVER": 0, "DEFER_AND_FUSE": recorded["DEFER_AND_FUSE"]}
    assert recorded["DEFER_AND_FUSE"] > 0  # backward's ops, on autograd's thread, took the C++ way
    assert grads["DEFER_NEVER"].view(torch.int32).equal(grads["DEFER_AND_FUSE"].view(torch.int32))
