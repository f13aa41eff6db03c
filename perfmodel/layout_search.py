"""Search for the best training layout: given a model, chip type and chip count, which parallelism fits memory
and gives the highest predicted MFU.

Candidates: every power-of-two tp up to 16 (and not beyond the head count), ep over the divisors of the
expert count (MoE), cp up to 8 for sequences of 8192+, fsdp x dp filling the rest of a slice; across slices
dcn_dp (or dcn_fsdp when the model does not fit with dcn_dp); each with the remat policies (and host offload
for the policies that save activations). A candidate must shard the global batch evenly over its data axes.
The result is ranked by step time (the batch is fixed, so this is also the MFU order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchtpu.perfmodel.calibration import DEFAULT, Calibration
from torchtpu.perfmodel.config import ModelConfig, load_config
from torchtpu.perfmodel.layout import Layout, divisors
from torchtpu.perfmodel.training import StepReport, System, TrainSetup, train_step
from torchtpu.sim.chips import ChipSpec

__all__ = ["SearchResult", "candidate_layouts", "search"]

REMATS = ("none", "minimal", "save_qkv", "full")


@dataclass
class SearchResult:
    """Ranked fitting candidates (best first) and how many were tried."""

    best: StepReport | None
    ranked: list[StepReport] = field(default_factory=list)
    tried: int = 0
    rejected_memory: int = 0

    def to_dict(self, top: int = 5) -> dict[str, Any]:
        return {"best": self.best.to_dict() if self.best else None,
                "top": [r.to_dict() for r in self.ranked[:top]], "tried": self.tried,
                "rejected_memory": self.rejected_memory}

    def table(self, top: int = 10) -> str:
        lines = ["| rank | layout | remat | MFU | step (s) | memory (GiB) |", "|---:|---|---|---:|---:|---:|"]
        for i, r in enumerate(self.ranked[:top], 1):
            lines.append(f"| {i} | {r.layout} | {r.remat} | {100 * r.mfu:.1f}% | {r.step_seconds:.3f} | "
                         f"{r.memory.total / 2**30:.1f} |")
        return "\n".join(lines)


def _pow2_divisors(n: int, limit: int | None = None) -> list[int]:
    return [d for d in divisors(n) if d & (d - 1) == 0 and (limit is None or d <= limit)]


def candidate_layouts(cfg: ModelConfig, system: System, seq_len: int, max_tp: int = 16) -> list[Layout]:
    """All layouts the search tries for this model on this system."""
    per_slice = system.chips_per_slice
    out = []
    tps = [t for t in _pow2_divisors(per_slice, max_tp) if t <= cfg.n_heads]
    eps = [e for e in divisors(per_slice) if cfg.is_moe and cfg.n_experts % e == 0] or [1]
    cps = [c for c in _pow2_divisors(per_slice, 8) if seq_len >= 8192 or c == 1]
    dcns = [("dcn_dp", system.n_slices)] + ([("dcn_fsdp", system.n_slices)] if system.n_slices > 1 else [])
    for tp in tps:
        for ep in eps:
            for cp in cps:
                rest = per_slice // (tp * ep * cp) if per_slice % (tp * ep * cp) == 0 else 0
                if not rest:
                    continue
                for fsdp in _pow2_divisors(rest) + ([rest] if rest & (rest - 1) else []):
                    dp = rest // fsdp
                    for axis, k in dcns:
                        out.append(Layout(dp=dp, fsdp=fsdp, tp=tp, ep=ep, cp=cp, **{axis: k}))
    return out


def search(
    model: ModelConfig | str,
    chip: ChipSpec | str,
    n_chips: int,
    setup: TrainSetup | None = None,
    *,
    n_slices: int | None = None,
    remats: tuple[str, ...] = REMATS,
    max_tp: int = 16,
    calibration: Calibration = DEFAULT,
    **setup_kw: Any,
) -> SearchResult:
    """Best-first fitting layouts for training `model` on `n_chips` chips (see module docstring).

    >>> res = search("llama3.1-8b", "v5e", 16, global_batch=64, seq_len=2048)
    >>> res.best is not None and res.best.fits
    True
    """
    cfg = load_config(model)
    setup = setup or TrainSetup(**setup_kw)
    if setup_kw and setup is not None:
        setup = TrainSetup(**{**setup.__dict__, **setup_kw})
    system = System.make(chip, n_chips, n_slices)
    batch = setup.batch(n_chips)
    result = SearchResult(best=None)
    reports: list[StepReport] = []
    for layout in candidate_layouts(cfg, system, setup.seq_len, max_tp):
        if batch % layout.data_shards:
            continue
        for remat in remats:
            for offload in (False, True) if remat in ("minimal", "save_qkv", "none") else (False,):
                s = TrainSetup(**{**setup.__dict__, "remat": remat, "offload": offload})
                result.tried += 1
                r = train_step(cfg, system.chip, n_chips, layout, s, n_slices=system.n_slices,
                               calibration=calibration)
                if not r.fits:
                    result.rejected_memory += 1
                    continue
                reports.append(r)
    reports.sort(key=lambda r: r.step_seconds)
    result.ranked = reports
    result.best = reports[0] if reports else None
    return result
