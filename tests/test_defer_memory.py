"""DEFER_AND_FUSE host memory: a training loop's per-step floats (AdamW's bias corrections, a learning-rate
schedule) are region inputs keyed by class, so after warm-up every trace and program cache stays the same size
and each step replays one cached region program (RSS over 2,000 steps: benchmarks/defer_memory.py). Results stay
bit-identical to DEFER_NEVER."""

from __future__ import annotations

import pytest
import torch

import torchtpu
from torchtpu import runtime
from torchtpu.execution import deferred, eager, region_ir
from torchtpu.models.tiny_gpt import GPTConfig, TinyGPT, synthetic_batch

SMALL = GPTConfig(vocab=32, seq=8, d_model=16, heads=2, layers=1, ffn=32)


def _caches() -> dict[str, int]:
    return {"eager traces": len(eager._cache), "region replays": len(deferred._replays),
            "traced programs": len(region_ir.PROGRAMS), "structures": len(region_ir._STRUCTURES),
            "executables": len(runtime.driver()._cache)}


def _loop(mode: str, make_opt, steps: int, schedule: bool = False, on_step=None) -> list[float]:
    torch.manual_seed(0)
    model = TinyGPT(SMALL).to("tpu")
    opt = make_opt(model.parameters())
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=1000) if schedule else None
    gen = torch.Generator().manual_seed(0)
    losses = []
    with torchtpu.eager_mode(mode):
        for step in range(steps):
            x, y = synthetic_batch(SMALL, 4, gen)
            loss = model.loss(x.to("tpu"), y.to("tpu"))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            losses.append(loss.item())
            if on_step is not None:
                on_step(step)
    return losses


OPTIMIZERS = {
    "adamw_foreach": lambda p: torch.optim.AdamW(p, lr=3e-3, foreach=True),
    "adamw_per_tensor": lambda p: torch.optim.AdamW(p, lr=3e-3, foreach=False),
    "adamw_schedule": lambda p: torch.optim.AdamW(p, lr=3e-3),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_training_loop_caches_stay_constant_after_warmup(tpu, name):
    warmup, steps = 8, 30
    seen: dict[int, dict[str, int]] = {}
    regions: dict[int, dict[str, int]] = {}

    def on_step(step: int) -> None:
        if step in (warmup - 1, warmup + steps - 1):
            seen[step], regions[step] = _caches(), dict(vars(deferred.stats))

    _loop("DEFER_AND_FUSE", OPTIMIZERS[name], warmup + steps, schedule=name == "adamw_schedule", on_step=on_step)
    before, after = seen[warmup - 1], seen[warmup + steps - 1]
    assert after == before, f"caches grew over {steps} steps: {before} -> {after}"
    flushes = regions[warmup + steps - 1]["flushes"] - regions[warmup - 1]["flushes"]
    replays = regions[warmup + steps - 1]["replays"] - regions[warmup - 1]["replays"]
    assert flushes >= steps and replays == flushes, "every step after warm-up replays a cached region program"


@pytest.mark.sim_only("bit-for-bit equal losses across eager modes are the sim's per-op evaluation")
@pytest.mark.parametrize("name", ["adamw_per_tensor", "adamw_schedule"])
def test_scalar_inputs_keep_results_bit_identical_to_defer_never(tpu, name):
    schedule = name == "adamw_schedule"
    eager_losses = _loop("DEFER_NEVER", OPTIMIZERS[name], 4, schedule)
    fused_losses = _loop("DEFER_AND_FUSE", OPTIMIZERS[name], 4, schedule)
    assert fused_losses == eager_losses


def test_region_caches_are_bounded_lrus(tpu, monkeypatch):
    monkeypatch.setattr(region_ir, "_MAX_PROGRAMS", 8)
    monkeypatch.setattr(region_ir, "_MAX_STRUCTURES", 8)
    monkeypatch.setattr(deferred, "_MAX_REPLAYS", 3)
    deferred._replays.clear()
    x = torch.ones(16, device=tpu)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        (x * 2).sum().item()
        torchtpu.reset_stats()
        for n in range(1, 12):  # a new region structure each time (other shapes)
            assert (x[:n] * 2 + 1).sum().item() == 3 * n
            assert (x * 2).sum().item() == 32  # the same region every time: the LRU keeps its program
    assert deferred.stats.replays >= 10  # (clearing the cache when full instead: about 7)
    assert len(region_ir.PROGRAMS) <= 8 and len(region_ir._STRUCTURES) <= 8 and len(deferred._replays) <= 3
    ids = list(region_ir._STRUCTURES.values())
    assert len(set(ids)) == len(ids), "a structure id was reused after an eviction"


def test_a_region_whose_scalars_change_every_step_replays_one_program(tpu):
    """Python floats, ints of Scalar arguments and wrapped ints, and 0-d CPU int tensors change every step; they
    are inputs of each op's traced program, so the region's structure and its program stay the same."""
    x = torch.arange(6.0, device=tpu)
    w = torch.zeros(6, device=tpu)
    want = torch.zeros(6)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for step in range(6):
            if step == 2:
                before = dict(vars(deferred.stats))
            w.add_(x, alpha=step + 1)
            w.mul_(0.5 + step / 8)
            w.add_(step * 3)
            w.sub_(torch.tensor(step))
            w.sum().item()  # one flush a step
            want.add_(torch.arange(6.0), alpha=step + 1).mul_(0.5 + step / 8).add_(step * 3).sub_(step)
    flushes = deferred.stats.flushes - before["flushes"]
    assert flushes == 4 and deferred.stats.replays - before["replays"] == flushes
    assert torch.equal(w.cpu(), want)
