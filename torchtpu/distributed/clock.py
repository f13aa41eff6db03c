"""What a tpu_dist collective costs on the simulated ICI, and its charge to this rank's simulated clock.

Cost (seconds) per collective kind, for V = the bytes of the whole logical array (the gathered result, the
unreduced reduce-scatter input, the all-reduced array, the full all-to-all array) over the ranks of the group laid
out as one ICI axis of `n` chips (`torchtpu.perfmodel.collectives`, formulas of [SB-shard] as cited in
../shared/reference/tpu-facts.md section 2; per-link bandwidth `ChipSpec.ici_link_bw_bidi` [SB-tpus]; the axis
wraps only where `ChipSpec.has_wraparound` says so, e.g. v5e only at 16 chips [SB-tpus], else it is a line):
* all_gather, reduce_scatter: max(V·(n-1)/n / W_axis, T_min·hops); all_reduce twice that; all_to_all a quarter.
* broadcast and reduce: the all-reduce cost (derived: the bandwidth-optimal algorithms are scatter + all-gather,
  and reduce-scatter + gather, each as costly as the two halves of an all-reduce).
* gather and scatter: the all-gather cost of the gathered array (derived: the root's links carry (n-1)/n of it).
* barrier: the all-reduce latency floor (2·T_min·hops, no bytes).
* send/recv: T_min·hops + V / one-way link bandwidth (`ChipSpec.ici_link_bw_oneway` [SB-tpus];
  `torchtpu.sim.ici.p2p_time`), hops = the distance of the two group ranks on the group's axis (the shorter way
  round where it wraps).
T_min = 1 µs per hop [SB-shard].
With TORCHTPU_TOPOLOGY set, the group's chips are placed on the simulated torus instead (topology.py: rings,
lines and sub-tori of the group's axes, DCN across slices; send/recv along the shortest torus route between the
two chips, or one DCN step between slices).

Charge: a collective is one launch (the chip's host launch overhead). It runs on the device's communication
stream (`torchtpu.streams.comm_stream`, one per device, as NCCL's internal stream), which first waits for the
issuing thread's current stream (the inputs are ready there), and on the ICI engine (drivers/sim/streams.py):
it overlaps compute on other streams. Each rank's local start is max(host clock, comm stream, ICI engine); the
ranks exchange their starts (process_group.py) and every one of them runs the collective from the latest start
to that start plus the cost. The host does not wait (it only pays the launch); `charge` returns (device, end),
and the collective's `Work.wait()` (which the c10d front end calls for `async_op=False`) or its future's wait
makes the waiting thread's current stream wait until `end` (work.py). The clock is the sim driver's timeline of
the tensor's device; drivers without one (pjrt) are not charged.
"""

from __future__ import annotations

import threading
from typing import Any

from torchtpu import runtime, streams
from torchtpu._native import native
from torchtpu.distributed import topology
from torchtpu.drivers.sim.streams import ICI
from torchtpu.perfmodel.collectives import Axis, collective_time
from torchtpu.sim.chips import ChipSpec, get_chip
from torchtpu.sim.cost import CostRecord
from torchtpu.sim.ici import p2p_time, torus_hops

HOP_LATENCY_S = 1e-6  # T_min per ICI hop [SB-shard]
KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "gather", "scatter",
         "barrier", "send", "recv")
# kinds priced with another kind's formula (module docstring)
_MODELLED_AS = {"broadcast": "all_reduce", "reduce": "all_reduce", "gather": "all_gather", "scatter": "all_gather"}

_lock = threading.Lock()
_totals: dict[str, list[float]] = {}  # kind -> [count, ici seconds, wait seconds, bytes, host wall seconds]
_waited_for: dict[int, float] = {}  # group rank of the straggler -> simulated seconds this rank waited for it


def timeline_of(device: int) -> Any | None:
    """The simulated clock (a `torchtpu.sim.timeline.Timeline`) of tpu:`device`, or None for a driver without one.

    This is the one place that reaches into the driver: the sim driver keeps one Timeline per device in
    `timelines`. A sim driver without it fails loudly here rather than leaving collectives uncharged.
    """
    drv = runtime.driver()
    timelines = getattr(drv, "timelines", None)
    if timelines is None:
        if drv.name == "sim":
            raise RuntimeError("tpu_dist cannot find the sim driver's per-device clock (driver.timelines); "
                               "torchtpu/distributed/clock.py must follow the driver's new layout")
        return None
    return timelines[device]


def chip_of(device: int) -> ChipSpec:
    """The simulated chip generation of tpu:`device` (from the driver's device properties)."""
    name = runtime.driver().device_properties(device).get("chip")
    return get_chip(name)


def ici_axis(world: int, chip: ChipSpec) -> Axis:
    """The group's ranks as one ICI axis of `world` chips of generation `chip`."""
    return Axis(world, chip.has_wraparound(world), chip.ici_link_bw_bidi)


