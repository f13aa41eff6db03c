"""Where a tpu_dist group sits on the simulated slice, and what its collectives cost there.

With TORCHTPU_TOPOLOGY set, the sim driver holds a `torchtpu.sim.topology.Topology`; rank r of the default group
drives chip r (one rank per chip). A collective over a group is priced by the torus positions of its ranks'
chips (`Topology.collective_seconds`: a ring or line along one axis, a 2-D/3-D sub-torus, DCN across slices),
with the ICI hop latency of [SB-shard] and the DCN step latency of the perfmodel's calibration. Without
TORCHTPU_TOPOLOGY (or on a driver without a topology, pjrt) `collective_seconds` returns None and clock.py keeps
its one-axis-per-group model. Point-to-point messages (`p2p_seconds`) take the torus route between the two
ranks' chips (`Topology.p2p_seconds`), or a DCN step between slices.
`check_world` refuses a world larger than the topology's chips.
"""

from __future__ import annotations

from typing import Any

from torchtpu import runtime
from torchtpu.drivers.config import ConfigError
from torchtpu.perfmodel.calibration import Calibration
from torchtpu.sim.topology import Topology

ICI_HOP_S = Calibration.ici_hop_latency_s  # T_min per ICI hop [SB-shard]
DCN_HOP_S = Calibration.dcn_hop_latency_s  # per DCN ring step (perfmodel calibration, fitted)


def system() -> Topology | None:
    """The simulated system when TORCHTPU_TOPOLOGY made one (None: the default single host, or no simulator)."""
    topo = getattr(runtime.driver(), "topology", None)
    return topo if topo is not None and topo.explicit else None


def group_ranks(group: Any) -> list[int]:
    """The global ranks of process group `group` (c10d's record of it)."""
    import torch.distributed as dist

    return list(dist.get_process_group_ranks(group))


def check_world(size: int) -> None:
    """Raises ConfigError when a world of `size` ranks does not fit on the simulated system (one rank per chip)."""
    topo = system()
    if topo is not None and size > topo.chips:
        raise ConfigError(
            f"a world of {size} ranks does not fit TORCHTPU_TOPOLOGY={'x'.join(map(str, topo.shape))} "
            f"({topo.describe()}: {topo.chips} chips, one rank per chip); valid: at most {topo.chips} ranks (a "
            f"DeviceMesh of at most {topo.chips} devices), or a larger TORCHTPU_TOPOLOGY / TORCHTPU_HOSTS")


def collective_seconds(kind: str, nbytes: float, group: Any) -> float | None:
    """Simulated seconds of a collective (`torchtpu.sim.ici` kinds, or "barrier") over `group`'s chips, or None
    without a TORCHTPU_TOPOLOGY system."""
    topo = system()
    if topo is None or group is None:
        return None
    ranks = group_ranks(group)
    check_world(max(ranks) + 1)
    if kind == "barrier":
        return topo.barrier_seconds(ranks, ICI_HOP_S, DCN_HOP_S)
    return topo.collective_seconds(kind, nbytes, ranks, ICI_HOP_S, DCN_HOP_S)


def p2p_seconds(nbytes: float, group: Any, a: int, b: int) -> float | None:
    """Simulated seconds of one message of `nbytes` between group ranks `a` and `b` of `group` along the torus
    route between their chips, or None without a TORCHTPU_TOPOLOGY system."""
    topo = system()
    if topo is None or group is None:
        return None
    ranks = group_ranks(group)
    check_world(max(ranks) + 1)
    return topo.p2p_seconds(nbytes, ranks[a], ranks[b], ICI_HOP_S, DCN_HOP_S)
