"""The perfmodel's few global calibration constants, with why each has its value.

Everything else in the model is derived from the chip table (`torchtpu.sim.chips`), the model shape and the
layout. These constants cover what first principles cannot pin down: how close XLA-compiled code gets to the
roofline, how much asynchronous communication hides behind compute, and the per-hop latency of the data-center
network. They are the same for every chip, model and layout: there are no per-case factors. The fitted ones
were chosen once against the published MaxText results (tpu-facts section 4) by a grid search minimising the
worst relative MFU error over all 35 cases (docs/perfmodel.md, "Calibration constants"); re-fit with
`perfmodel.validation.fit_grid` when the simulator's matmul model changes.

A `Calibration` instance is an ordinary argument of the entry points, so a user can try other values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["DEFAULT", "Calibration"]


@dataclass(frozen=True)
class Calibration:
    """Global constants of the performance model (see module docstring and docs/perfmodel.md)."""

    # Achievable fraction of the roofline for XLA-compiled kernels (matmuls, fused elementwise, attention):
    # op time = roofline time / efficiency. Fitted (grid 0.80-0.92). It lumps what the analytic op costs leave
    # out: scheduling gaps between fusions, layout copies, residual pipeline bubbles at tile boundaries, and
    # HBM contention from concurrent DMA.
    efficiency: float = 0.82

    # Fraction of the shorter of (compute, communication) that runs concurrently with the longer one, for
    # asynchronous collectives (XLA async collective fusion, enabled by all MaxText recipes in tpu-facts 4).
    # Step time per layer = max(compute, comm...) + (1 - overlap) * (the rest). Fitted (grid 0.5-0.9).
    overlap: float = 0.8

    # Per-hop latency of a torus ICI collective step: T_min ~ 1 us per hop [SB-shard]. Not fitted.
    ici_hop_latency_s: float = 1e-6

    # Effective latency of one ring step of a collective over the data-center network (DCN), host network
    # stack included; paid per ring step and per collective and not hidden behind compute. Fitted (grid
    # 20-100 us) mostly by the multislice trend of tpu-facts 4e; no published number ([SB-tpus] gives DCN
    # bandwidth only). It makes per-chip throughput fall slowly with the slice count: 2(k-1) steps per
    # all-reduce.
    dcn_hop_latency_s: float = 5e-5

    # VPU operations per attention score element in a flash-attention kernel (online softmax: max, subtract,
    # exp, sum, rescale, cast), forward and backward. Counted from the algorithm, not fitted.
    softmax_vpu_ops_fwd: float = 6.0
    softmax_vpu_ops_bwd: float = 8.0

    # Fraction of HBM a plan may fill (the rest: XLA temporaries, fragmentation, runtime). Assumption.
    hbm_usable_fraction: float = 0.92

    def with_(self, **changes: float) -> Calibration:
        """A copy with some constants changed (for sensitivity studies)."""
        return replace(self, **changes)


DEFAULT = Calibration()
