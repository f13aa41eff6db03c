"""Search for the best training layout: given a model, chip type and chip count, which parallelism fits memory
and gives the highest predicted MFU, and, when none does, why each candidate was rejected.

Candidates (any chip count, powers of two or not): tp over the divisors of the slice up to `max_tp` that divide
the head count (3, 6, 12 included); ep over the divisors that divide the expert count (MoE); cp over the
divisors up to `max_cp` that split the sequence into 2 x cp zig-zag chunks (sequences of 8192+), in both
context-parallel modes (all-gather, ring) when `cp_modes` asks; pipeline stages pp over the divisors up to
`max_pp` that divide the layer count; fsdp x dp filling the rest of the slice (fsdp: the powers of two, the
whole rest, and the rest / 3, / 5, / 6, / 7); across slices (DCN) dcn_dp, dcn_fsdp or, with pipelining,
dcn_pp; each with the remat policies (and host offload for the policies that save activations).

Rejection reasons, counted (`SearchResult.rejected`) with one example each (`SearchResult.examples`):
'batch' (the global batch does not split evenly over the data shards), 'pipeline' (microbatches or layers
do not split), 'dcn' (no DCN bandwidth for this chip), 'memory' (does not fit HBM). Ranked by step time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchtpu.perfmodel.calibration import DEFAULT, Calibration
from torchtpu.perfmodel.config import ModelConfig, load_config
from torchtpu.perfmodel.layout import Layout, divisors
from torchtpu.perfmodel.training import StepReport, System, TrainSetup, train_step
from torchtpu.sim.chips import ChipSpec

__all__ = ["REMATS", "SearchResult", "candidate_layouts", "search"]

REMATS = ("none", "minimal", "save_qkv", "full")
REASONS = ("batch", "pipeline", "dcn", "memory")


@dataclass
class SearchResult:
    """Ranked fitting candidates (best first), how many were tried, and why the others were rejected."""

    best: StepReport | None
    ranked: list[StepReport] = field(default_factory=list)
    tried: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)

    @property
    def rejected_memory(self) -> int:
        return self.rejected.get("memory", 0)

    def reject(self, reason: str, example: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        self.examples.setdefault(reason, example)

    def explain(self) -> str:
        """One line per rejection reason: count and an example; or that nothing was rejected."""
        if not self.rejected:
            return f"{self.tried} candidates tried, none rejected"
        lines = [f"{self.tried} candidates tried, {len(self.ranked)} fit; rejected:"]
        for reason in REASONS:
            if reason in self.rejected:
                lines.append(f"  {reason}: {self.rejected[reason]} (e.g. {self.examples[reason]})")
        return "\n".join(lines)

    def to_dict(self, top: int = 5) -> dict[str, Any]:
        return {"best": self.best.to_dict() if self.best else None,
                "top": [r.to_dict() for r in self.ranked[:top]], "tried": self.tried,
                "rejected_memory": self.rejected_memory, "rejected": dict(self.rejected),
                "rejected_examples": dict(self.examples)}

    def table(self, top: int = 10) -> str:
        lines = ["| rank | layout | remat | MFU | step (s) | memory (GiB) |", "|---:|---|---|---:|---:|---:|"]
        for i, r in enumerate(self.ranked[:top], 1):
            lay = f"{r.layout} (ring)" if r.cp_mode == "ring" else str(r.layout)
            lines.append(f"| {i} | {lay} | {r.remat} | {100 * r.mfu:.1f}% | {r.step_seconds:.3f} | "
                         f"{r.memory.total / 2**30:.1f} |")
        return "\n".join(lines)


def _fsdp_choices(rest: int) -> list[int]:
    pow2 = [d for d in divisors(rest) if d & (d - 1) == 0]
    extra = [rest // k for k in (1, 3, 5, 6, 7) if rest % k == 0]
    return sorted(set(pow2 + extra))


def candidate_layouts(cfg: ModelConfig, system: System, seq_len: int, max_tp: int = 16, max_cp: int = 16,
                      max_pp: int = 1) -> list[Layout]:
    """All layouts the search tries for this model on this system (module docstring)."""
    per_slice = system.chips_per_slice
    k = system.n_slices
    divs = divisors(per_slice)
    tps = [t for t in divs if t <= max_tp and cfg.n_heads % t == 0]
    eps = [e for e in divs if cfg.is_moe and cfg.n_experts % e == 0] or [1]
    cps = [c for c in divs if c <= max_cp and (c == 1 or (seq_len >= 8192 and seq_len % (2 * c) == 0))]
    pps = [p for p in divs if p <= max_pp and cfg.n_layers % p == 0]
    dcns: list[dict[str, int]] = [{"dcn_dp": k}]
    if k > 1:
        dcns.append({"dcn_fsdp": k})
        if max_pp > 1 and cfg.n_layers % k == 0:
            dcns.append({"dcn_pp": k})
    out = []
    for tp in tps:
        for ep in eps:
            for cp in cps:
                for pp in pps:
                    inner = tp * ep * cp * pp
                    if per_slice % inner:
                        continue
                    rest = per_slice // inner
                    for fsdp in _fsdp_choices(rest):
                        for dcn in dcns:
                            if pp * dcn.get("dcn_pp", 1) > 1 and cfg.n_layers % (pp * dcn.get("dcn_pp", 1)):
                                continue
                            out.append(Layout(dp=rest // fsdp, fsdp=fsdp, tp=tp, ep=ep, cp=cp, pp=pp, **dcn))
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
    max_cp: int = 16,
    max_pp: int = 1,
    cp_modes: tuple[str, ...] = ("all_gather",),
    dcn_bw: float | None = None,
    calibration: Calibration = DEFAULT,
    **setup_kw: Any,
) -> SearchResult:
    """Best-first fitting layouts for training `model` on `n_chips` chips (see module docstring).

    `max_pp` > 1 lets the search try pipeline stages; `cp_modes=("all_gather", "ring")` both CP modes;
    `dcn_bw` sets the per-chip DCN bandwidth where the chip table has none (v4, v7x).

    >>> res = search("llama3.1-8b", "v5e", 16, global_batch=64, seq_len=2048)
    >>> res.best is not None and res.best.fits
    True
    """
    cfg = load_config(model)
    setup = setup or TrainSetup(**setup_kw)
    if setup_kw and setup is not None:
        setup = TrainSetup(**{**setup.__dict__, **setup_kw})
    system = System.make(chip, n_chips, n_slices, dcn_bw=dcn_bw)
    batch = setup.batch(n_chips)
    result = SearchResult(best=None)
    reports: list[StepReport] = []
    for layout in candidate_layouts(cfg, system, setup.seq_len, max_tp, max_cp, max_pp):
        if abs(batch / layout.data_shards - round(batch / layout.data_shards)) > 1e-9 or \
                batch < layout.data_shards:
            result.tried += 1
            result.reject("batch", f"{layout}: global batch {batch:g} over {layout.data_shards} data shards")
            continue
        modes = cp_modes if layout.cp > 1 else ("all_gather",)
        for mode in modes:
            for remat in remats:
                for offload in (False, True) if remat in ("minimal", "save_qkv", "none") else (False,):
                    s = TrainSetup(**{**setup.__dict__, "remat": remat, "offload": offload, "cp_mode": mode})
                    result.tried += 1
                    try:
                        r = train_step(cfg, system.chip, n_chips, layout, s, n_slices=system.n_slices,
                                       dcn_bw=dcn_bw, calibration=calibration)
                    except ValueError as e:
                        msg = str(e)
                        reason = "dcn" if "DCN" in msg else "pipeline" if ("microbatch" in msg or "stages" in msg
                                                                             or "layers" in msg) else "batch"
                        result.reject(reason, f"{layout}: {msg}")
                        continue
                    if not r.fits:
                        result.reject("memory", f"{layout} {r.remat}: needs {r.memory.total / 2**30:.1f} GiB of "
                                                f"{r.memory.usable / 2**30:.1f} GiB usable")
                        continue
                    reports.append(r)
    reports.sort(key=lambda r: r.step_seconds)
    result.ranked = reports
    result.best = reports[0] if reports else None
    return result
