"""The sim driver's direct launch of one-kernel plans (drivers/sim/launcher.py), which the C++ launch cache calls
instead of `execute`: the same values, bit for bit, and the same simulated clocks, totals and timeline records as
the Python path (every call a cache miss, through `execute`) and as `execute` itself; the same values and device
totals as LAUNCH_BLOCKING."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchtpu.drivers.sim.driver import SimDriver

import torchtpu
from torchtpu import runtime
from torchtpu.execution import fast_launch

pytestmark = [pytest.mark.sim_only("the direct launch is the sim driver's"),
              pytest.mark.usefixtures("launch_cache_live")]

_OPS = {
    "add": lambda a, b, c: a + b,
    "mul": lambda a, b, c: a * b,
    "sub_alpha": lambda a, b, c: torch.sub(a, b, alpha=2),
    "mm": lambda a, b, c: torch.mm(a, b),
    "addcmul": lambda a, b, c: torch.addcmul(c, a, b, value=0.5),
    "maximum": lambda a, b, c: torch.maximum(a, b),
    "neg": lambda a, b, c: -a,
    "add_": lambda a, b, c: c.clone().add_(a),
}


def _special(n: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(n)
    x = torch.randn(8, 8, generator=gen) * 1e30  # products overflow: the launch's error state must hide it
    x[0, :4] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0])
    return x


def _run(mode: str, n: int = 6, miss: bool = False) -> tuple[list, dict, list]:
    """Values, stats and timeline records of `n` rounds of _OPS (`miss`: the launch cache emptied before each op,
    so that every op takes the Python path through `execute`)."""
    a, b, c = (_special(i).to("tpu") for i in range(3))
    torch.tpu.synchronize()
    torchtpu.reset_stats()
    results = []
    with torchtpu.eager_mode(mode):
        for _ in range(n):
            for name, fn in _OPS.items():
                if miss:
                    fast_launch.clear()
                results.append((name, fn(a, b, c).cpu()))
        torch.tpu.synchronize()
    stats = torchtpu.stats()
    return results, {k: stats[k] for k in ("device_seconds", "flops", "hbm_bytes", "launches", "by_op",
                                           "host_seconds", "wall_seconds")}, torchtpu.timeline_records()


def test_cached_launches_match_the_python_path_bit_for_bit_and_in_simulated_time(tpu):
    _run("DEFER_NEVER", 2)  # compiled and stored
    hits = fast_launch.counters()["hits"]
    with _no_warnings():
        cached = _run("DEFER_NEVER")
    assert fast_launch.counters()["hits"] - hits >= 6 * len(_OPS)
    python = _run("DEFER_NEVER", miss=True)
    blocking = _run("LAUNCH_BLOCKING")
    for other in (python, blocking):
        for (name, got), (_, want) in zip(cached[0], other[0]):
            assert got.view(torch.int32).equal(want.view(torch.int32)), name
    assert cached[1] == python[1] and cached[2] == python[2]  # every clock, total and record
    device = ("device_seconds", "flops", "hbm_bytes", "launches", "by_op")  # (LAUNCH_BLOCKING waits per op)
    assert {k: cached[1][k] for k in device} == {k: blocking[1][k] for k in device}


class _no_warnings:  # noqa: N801 - a context manager turning numpy warnings into errors
    def __enter__(self) -> None:
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("error", RuntimeWarning)

    def __exit__(self, *exc: object) -> None:
        self._w.__exit__(*exc)


def _stored(drv: SimDriver, op) -> tuple:
    """(launch, exe, inputs, outputs) of the launch `op` is stored with."""
    seen = []
    real = drv.launcher

    def spy(exe):
        launch = real(exe)
        seen.append((launch, exe))
        return launch

    drv.launcher = spy
    try:
        fast_launch.clear()
        op()
    finally:
        del drv.launcher
    return seen[-1]


def test_direct_launch_equals_execute_and_charges_alike(tpu):
    drv = runtime.driver()
    a, b = _special(0).to(tpu), _special(1).to(tpu)
    for op in (lambda: torch.mm(a, b), lambda: a + b, lambda: -a):  # (0, 1) operands, and any others
        launch, exe = _stored(drv, op)
        assert launch != drv.execute  # a one-kernel plan: the direct launch
        ins = [_special(0).numpy(), _special(1).numpy()][:len(exe.program.inputs)]
        outs_a, outs_b = [np.empty((8, 8), np.float32)], [np.empty((8, 8), np.float32)]
        timeline = drv.chips[0].timeline
        torch.tpu.synchronize()
        torchtpu.reset_stats()
        with _no_warnings():
            launch(exe, ins, outs_a, 0)
        via_launch = (timeline.records, timeline.totals(), timeline.host_seconds, timeline.wall_seconds)
        torchtpu.reset_stats()
        with _no_warnings():
            drv.execute(exe, ins, outs_b, 0)
        via_execute = (timeline.records, timeline.totals(), timeline.host_seconds, timeline.wall_seconds)
        assert outs_a[0].view(np.int32).tobytes() == outs_b[0].view(np.int32).tobytes()
        assert via_launch == via_execute


def test_a_replaced_execute_is_kept(tpu):
    """Tests inject faults by replacing the driver's execute on the instance: the cache then calls that."""
    drv = runtime.driver()
    a = torch.ones(3, device=tpu)
    calls = []
    real = drv.execute

    def execute(exe, inputs, outputs, device=0):
        calls.append(exe.program.name)
        return real(exe, inputs, outputs, device)

    drv.execute = execute
    try:
        fast_launch.clear()
        for _ in range(3):
            y = a + a
    finally:
        del drv.execute
    fast_launch.clear()
    assert len(calls) == 3 and torch.equal(y.cpu(), torch.full((3,), 2.0))


def test_a_subclass_execute_is_kept():
    class Counting(SimDriver):
        def execute(self, exe, inputs, outputs, device=0):
            return super().execute(exe, inputs, outputs, device)

    drv, plain = Counting(devices=1), SimDriver(devices=1)
    assert drv.launcher is not None and drv.launcher.__func__ is SimDriver.launcher
    class _Exe:
        payload = None

    assert drv.launcher(_Exe()) == drv.execute
    assert plain.launcher(_Exe()) == plain.execute  # no plan with a last step: execute itself
