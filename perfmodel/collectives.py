"""Collective communication time on ICI tori and over DCN, for the perfmodel: the formulas themselves live in
`torchtpu.sim.ici` (one formula, one place: the simulator's `CostModel.collective`, tpu_dist's charges and the
perfmodel all use them); this module re-exports them under the perfmodel's names.

>>> round(collective_time("all_gather", 9e10, [Axis(16, True, 9e10)]), 3)   # v5e full-pod ring: V/W * 15/16
0.938
"""

from __future__ import annotations

from torchtpu.sim.ici import COLLECTIVES, Axis, collective_time, dcn_collective_terms, dcn_collective_time, ring_hops

__all__ = [
    "COLLECTIVES",
    "Axis",
    "collective_time",
    "dcn_collective_terms",
    "dcn_collective_time",
    "ring_hops",
]
