"""Roofline of one TPU chip: peak rates, critical intensities, and where an op lands (compute, HBM or ICI bound).

[SB-roof]: T_math = FLOPs / C, T_comms = bytes / BW; an op is compute-bound iff its intensity (FLOPs per byte)
exceeds the critical intensity C / BW. Three ceilings per chip, all from the chip table:
* HBM: C / hbm_bw (bf16: v5e 240, v5p 166, v6e 560 FLOP/byte; tpu-facts section 2);
* ICI: C / (bidirectional link bandwidth x links used) - per link, v5e 2189, v5p 2550 [SB-train];
* DCN: C / dcn_bw per chip.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from torchtpu.perfmodel.ops import OpCost
from torchtpu.sim.chips import CHIPS, ChipSpec, get_chip

__all__ = ["Roofline", "RooflinePoint", "chip_roofline", "roofline_table"]


@dataclass(frozen=True)
class RooflinePoint:
    """An op placed on a chip's roofline."""

    name: str
    kind: str  # OpCost.kind: matmul, attention, elementwise, moe_matmul
    intensity: float  # FLOP / HBM byte
    achieved: float  # FLOP/s at its modelled time
    attainable: float  # FLOP/s the roofline allows at this intensity
    bound: str


@dataclass(frozen=True)
class Roofline:
    """Ceilings of one chip for one MXU dtype."""

    chip: ChipSpec
    peak: float  # FLOP/s
    hbm_bw: float
    ici_bw: float  # bidirectional bytes/s of one link
    ici_links: int
    dcn_bw: float | None

    @property
    def hbm_critical_intensity(self) -> float:
        return self.peak / self.hbm_bw

    def ici_critical_intensity(self, links: int = 1) -> float:
        """FLOPs per ICI byte needed to hide communication over `links` links ([SB-train] uses one)."""
        return self.peak / (self.ici_bw * links)

    @property
    def dcn_critical_intensity(self) -> float | None:
        return self.peak / self.dcn_bw if self.dcn_bw else None

    def attainable(self, intensity: float | np.ndarray, bandwidth: float | None = None) -> float | np.ndarray:
        """Roofline FLOP/s at an arithmetic intensity (FLOP/byte) against `bandwidth` (default HBM)."""
        bw = self.hbm_bw if bandwidth is None else bandwidth
        return np.minimum(self.peak, np.asarray(intensity, dtype=float) * bw)

    def time(self, flops: float, hbm_bytes: float, ici_bytes: float = 0.0) -> float:
        """Roofline seconds: the slowest of MXU, HBM and (one link of) ICI, perfect overlap [SB-roof]."""
        return max(flops / self.peak, hbm_bytes / self.hbm_bw, ici_bytes / self.ici_bw if ici_bytes else 0.0)

    def bound(self, flops: float, hbm_bytes: float, ici_bytes: float = 0.0) -> str:
        """'compute', 'hbm' or 'ici': which ceiling sets `time`."""
        terms = {"compute": flops / self.peak, "hbm": hbm_bytes / self.hbm_bw,
                 "ici": ici_bytes / self.ici_bw if ici_bytes else 0.0}
        return max(terms, key=terms.get)  # type: ignore[arg-type]

    def place(self, ops: Iterable[OpCost]) -> list[RooflinePoint]:
        """Put ops (e.g. a training step's `StepReport.ops`) on this roofline."""
        out = []
        for op in ops:
            if op.flops <= 0 or op.hbm_bytes <= 0 or op.seconds <= 0:
                continue
            inten = op.flops / op.hbm_bytes
            out.append(RooflinePoint(op.name, op.kind, inten, op.flops / op.seconds, float(self.attainable(inten)),
                                     "compute" if inten >= self.hbm_critical_intensity else "memory"))
        return out


def chip_roofline(chip: ChipSpec | str, dtype: str = "bfloat16") -> Roofline:
    """The roofline of a chip for MXU inputs of `dtype`."""
    c = get_chip(chip)
    return Roofline(c, c.peak_flops(dtype), c.hbm_bw, c.ici_link_bw_bidi, c.ici_links, c.dcn_bw)


def roofline_table(chips: Iterable[str] | None = None) -> str:
    """Markdown table of peak, bandwidths and critical intensities for the chips of the table."""
    lines = ["| chip | bf16 TFLOP/s | HBM GB/s | HBM crit. FLOP/B | ICI crit. (1 link) | DCN crit. |",
             "|---|---:|---:|---:|---:|---:|"]
    for name in chips or CHIPS:
        r = chip_roofline(name)
        dcn = r.dcn_critical_intensity
        lines.append(f"| {r.chip.display_name} | {r.peak / 1e12:.0f} | {r.hbm_bw / 1e9:.0f} | "
                     f"{r.hbm_critical_intensity:.0f} | {r.ici_critical_intensity():.0f} | "
                     f"{'n/a' if dcn is None else f'{dcn:.0f}'} |")
    return "\n".join(lines)