def collective_seconds(kind: str, nbytes: float, world: int, chip: ChipSpec, group: Any = None) -> float:
    """Simulated seconds of one collective of `kind` over `world` ranks (see the module docstring for V); with
    TORCHTPU_TOPOLOGY, by the torus positions of `group`'s chips (topology.py)."""
    if kind not in KINDS:
        raise ValueError(f"unknown collective {kind!r}; valid: {', '.join(KINDS)}")
    if world <= 1:
        return 0.0
    if kind in ("send", "recv"):
        return p2p_seconds(nbytes, world, chip, group, 0, 1)
    on_torus = topology.collective_seconds(_MODELLED_AS.get(kind, kind), nbytes, group)
    if on_torus is not None:
        return on_torus
    axis = ici_axis(world, chip)
    if kind == "barrier":
        return 2.0 * HOP_LATENCY_S * (world // 2 if axis.wraparound else world - 1)
    return collective_time(_MODELLED_AS.get(kind, kind), nbytes, [axis], HOP_LATENCY_S)


def p2p_seconds(nbytes: float, world: int, chip: ChipSpec, group: Any, a: int, b: int) -> float:
    """Simulated seconds of one send/recv of `nbytes` between group ranks `a` and `b` (module docstring); with
    TORCHTPU_TOPOLOGY along the torus route between their chips (topology.py)."""
    if world <= 1 or a == b:
        return 0.0
    on_torus = topology.p2p_seconds(nbytes, group, a, b)
    if on_torus is not None:
        return on_torus
    hops = torus_hops([a], [b], [world], [chip.has_wraparound(world)])
    return p2p_time(nbytes, hops, chip.ici_link_bw_oneway, HOP_LATENCY_S)


def local_start(device: int | None) -> float:
    """Issue one collective on tpu:`device` (host launch overhead; the comm stream waits for the current stream)
    and return when it can start here: max(host clock, comm stream, ICI engine). 0.0 without a simulated clock
    (cpu tensors, pjrt)."""
    tl = timeline_of(device) if device is not None else None
    if tl is None:
        return 0.0
    tl.host_issue(tl.chip.launch_overhead_s)
    tl = streams.timeline(device)
    comm = streams.comm_stream(device)
    tl.wait(comm, tl.stream_clock(native().current_stream(device)))
    return float(tl.ready(comm, ICI))


def charge(device: int | None, kind: str, start: float, seconds: float, nbytes: float, own_start: float,
           host_wall: float, name: str = "", latest: int | None = None) -> tuple[int, float] | None:
    """Run the collective on tpu:`device`'s comm stream and ICI engine from `start` (the latest rank's start) for
    `seconds`, and count it in `stats()`: `own_start` is this rank's local start (the wait is start - own_start),
    `host_wall` the real seconds the host spent moving the data, `latest` the group rank whose start it was
    (`waits()`). Returns (device, end) for the Work to wait on, None without a simulated clock."""
    wait = max(start - own_start, 0.0)
    with _lock:
        t = _totals.setdefault(kind, [0, 0.0, 0.0, 0.0, 0.0])
        t[0] += 1
        t[1] += seconds
        t[2] += wait
        t[3] += nbytes
        t[4] += host_wall
        if wait > 0.0 and latest is not None:
            _waited_for[latest] = _waited_for.get(latest, 0.0) + wait
    tl = timeline_of(device) if device is not None else None
    if tl is None:
        return None
    tl = streams.timeline(device)
    bound = "ici" if seconds >= tl.chip.launch_overhead_s else "launch"
    record = CostRecord(op=kind, flops=0.0, hbm_bytes=0.0, seconds=float(seconds), mxu_seconds=0.0,
                        vpu_seconds=0.0, hbm_seconds=0.0, bound=bound, cycles=seconds * tl.chip.clock_hz,
                        ici_seconds=float(seconds), ici_bytes=float(nbytes),
                        detail={"collective": kind, "wait_seconds": wait, "waited_for_rank": latest})
    end = tl.run_record(streams.comm_stream(device), ICI, record, name or kind, start=start)
    return device, end


def wait_current(done: tuple[int, float] | None) -> None:
    """The calling thread's current stream on the collective's device waits until the collective's end."""
    if done is None:
        return
    device, end = done
    tl = streams.timeline(device)
    if tl is not None:
        tl.wait(native().current_stream(device), end)


def stats() -> dict[str, dict[str, float]]:
    """Per collective kind since the last `reset_stats()`: count, ici_seconds (simulated), wait_seconds
    (simulated time this rank waited for the slowest one), bytes (V, see the module docstring) and
    host_wall_seconds (real time spent moving the data through gloo, host copies included)."""
    with _lock:
        return {k: {"count": int(c), "ici_seconds": s, "wait_seconds": w, "bytes": b, "host_wall_seconds": h}
                for k, (c, s, w, b, h) in _totals.items()}


def waits() -> dict[str, Any]:
    """The straggler view of this rank since the last `reset_stats()`: "collective_wait_seconds", the simulated
    seconds its collectives waited for a later rank to arrive (the sum of every kind's wait_seconds), and
    "by_rank", those seconds per group rank it waited for (the rank whose clock set the collective's start).
    Only simulated time counts: a rank that sleeps or is slow on the host delays no one's simulated clock."""
    with _lock:
        return {"collective_wait_seconds": sum(t[2] for t in _totals.values()), "by_rank": dict(_waited_for)}


def reset_stats() -> None:
    with _lock:
        _totals.clear()
        _waited_for.clear()
