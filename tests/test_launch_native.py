"""A small exact `mm` launched by the C++ launch cache through its native kernel (sim/mxu_native.py, called with
the tensors' memory after drivers/sim/launcher.py's `ready`): the Python launch is not called on a hit, and values
(special values included, bit for bit), simulated clocks, totals and timeline records are those of the Python
path; an MXU mode under which the exact kernel does not run, or operands the native kernel does not take, go
through the launch as before."""

from __future__ import annotations

import pytest
import torch
from torchtpu.sim import mxu

import torchtpu
from torchtpu import runtime
from torchtpu.execution import fast_launch

pytestmark = [pytest.mark.sim_only("the native mm kernel is the sim driver's"),
              pytest.mark.usefixtures("launch_cache_live")]


def _special(n: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(n)
    x = torch.randn(8, 8, generator=gen) * 1e30
    x[0, :4] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0])
    x[1, :2] = torch.tensor([1e-40, -3e38])
    return x


class _Counting:
    """drv.launcher spied on: every launch it makes counts its calls (and keeps its native kernel)."""

    def __init__(self, drv) -> None:
        self.drv, self.real, self.calls = drv, drv.launcher, 0

    def __enter__(self) -> _Counting:
        def launcher(exe):
            launch = self.real(exe)

            def counted(*args):
                self.calls += 1
                return launch(*args)

            if hasattr(launch, "native"):
                counted.native = launch.native
            return counted

        self.drv.launcher = launcher
        fast_launch.clear()
        return self

    def __exit__(self, *exc: object) -> None:
        del self.drv.launcher
        fast_launch.clear()


def _mms(a: torch.Tensor, b: torch.Tensor, n: int, miss: bool = False) -> tuple[list, dict, list]:
    torch.tpu.synchronize()
    torchtpu.reset_stats()
    results = []
    for _ in range(n):
        if miss:
            fast_launch.clear()
        results.append(torch.mm(a, b).cpu())
    torch.tpu.synchronize()
    stats = torchtpu.stats()
    keys = ("device_seconds", "flops", "hbm_bytes", "launches", "by_op", "host_seconds", "wall_seconds")
    return results, {k: stats[k] for k in keys}, torchtpu.timeline_records()


def test_a_cached_small_mm_runs_the_native_kernel_with_the_python_paths_values_and_clocks(tpu):
    a, b = _special(0).to(tpu), _special(1).to(tpu)
    with _Counting(runtime.driver()) as spy:
        torch.mm(a, b)  # stored
        hits = fast_launch.counters()["hits"]
        cached = _mms(a, b, 5)
        assert fast_launch.counters()["hits"] - hits >= 5
        assert spy.calls == 0  # served by the native kernel, not the launch
    python = _mms(a, b, 5, miss=True)
    for got, want in zip(cached[0], python[0]):
        assert got.view(torch.int32).equal(want.view(torch.int32))
    assert cached[1] == python[1] and cached[2] == python[2]
    with torchtpu.eager_mode("LAUNCH_BLOCKING"):
        blocking = torch.mm(a, b).cpu()
    assert cached[0][0].view(torch.int32).equal(blocking.view(torch.int32))


@pytest.mark.parametrize("mode", ["fast", "exact", "auto"])
def test_the_mxu_mode_is_read_per_call(tpu, mode):
    a, b = _special(2).to(tpu), _special(3).to(tpu)
    with _Counting(runtime.driver()) as spy:
        torch.mm(a, b)  # stored under the default mode
        previous = mxu._mode
        mxu.set_mode(mode)
        try:
            got = torch.mm(a, b).cpu()
            calls = spy.calls
            fast_launch.clear()
            want = torch.mm(a, b).cpu()  # the Python path
        finally:
            mxu.set_mode(previous)
    assert calls == (1 if mode == "fast" else 0)  # "fast": the launch runs (BLAS), not the exact native kernel
    assert got.view(torch.int32).equal(want.view(torch.int32))


def test_out_of_a_non_contiguous_tensor_takes_the_launch(tpu):
    a, b = _special(4).to(tpu), _special(5).to(tpu)
    with _Counting(runtime.driver()) as spy:
        for _ in range(3):
            out = torch.empty(8, 8, device=tpu).t()
            torch.mm(a, b, out=out)
        want = torch.mm(a, b).cpu()
    assert out.cpu().view(torch.int32).equal(want.view(torch.int32))
    assert spy.calls == 2  # the second and third calls were cache hits that the native kernel refused
