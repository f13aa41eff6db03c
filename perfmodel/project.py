"""From a real run to another chip: re-time per-op records on a target TPU generation.

Input: per-op records as the simulator's timeline produces them (`torchtpu.sim.timeline.TimelineRecord`, or
dicts) with the op kind, FLOPs, HBM bytes, seconds and the chip they ran on. Each record's roofline time is
recomputed on the target chip: max(FLOPs / peak, HBM bytes / HBM bandwidth, ICI bytes / link bandwidth)
[SB-roof]. With `keep_efficiency=True` the record's measured efficiency on its own chip (roofline time /
measured time) carries over, so an op that ran at 60% of its roofline is projected at 60% of the target's.
Shapes are not in the records, so MXU padding differences between generations (128 vs 256 wide) are not seen;
launch overheads (host) are not part of device seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from torchtpu.perfmodel.roofline import chip_roofline
from torchtpu.sim.chips import ChipSpec, get_chip

__all__ = ["Projection", "ProjectedOp", "project_records"]


@dataclass(frozen=True)
class ProjectedOp:
    """One record re-timed on the target chip."""

    name: str
    kind: str
    flops: float
    hbm_bytes: float
    source_seconds: float
    target_seconds: float
    target_bound: str


@dataclass
class Projection:
    """Per-op and total times on the source and target chips."""

    source_chip: str
    target_chip: str
    ops: list[ProjectedOp] = field(default_factory=list)

    @property
    def source_seconds(self) -> float:
        return sum(o.source_seconds for o in self.ops)

    @property
    def target_seconds(self) -> float:
        return sum(o.target_seconds for o in self.ops)

    @property
    def speedup(self) -> float:
        return self.source_seconds / self.target_seconds if self.target_seconds else float("inf")

    def by_kind(self) -> dict[str, tuple[float, float]]:
        """{op kind: (source seconds, target seconds)}."""
        out: dict[str, tuple[float, float]] = {}
        for o in self.ops:
            s, t = out.get(o.kind, (0.0, 0.0))
            out[o.kind] = (s + o.source_seconds, t + o.target_seconds)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"source_chip": self.source_chip, "target_chip": self.target_chip,
                "source_seconds": self.source_seconds, "target_seconds": self.target_seconds,
                "speedup": self.speedup, "by_kind": {k: {"source_seconds": s, "target_seconds": t}
                                                     for k, (s, t) in self.by_kind().items()}}


def _get(rec: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        if isinstance(rec, Mapping) and n in rec:
            return rec[n]
        if not isinstance(rec, Mapping) and hasattr(rec, n):
            return getattr(rec, n)
    return default


def project_records(
    records: Iterable[Mapping[str, Any] | Any],
    target_chip: ChipSpec | str,
    *,
    source_chip: ChipSpec | str | None = None,
    keep_efficiency: bool = False,
) -> Projection:
    """Re-time each record on `target_chip` (see module docstring). Records name their chip ('chip') unless
    `source_chip` is given; accepted keys: op|kind|op_kind, name, flops, hbm_bytes, seconds (or start/end),
    ici_bytes (optional), chip."""
    tgt = chip_roofline(get_chip(target_chip))
    proj: Projection | None = None
    for rec in records:
        chip_name = _get(rec, "chip", default=None) if source_chip is None else source_chip
        if chip_name is None:
            raise ValueError("a record has no 'chip'; pass source_chip=")
        src = chip_roofline(get_chip(chip_name))
        if proj is None:
            proj = Projection(src.chip.name, tgt.chip.name)
        flops = float(_get(rec, "flops", default=0.0) or 0.0)
        hbm = float(_get(rec, "hbm_bytes", default=0.0) or 0.0)
        ici = float(_get(rec, "ici_bytes", default=0.0) or 0.0)
        seconds = _get(rec, "seconds", default=None)
        if seconds is None:
            seconds = float(_get(rec, "end", default=0.0)) - float(_get(rec, "start", default=0.0))
        seconds = float(seconds)
        kind = str(_get(rec, "kind", "op_kind", "op", default="op"))
        name = str(_get(rec, "name", "op", default=kind))
        t_src = src.time(flops, hbm, ici)
        t_tgt = tgt.time(flops, hbm, ici)
        if keep_efficiency and t_src > 0 and seconds > 0:
            t_tgt *= max(1.0, seconds / t_src)
        elif t_src <= 0:  # nothing the roofline can see (e.g. a pure synchronisation): keep its time
            t_tgt = seconds
        proj.ops.append(ProjectedOp(name, kind, flops, hbm, seconds, t_tgt, tgt.bound(flops, hbm, ici)))
    if proj is None:
        tc = tgt.chip.name
        return Projection(get_chip(source_chip).name if source_chip else tc, tc)
    return proj
