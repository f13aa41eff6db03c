"""Transactional DEFER_AND_FUSE regions: a region that fails or is interrupted at record, build, compile or run
leaves a defined state. Ops before the failing one are committed; every storage the failing op or a later one
was to write is poisoned (reading it raises the region's error, naming the op and the user's line); storages the
region only read are untouched; an interrupt before the region runs leaves it pending, whole. Failures are
injected into the real stages (a real ExecutionError from the driver, a real SIGINT), never mocked regions."""

from __future__ import annotations

import os
import signal
import sys

import pytest
import torch
from torchtpu.drivers.base import ExecutionError

import torchtpu
from torchtpu import runtime
from torchtpu.execution import deferred, fast_launch, modes, poison, region_ir


@pytest.fixture
def fresh(tpu):
    """No cached region programs (so every flush builds and compiles), no poison left behind."""
    deferred._replays.clear()
    poison.clear()
    yield tpu
    with torchtpu.eager_mode("DEFER_NEVER"):
        pass
    poison.clear()
    assert not deferred.pending()
    assert torchtpu.get_eager_mode() is torchtpu.EagerMode.DEFER_NEVER


def _fail_at(monkeypatch, ir_op: str, cause: BaseException | None = None):
    """The driver raises ExecutionError at the first `ir_op` of any program that has one (as a kernel would)."""
    drv = runtime.driver()
    real = drv.execute

    def execute(exe, inputs, outputs, device=0):
        for i, op in enumerate(exe.program.ops):
            if op.name == ir_op:
                raise ExecutionError(i, op.name, cause or ValueError("injected failure"))
        return real(exe, inputs, outputs, device)

    monkeypatch.setattr(drv, "execute", execute)


def _data(tpu):
    x = torch.arange(12.0).reshape(3, 4).to(tpu)
    w = torch.ones(4, device=tpu)
    return x, w


def _reads_raise(t: torch.Tensor, match: str) -> None:
    with pytest.raises(RuntimeError, match=match):
        t.cpu()


