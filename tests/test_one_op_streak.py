"""DEFER_AND_FUSE's one-op streak (execution/one_op_streak.py): while every region holds one op, the next cached
op launches at once from its launching twin, bit-identical to DEFER_NEVER; a second op before a synchronization
ends the streak, and nothing recorded into a region is ever overtaken by such a launch."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import torchtpu
from torchtpu.execution import deferred, one_op_streak


@pytest.fixture(autouse=True)
def _fresh_streak(launch_cache_live):
    """No streak, and no storage an earlier test poisoned (while one is, no op launches at once)."""
    one_op_streak.reset()
    yield
    one_op_streak.reset()


def _synced_ops(a: torch.Tensor, b: torch.Tensor, acc: torch.Tensor, rounds: int) -> list[torch.Tensor]:
    outs = []
    for _ in range(rounds):
        for make in (lambda: a + b, lambda: torch.mm(a, b), lambda: torch.relu(a), lambda: acc.add_(a)):
            outs.append(make())
            torch.tpu.synchronize()
    return outs


def test_a_synced_loop_launches_at_once_bit_identical_to_defer_never():
    gen = torch.Generator().manual_seed(0)
    a_cpu, b_cpu = torch.randn(8, 8, generator=gen), torch.randn(8, 8, generator=gen)
    results = {}
    for mode in ("DEFER_NEVER", "DEFER_AND_FUSE"):
        a, b, acc = a_cpu.to("tpu"), b_cpu.to("tpu"), torch.zeros(8, 8, device="tpu")
        with torchtpu.eager_mode(mode):
            _synced_ops(a, b, acc, 2)  # misses, then kept one-op regions, then the streak
            deferred_before, grants_before = deferred.stats.ops_deferred, one_op_streak.grants
            outs = _synced_ops(a, b, acc, 5)
            if mode == "DEFER_AND_FUSE":
                assert one_op_streak.grants == grants_before and one_op_streak._granted  # one streak throughout
                assert deferred.stats.ops_deferred == deferred_before  # none recorded: each launched at once
        results[mode] = [o.clone().cpu() for o in outs] + [acc.cpu()]
    for never, fused in zip(results["DEFER_NEVER"], results["DEFER_AND_FUSE"], strict=True):
        assert torch.equal(never, fused)


def _into_streak(a: torch.Tensor) -> None:
    for _ in range(one_op_streak.STREAK + 2):
        a.add_(1)
        torch.tpu.synchronize()
    assert one_op_streak._granted


def test_a_second_op_before_a_synchronization_ends_the_streak():
    a_cpu = torch.arange(16.0).reshape(4, 4)
    a = a_cpu.clone().to("tpu")
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        _into_streak(a)
        a.add_(1)  # launched at once
        assert not deferred.pending()
        y = a * 2  # recorded: the streak ends
        z = y + a
        assert deferred.pending() and not one_op_streak._granted
        torch.tpu.synchronize()
        a.add_(1)  # kept as a one-op region again, not launched
        assert deferred.pending()
        torch.tpu.synchronize()
    expected_a = a_cpu + one_op_streak.STREAK + 3
    assert torch.equal(a.cpu(), expected_a + 1)
    assert torch.equal(z.cpu(), expected_a * 2 + expected_a)


def test_a_launch_never_overtakes_a_recorded_op():
    a_cpu = torch.randn(6, 5)
    a = a_cpu.clone().to("tpu")
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        _into_streak(a)
        before = a.cpu()
        total = a.sum(dim=0, keepdim=True)  # a first call: the Python kernel records it, taking the budget back
        assert deferred.pending() and not one_op_streak._granted
        a.add_(1)  # cached: must be recorded after the pending sum, not launched before it
        torch.tpu.synchronize()
    torch.testing.assert_close(total.cpu(), before.sum(dim=0, keepdim=True))  # (before + 1 would be 6 more)
    assert torch.equal(a.cpu(), before + 1)


def test_a_launched_op_raises_at_its_call_as_in_defer_never():
    x = torch.tensor([4, 6], device="tpu")
    one = torch.ones(2, dtype=torch.int64, device="tpu")
    zero = torch.zeros(2, dtype=torch.int64, device="tpu")
    with torchtpu.eager_mode("DEFER_NEVER"), pytest.raises(Exception) as never:
        torch.div(x, zero, rounding_mode="floor")
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for _ in range(one_op_streak.STREAK + 2):
            q = torch.div(x, one, rounding_mode="floor")
            torch.tpu.synchronize()
        assert one_op_streak._granted
        with pytest.raises(type(never.value), match="division by zero"):
            torch.div(x, zero, rounding_mode="floor")
        assert not deferred.pending()
        q = torch.div(x, one, rounding_mode="floor") + 1  # the device still works
    assert torch.equal(q.cpu(), torch.tensor([5, 7]))


def test_the_variable_turns_it_off():
    code = ("import torch, torchtpu\nfrom torchtpu.execution import deferred, one_op_streak\n"
            "a = torch.ones(4, device='tpu')\n"
            "with torchtpu.eager_mode('DEFER_AND_FUSE'):\n"
            "    for _ in range(6):\n        a.add_(1); torch.tpu.synchronize()\n"
            "print(one_op_streak.grants, deferred.stats.ops_deferred, a.cpu()[0].item())\n")
    env = {**os.environ, "TORCHTPU_ONE_OP_STREAK": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    grants, deferred_ops, value = out.stdout.split()
    assert grants == "0" and int(deferred_ops) >= 6 and value == "7.0"


def test_a_profiler_sees_every_op_recorded():
    a = torch.ones(8, 8, device="tpu")
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        _into_streak(a)
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
        with torch.profiler.profile(activities=activities):
            assert not one_op_streak._granted
            before = deferred.stats.ops_deferred
            for _ in range(one_op_streak.STREAK + 2):
                a.add_(1)
                torch.tpu.synchronize()
            assert deferred.stats.ops_deferred - before == one_op_streak.STREAK + 2
    assert torch.equal(a.cpu(), torch.full((8, 8), 2.0 * one_op_streak.STREAK + 5))


def test_an_index_error_of_a_launched_op_raises_at_its_call():
    table, good, bad = torch.randn(5, 3).to("tpu"), torch.tensor([0, 4]).to("tpu"), torch.tensor([0, 5]).to("tpu")
    with torchtpu.eager_mode("DEFER_NEVER"), pytest.raises(Exception) as never:
        table.index_select(0, bad)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for _ in range(one_op_streak.STREAK + 1):
            table.index_select(0, good).cpu()
        assert one_op_streak._granted
        with pytest.raises(type(never.value), match="index"):
            table.index_select(0, bad)
        assert torch.equal(table.index_select(0, good).cpu(), table.cpu()[[0, 4]])
