"""Collective communication time on TPU ICI tori (1D/2D/3D, with or without wraparound) and over DCN: the one
place these formulas live (`CostModel.collective`, `torchtpu.perfmodel` and tpu_dist's charges all call them;
`torchtpu.perfmodel.collectives` re-exports them).

Formulas follow the scaling book [SB-shard] (tpu-facts section 2). `nbytes` is always the size of the whole
logical array (the gathered result of an all-gather, the unreduced input of a reduce-scatter, the array of an
all-reduce, the full array of an all-to-all); each chip holds `nbytes / n` of it before or after.

* all-gather / reduce-scatter over a bidirectional ring of |X| chips: T = V/W_bidi, independent of |X|;
  over several torus axes at once the bandwidths add: T = V/(sum of per-axis W). An axis without
  wraparound is a line: the end links carry twice the data, so its bandwidth counts half ("no wraparound
  typically doubles the time" [SB-tpus]). The exact ring factor (n-1)/n is kept.
* latency floor: T >= T_min * (hops), hops = |X|/2 per wrapped axis, |X|-1 per line [SB-shard].
* all-reduce = reduce-scatter + all-gather = 2x; all-to-all = all-gather / 4 on a bidirectional ring [SB-shard].
* point-to-point (send/recv) over a path of `hops` links (cut-through: the message is pipelined, so each further
  link adds its latency, not another copy): T = T_min * hops + V / B_oneway, B_oneway the one-way bandwidth of
  one link (`ChipSpec.ici_link_bw_oneway` [SB-tpus]), T_min the per-hop latency [SB-shard]; `torus_hops` is
  the shortest route on the torus (per axis |a - b|, or min(|a - b|, size - |a - b|) on an axis that wraps;
  dimension-order routing adds the axes). Between slices: one DCN step latency + V / the per-chip DCN
  bandwidth. (Derived: the latency-bandwidth form of tpu-facts section 2 applied to one path.)
* DCN (between slices): each chip has its own share of the host NICs (`ChipSpec.dcn_bw`, per chip). A ring over
  k slices costs (k-1)/k * V/B per all-gather plus one DCN hop latency per ring step; all-reduce twice that.
  The two terms are returned separately: the step model hides bandwidth time behind compute but not the
  per-step synchronisation latency (`perfmodel.training`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "COLLECTIVES",
    "Axis",
    "collective_time",
    "dcn_collective_terms",
    "dcn_collective_time",
    "p2p_time",
    "ring_hops",
    "torus_hops",
]

COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "permute")


@dataclass(frozen=True)
class Axis:
    """One physical ICI dimension (or a piece of one) spanned by a logical mesh axis.

    size: chips along it; wraparound: whether it is a closed ring; link_bw_bidi: bytes/s of one link, both
    directions together ([SB-tpus] convention, `ChipSpec.ici_link_bw_bidi`).
    """

    size: int
    wraparound: bool
    link_bw_bidi: float

    @property
    def bandwidth(self) -> float:
        """Effective all-gather bandwidth of this axis (bytes/s): full bidi on a ring, half on a line."""
        return self.link_bw_bidi if self.wraparound else self.link_bw_bidi / 2.0


def ring_hops(axis: Axis) -> int:
    """Sequential hops of one collective step chain along an axis: |X|/2 on a ring, |X|-1 on a line."""
    if axis.size <= 1:
        return 0
    return axis.size // 2 if axis.wraparound else axis.size - 1


def _check(kind: str) -> None:
    if kind not in COLLECTIVES:
        raise ValueError(f"unknown collective {kind!r}; valid: {', '.join(COLLECTIVES)}")


def collective_time(kind: str, nbytes: float, axes: Sequence[Axis], hop_latency_s: float = 1e-6) -> float:
    """Seconds for one ICI collective of a `nbytes` array over the given torus axes (max of bandwidth, latency).

    >>> a = Axis(16, True, 9e10)        # v5e full-pod axis
    >>> round(collective_time("all_gather", 9e10, [a]), 3)   # V/W * 15/16
    0.938
    """
    _check(kind)
    axes = [a for a in axes if a.size > 1]
    if not axes or nbytes <= 0:
        return 0.0
    n = math.prod(a.size for a in axes)
    bw = sum(a.bandwidth for a in axes)
    gather = nbytes * (n - 1) / n / bw
    hops = sum(ring_hops(a) for a in axes)
    lat = hop_latency_s * hops
    if kind in ("all_gather", "reduce_scatter"):
        return max(gather, lat)
    if kind == "all_reduce":
        return max(2.0 * gather, 2.0 * lat)
    if kind == "all_to_all":
        return max(gather / 4.0, lat)
    # permute: every chip sends its nbytes/n shard to a neighbour over one link direction.
    return max(nbytes / n / (axes[0].link_bw_bidi / 2.0), hop_latency_s)


def dcn_collective_terms(
    kind: str, nbytes: float, n_slices: int, dcn_bw: float | None, hop_latency_s: float, count: int = 1
) -> tuple[float, float]:
    """(bandwidth seconds, latency seconds) of `count` DCN collectives, each of a `nbytes` array, over slices.

    Ring algorithm across the k slices with the per-chip DCN bandwidth `dcn_bw` (bytes/s): bandwidth terms as
    on ICI ((k-1)/k * V/B per gather or scatter, twice for an all-reduce, V/k per chip for an all-to-all) and
    one `hop_latency_s` per ring step: 2(k-1) steps per all-reduce, k-1 otherwise. `nbytes` follows the module
    convention (whole array: the gathered result, the all-reduced array).
    """
    _check(kind)
    k = int(n_slices)
    if k <= 1 or nbytes <= 0:
        return 0.0, 0.0
    if dcn_bw is None or dcn_bw <= 0:
        raise ValueError("this chip has no DCN bandwidth in the chip table; pass dcn_bw explicitly")
    frac = (k - 1) / k
    if kind == "all_reduce":
        bw, steps = 2.0 * frac * nbytes / dcn_bw, 2 * (k - 1)
    elif kind == "all_to_all":
        bw, steps = frac * nbytes / k / dcn_bw, k - 1
    else:
        bw, steps = frac * nbytes / dcn_bw, k - 1
    return bw * count, steps * hop_latency_s * count


def dcn_collective_time(
    kind: str, nbytes: float, n_slices: int, dcn_bw: float | None, hop_latency_s: float, count: int = 1
) -> float:
    """Seconds for `count` DCN collectives (bandwidth + latency terms of `dcn_collective_terms`)."""
    return sum(dcn_collective_terms(kind, nbytes, n_slices, dcn_bw, hop_latency_s, count))


def torus_hops(a: Sequence[int], b: Sequence[int], shape: Sequence[int], wraps: Sequence[bool]) -> int:
    """Links on the shortest route between torus coordinates `a` and `b` of a torus of `shape` (module
    docstring): per axis the distance, the shorter way round where that axis wraps."""
    if not len(a) == len(b) == len(shape) == len(wraps):
        raise ValueError(f"coordinates {tuple(a)} and {tuple(b)} must both have one entry per axis of {tuple(shape)}")
    hops = 0
    for x, y, size, wrap in zip(a, b, shape, wraps):
        d = abs(int(x) - int(y))
        hops += min(d, int(size) - d) if wrap else d
    return hops


def p2p_time(nbytes: float, hops: int, link_bw_oneway: float, hop_latency_s: float = 1e-6) -> float:
    """Seconds for one point-to-point message of `nbytes` over `hops` ICI links (module docstring:
    T_min * hops + V / one-way link bandwidth); 0.0 for 0 hops (the same chip).

    >>> round(p2p_time(4.5e6, 2, 4.5e10) * 1e6, 6)    # 2 hops on v5e: 2 us + 100 us
    102.0
    """
    if hops <= 0:
        return 0.0
    return hop_latency_s * hops + max(float(nbytes), 0.0) / link_bw_oneway
