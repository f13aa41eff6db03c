"""A kept one-op DEFER_AND_FUSE region flushed on the simulator runs the op's own executable on its tensors' views
(execution/one_op_direct.py), bit-identical to DEFER_NEVER and charged as DEFER_NEVER charges it; an in-place op
keeps the region path."""

from __future__ import annotations

import pytest
import torch

import torchtpu
from torchtpu.execution import deferred, one_op_direct

pytestmark = [pytest.mark.sim_only("the direct run needs buffers that are host memory"),
              pytest.mark.usefixtures("one_op_regions_kept")]


def _spy(monkeypatch) -> list:
    ran: list = []
    real = one_op_direct.run

    def run(*args):
        ran.append(real(*args))
        return ran[-1]

    monkeypatch.setattr(one_op_direct, "run", run)
    return ran


def _calls(a, b, i, h, m):
    """One op each: functional calls on strided views, with scalars, of several dtypes."""
    return [lambda: torch.add(a, b, alpha=0.5), lambda: torch.mm(a, b.t()), lambda: a.t() * 3.25,
            lambda: torch.mul(a[1:, ::2], b[:-1, 1::2]), lambda: h / 3, lambda: torch.sub(i, 7),
            lambda: torch.where(m, a, b.t()), lambda: torch.exp(b)]


def test_kept_one_op_regions_run_directly_bit_identical_to_defer_never(tpu, monkeypatch):
    gen = torch.Generator().manual_seed(0)
    a_cpu, b_cpu = torch.randn(8, 8, generator=gen), torch.randn(8, 8, generator=gen)
    i_cpu = torch.randint(-100, 100, (8, 8), generator=gen)
    results, launches = {}, {}
    ran = _spy(monkeypatch)
    for mode in ("DEFER_NEVER", "DEFER_AND_FUSE"):
        a, b, i = a_cpu.to(tpu), b_cpu.to(tpu), i_cpu.to(tpu)
        calls = _calls(a, b, i, a_cpu.to(torch.bfloat16).to(tpu), (a_cpu > 0).to(tpu))
        with torchtpu.eager_mode(mode):
            outs = []
            for _ in range(3):  # the first calls take the long way; later ones are kept, then run directly
                for call in calls:
                    outs.append(call())
                    torch.tpu.synchronize()
            assert not deferred.pending()
            torchtpu.reset_stats()
            for call in calls:  # steady state: each op a launch of its own in both modes
                outs.append(call())
                torch.tpu.synchronize()
            launches[mode] = torchtpu.stats()["launches"]
        results[mode] = [o.cpu() for o in outs]
    assert ran.count(True) >= 2 * 8
    assert launches["DEFER_NEVER"] == launches["DEFER_AND_FUSE"]
    for x, y in zip(results["DEFER_NEVER"], results["DEFER_AND_FUSE"]):
        assert x.dtype == y.dtype and x.shape == y.shape and x.stride() == y.stride()
        x, y = x.contiguous(), y.contiguous()
        assert torch.equal(x.view(torch.uint8) if x.dtype.is_floating_point else x,
                           y.view(torch.uint8) if y.dtype.is_floating_point else y)


def test_an_in_place_op_keeps_the_region_path(tpu, monkeypatch):
    a_cpu = torch.randn(8, 8)
    a, b = a_cpu.clone().to(tpu), torch.ones(8, 8).to(tpu)
    ran = _spy(monkeypatch)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for _ in range(4):
            a.add_(b, alpha=0.25)
            torch.tpu.synchronize()
    expected = a_cpu.clone()
    for _ in range(4):
        expected.add_(torch.ones(8, 8), alpha=0.25)
    assert torch.equal(a.cpu(), expected)
    assert ran and all(r is None for r in ran)  # kept and flushed, but not taken: it reads what it writes