def test_issue_example_commits_the_ops_before_the_failing_one(fresh):
    x, w = _data(fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        w.add_(1)
        a = x * 2
        bad_line = sys._getframe().f_lineno + 1
        picked = x.index_select(0, torch.tensor([0, 5], device=fresh))
        w.mul_(3)  # after the failing op: never ran
        with pytest.raises(RuntimeError, match=rf"index_select.*test_defer_transactions.py:{bad_line}"):
            a.cpu()
        assert torch.equal(a.cpu(), torch.arange(12.0).reshape(3, 4) * 2)
        for t in (picked, w):
            _reads_raise(t, rf"no value: the DEFER_AND_FUSE region .* failed: .*index_select.*:{bad_line}")
    assert torch.equal(x.cpu(), torch.arange(12.0).reshape(3, 4))  # only read: untouched


def test_execution_error_prefix_commit_and_poisoned_suffix(fresh, monkeypatch):
    _fail_at(monkeypatch, "sine")
    x, w = _data(fresh)
    keep = torch.full((4,), 7.0, device=fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        w.add_(1)
        before = x + 1
        line = sys._getframe().f_lineno + 1
        s = x.sin()
        keep.add_(1)  # written after the failing op: poisoned even though it does not depend on it
        after = before * 2
        with pytest.raises(RuntimeError, match=rf"injected failure \(in aten.sin.default issued at .*:{line};"):
            torch.tpu.synchronize()
        assert not deferred.pending()
        assert torch.equal(w.cpu(), torch.full((4,), 2.0))
        assert torch.equal(before.cpu(), torch.arange(12.0).reshape(3, 4) + 1)
        for t in (s, keep, after):
            _reads_raise(t, rf"injected failure .*aten.sin.default issued at .*:{line}")
        with pytest.raises(RuntimeError, match="aten.add.Tensor read a tensor .* that has no value"):
            s + 1  # a new region refuses it at the call
        assert torch.equal((w * 3).cpu(), torch.full((4,), 6.0))  # the next region works
    with pytest.raises(RuntimeError, match="injected failure"):
        keep + 1  # DEFER_NEVER too
    assert torch.equal(x.cpu(), torch.arange(12.0).reshape(3, 4))


def test_failure_in_the_first_op_poisons_every_output(fresh, monkeypatch):
    _fail_at(monkeypatch, "sine")
    x, w = _data(fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        s = x.sin()
        w.add_(1)
        with pytest.raises(RuntimeError, match="injected failure"):
            w.cpu()
        _reads_raise(w, "injected failure")
        _reads_raise(s, "injected failure")
    assert torch.equal(x.cpu(), torch.arange(12.0).reshape(3, 4))


def test_wholesale_overwrite_makes_a_poisoned_tensor_valid_again(fresh, monkeypatch):
    _fail_at(monkeypatch, "sine")
    x, _ = _data(fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        a, b, c, d, e, f = (x.sin() for _ in range(6))
        with pytest.raises(RuntimeError):
            torch.tpu.synchronize()
    monkeypatch.undo()
    a.zero_()
    b.copy_(torch.ones(3, 4))
    c.copy_(x)
    d[0] = 5.0  # a partial write keeps the rest without a value
    e.data = torch.full((3, 4), 2.0, device=fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        f.fill_(3.0)
        g = f + 1  # reads the value this region wrote whole
    assert torch.equal(a.cpu(), torch.zeros(3, 4))
    assert torch.equal(b.cpu(), torch.ones(3, 4))
    assert torch.equal(c.cpu(), torch.arange(12.0).reshape(3, 4))
    assert torch.equal(e.cpu(), torch.full((3, 4), 2.0))
    assert torch.equal(g.cpu(), torch.full((3, 4), 4.0)) and torch.equal(f.cpu(), torch.full((3, 4), 3.0))
    _reads_raise(d, "injected failure")
    with pytest.raises(RuntimeError, match="injected failure"):
        d[1:].sum()


def test_poison_is_released_with_the_tensor_and_the_launch_cache_comes_back(fresh, monkeypatch):
    _fail_at(monkeypatch, "sine")
    x, _ = _data(fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        s = x.sin()
        with pytest.raises(RuntimeError):
            s.cpu()
    assert poison.active
    del s
    torch.tpu.synchronize()  # sweeps
    assert not poison.active
    if fast_launch._active:  # the C++ launch cache serves DEFER_NEVER again
        before = fast_launch.counters()["hits"]
        for _ in range(3):
            x + 1
        assert fast_launch.counters()["hits"] > before


def test_build_error_commits_the_events_before_it(fresh, monkeypatch):
    real = region_ir._replay
    calls = []

    def replay(builder, slots, event, *rest):
        calls.append(event.origin[0])
        if event.origin[0] == "aten.sin.default":
            raise ValueError("injected build failure")
        return real(builder, slots, event, *rest)

    monkeypatch.setattr(region_ir, "_replay", replay)
    x, w = _data(fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        w.add_(1)
        line = sys._getframe().f_lineno + 1
        s = x.sin()
        with pytest.raises(RuntimeError, match=rf"injected build failure \(in aten.sin.default issued at .*:{line}; "
                                               "raised when the deferred region was built"):
            w.cpu()
        assert torch.equal(w.cpu(), torch.full((4,), 2.0))
        _reads_raise(s, "injected build failure")


def test_compile_error_poisons_every_output_and_the_next_region_works(fresh, monkeypatch):
    drv = runtime.driver()
    real = drv.compile
    monkeypatch.setattr(drv, "compile", lambda program: (_ for _ in ()).throw(RuntimeError("injected compile")))
    x, w = _data(fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        w.add_(1)
        y = x * 3
        with pytest.raises(RuntimeError, match=r"injected compile \(raised at the compile stage of the deferred "
                                               r"region of 2 ops issued from .*test_defer_transactions.py"):
            y.cpu()
        monkeypatch.setattr(drv, "compile", real)
        _reads_raise(w, "injected compile")
        _reads_raise(y, "injected compile")
        z = x + 1
        assert torch.equal(z.cpu(), torch.arange(12.0).reshape(3, 4) + 1)
    assert torch.equal(x.cpu(), torch.arange(12.0).reshape(3, 4))


def test_other_error_while_running_poisons_every_output(fresh, monkeypatch):
    drv = runtime.driver()
    monkeypatch.setattr(drv, "execute", lambda *a, **k: (_ for _ in ()).throw(MemoryError("injected oom")))
    x, w = _data(fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        w.add_(1)
        with pytest.raises(RuntimeError, match="MemoryError: injected oom .*execute stage"):
            w.cpu()
        monkeypatch.undo()
        _reads_raise(w, "injected oom")
    assert torch.equal(x.cpu(), torch.arange(12.0).reshape(3, 4))


def test_an_error_at_record_raises_at_the_call_and_keeps_the_region(fresh, monkeypatch):
    x, w = _data(fresh)
    real = deferred._user_line
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        w.add_(1)
        monkeypatch.setattr(deferred, "_user_line", lambda: (_ for _ in ()).throw(ValueError("injected record")))
        with pytest.raises(ValueError, match="injected record"):
            w.mul_(10)  # never recorded
        monkeypatch.setattr(deferred, "_user_line", real)
        y = w * 2
    assert torch.equal(w.cpu(), torch.full((4,), 2.0)) and torch.equal(y.cpu(), torch.full((4,), 4.0))


# KeyboardInterrupt at every stage

def _expected(x):
    return torch.full((4,), 2.0), x.cpu() * 2


def test_interrupt_at_record_leaves_the_region_as_it_was(fresh, monkeypatch):
    x, w = _data(fresh)
    real = deferred._user_line
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        w.add_(1)
        monkeypatch.setattr(deferred, "_user_line", lambda: (_ for _ in ()).throw(KeyboardInterrupt))
        with pytest.raises(KeyboardInterrupt):
            w.mul_(10)  # interrupted inside its own call: it never happened
        monkeypatch.setattr(deferred, "_user_line", real)
        a = x * 2
    ew, ea = _expected(x)
    assert torch.equal(w.cpu(), ew) and torch.equal(a.cpu(), ea)


def test_a_slot_marked_written_by_an_interrupted_record_passes_through(fresh):
    """What an interrupt between marking an in-place target written and adding its event leaves: no change."""
    x, w = _data(fresh)
    fresh_only = torch.full((4,), 5.0, device=fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        w.add_(1)
        b = x * 2
        for t in (fresh_only, x):  # as if `fresh_only.mul_(x)` was interrupted after marking its target
            deferred._view(t)
        deferred._region.slots[deferred._region.slot_of[deferred._key(fresh_only)]].written = True
        deferred._region.slots[deferred._region.slot_of[deferred._key(x)]].written = True
    assert torch.equal(w.cpu(), torch.full((4,), 2.0)) and torch.equal(b.cpu(), torch.arange(12.0).reshape(3, 4) * 2)
    assert torch.equal(fresh_only.cpu(), torch.full((4,), 5.0))
    assert torch.equal(x.cpu(), torch.arange(12.0).reshape(3, 4))


@pytest.mark.parametrize("stage", ["prepare", "build", "build_event", "compile"])
def test_interrupt_before_running_keeps_the_region_pending(fresh, monkeypatch, stage):
    drv = runtime.driver()
    interrupt = lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt)  # noqa: E731
    target = {"prepare": (deferred.gc, "collect"), "build": (deferred, "build"),
              "build_event": (region_ir, "_replay"), "compile": (drv, "compile")}[stage]
    x, w = _data(fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        w.add_(1)
        a = x * 2
        monkeypatch.setattr(*target, interrupt)
        with pytest.raises(KeyboardInterrupt):
            a.cpu()
        assert deferred.pending() and not poison.active
        monkeypatch.undo()
        ew, ea = _expected(x)
        assert torch.equal(a.cpu(), ea) and torch.equal(w.cpu(), ew)  # nothing lost


def test_interrupt_while_running_poisons_every_output(fresh, monkeypatch):
    drv = runtime.driver()
    real = drv.execute

    def execute(exe, inputs, outputs, device=0):
        real(exe, inputs, outputs, device)  # the outputs are written, or partly: the region cannot tell
        raise KeyboardInterrupt

    monkeypatch.setattr(drv, "execute", execute)
    x, w = _data(fresh)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        w.add_(1)
        a = x * 2
        with pytest.raises(KeyboardInterrupt):
            a.cpu()
        monkeypatch.undo()
        assert not deferred.pending()
        _reads_raise(w, "KeyboardInterrupt while the deferred region of 2 ops")
        _reads_raise(a, "its writes may be partial")
        assert torch.equal((x + 1).cpu(), torch.arange(12.0).reshape(3, 4) + 1)


def test_interrupt_leaving_eager_mode_restores_the_mode(fresh, monkeypatch):
    x, _ = _data(fresh)
    for _ in range(2):
        x + 1  # the C++ launch cache now serves this op in DEFER_NEVER
    monkeypatch.setattr(runtime.driver(), "compile", lambda p: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        with torchtpu.eager_mode("DEFER_AND_FUSE"):
            a = x * 2
    assert torchtpu.get_eager_mode() is torchtpu.EagerMode.DEFER_NEVER
    assert deferred.pending()
    monkeypatch.undo()
    b = a + 1  # the first op runs the kept region first (the launch cache is off while it is pending)
    assert torch.equal(b.cpu(), torch.arange(12.0).reshape(3, 4) * 2 + 1)
    assert torch.equal(a.cpu(), torch.arange(12.0).reshape(3, 4) * 2)
    if fast_launch._active:
        before = fast_launch.counters()["hits"]
        x + 1
        assert fast_launch.counters()["hits"] == before + 1  # and on again once it ran


@pytest.mark.parametrize("stage", ["compile", "execute"])
def test_real_sigint_during_a_flush_never_leaves_a_wrong_value(fresh, monkeypatch, request, stage):
    """A real SIGINT lands wherever Python next checks for signals: each pending value is then either right or
    raises the interrupt when read, never wrong."""
    drv = runtime.driver()
    real = getattr(drv, stage)

    def with_signal(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    x, w = _data(fresh)  # before the patch: a first run's own compiles must not take the signal
    # Python's own handler (a pytest-xdist worker ignores SIGINT, so that Ctrl-C reaches only its controller)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    monkeypatch.setattr(drv, stage, with_signal)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        w.add_(1)
        a = x * 2
        with pytest.raises(KeyboardInterrupt):
            a.cpu()
            for _ in range(1000):  # the signal is delivered at the next check
                pass
        monkeypatch.undo()
        ew, ea = _expected(x)
        for t, want in ((w, ew), (a, ea)):
            try:
                got = t.cpu()
            except RuntimeError as exc:
                assert "KeyboardInterrupt" in str(exc)
            else:
                assert torch.equal(got, want)
    assert torch.equal(x.cpu(), torch.arange(12.0).reshape(3, 4))


def test_optimizer_state_survives_an_interrupted_flush(fresh, monkeypatch):
    """The issue's training loop: Ctrl-C during a flush loses no update."""
    def run(interrupt: bool) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3).to(fresh)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        data = torch.randn(8, 4).to(fresh)
        with torchtpu.eager_mode("DEFER_AND_FUSE"):
            for step in range(3):
                opt.zero_grad()
                model(data).square().mean().backward()
                opt.step()
                if interrupt and step == 1:
                    with monkeypatch.context() as m:
                        m.setattr(deferred.gc, "collect", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
                        with pytest.raises(KeyboardInterrupt):
                            torch.tpu.synchronize()
            state = [s["exp_avg_sq"] for s in opt.state.values()]
            return [t.cpu() for t in (*model.parameters(), *state)]

    for got, want in zip(run(True), run(False)):
        assert torch.equal(got, want)


@pytest.mark.parametrize("mode", ["DEFER_NEVER", "LAUNCH_BLOCKING"])
def test_eager_modes_raise_at_the_call_and_poison_nothing(fresh, mode):
    x, w = _data(fresh)
    with torchtpu.eager_mode(mode):
        w.add_(1)
        with pytest.raises((RuntimeError, IndexError), match="index"):
            w.index_add_(0, torch.tensor([9], device=fresh), torch.ones(1, device=fresh))
        assert not poison.active
        assert torch.equal(w.cpu(), torch.full((4,), 2.0))
        assert torch.equal((x * 2).cpu(), torch.arange(12.0).reshape(3, 4) * 2)
    assert modes.get_eager_mode() is modes.EagerMode.DEFER_NEVER
