"""A simulated TPU system: owns `Topology`, the slice shape of TORCHTPU_TOPOLOGY on one chip generation, its hosts,
every chip's place (slice, torus coordinates, host), and the ICI/DCN geometry and time of a collective over a
group of chips.

Numbers come from the chip table (`sim/data/chips.json`, sourced per field): the torus dimensions (`ici_dims`),
the pod (`pod_chips`, `pod_shape`: no slice is larger), chips per host (`chips_per_host`), link bandwidth
(`ici_link_bw_bidi`), which axes wrap (`ChipSpec.has_wraparound`) and the per-chip DCN bandwidth (`dcn_bw`).

Layout: chip `i` of a slice sits at `coords(i)`, the row-major (last axis fastest) index of `i` in the shape,
so the mesh dimension d of `init_device_mesh(..., shape)` is torus axis d. A slice of n chips is
ceil(n / chips_per_host) hosts of min(n, chips_per_host) chips; the hosts of one slice are joined by ICI (as on a
real slice), and several slices (TORCHTPU_HOSTS a multiple of a slice's hosts) are joined by DCN. Global chip id
= slice * slice_chips + local index; one rank per chip, rank r on chip r.

A group's geometry (`group_axes`): within one slice, the torus axes along which the group's chips differ; the
group is a sub-torus when its chips are the full product of contiguous runs along those axes, each axis a ring
when it covers a whole axis that wraps and a line otherwise. Any other group is modelled as a line through its
chips (the slowest regular layout: an upper bound). A group across k slices, with the same m chips in each, runs
hierarchically: the ICI collective of the whole array inside each slice, plus the DCN collective of each chip's
1/m part across the slices (`torchtpu.sim.ici` formulas for both). A point-to-point message between two chips
takes the shortest route on their slice's torus (`p2p_seconds`), or one DCN step between slices.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .chips import ChipSpec, get_chip
from .ici import Axis, collective_time, dcn_collective_time, p2p_time, ring_hops, torus_hops

__all__ = ["SHAPE_FORMS", "GroupGeometry", "Topology", "check_shape", "parse_shape"]

SHAPE_FORMS = "N, AxB or AxBxC of positive integers (e.g. 8, 2x2, 2x2x1, 4x4), within the chip's pod"


def parse_shape(raw: str) -> tuple[int, ...]:
    """'2x2' -> (2, 2); ValueError naming what is wrong otherwise."""
    parts = str(raw).strip().lower().split("x")
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"{len(parts)} axes: a torus has 1 to 3")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError("not integers separated by 'x'") from None
    if any(a < 1 for a in shape):
        raise ValueError("an axis is not a positive integer")
    return shape


def check_shape(shape: Sequence[int], chip: ChipSpec | str) -> None:
    """Raises ValueError with the reason when generation `chip` cannot have a slice of `shape` (chip table)."""
    c = get_chip(chip)
    long_axes = sorted((int(a) for a in shape if int(a) > 1), reverse=True)
    text = "x".join(map(str, shape))
    n = math.prod(int(a) for a in shape)
    if len(long_axes) > c.ici_dims:
        raise ValueError(f"{c.name} chips form a {c.ici_dims}-D torus ({c.sources.get('ici_dims', '')}), "
                         f"{text} has {len(long_axes)} axes longer than 1")
    if n > c.pod_chips:
        raise ValueError(f"{text} is {n} chips, a {c.name} pod has {c.pod_chips}")
    pod = sorted(c.pod_shape, reverse=True)
    if any(a > p for a, p in zip(long_axes, pod)):
        raise ValueError(f"{text} does not fit in the {'x'.join(map(str, c.pod_shape))} {c.name} pod")
    if n > c.chips_per_host and n % c.chips_per_host:
        raise ValueError(f"{text} is {n} chips, which do not fill whole {c.name} hosts of {c.chips_per_host} "
                         "chips")


@dataclass(frozen=True)
class GroupGeometry:
    """How a group of chips lies on the system: ICI `axes` ((size, wraps) per torus axis it spans, inside each
    slice), `per_slice` chips in each of `slices` slices, and whether it is a sub-torus (`regular`)."""

    axes: tuple[tuple[int, bool], ...]
    per_slice: int
    slices: int
    regular: bool


@dataclass(frozen=True)
class Topology:
    """`slices` slices of `shape` chips of generation `chip`. `explicit` is False for the default (TORCHTPU_TOPOLOGY
    unset): a single host of prod(shape) chips, whose collectives keep the one-axis-per-group model."""

    chip: ChipSpec
    shape: tuple[int, ...]
    slices: int = 1
    explicit: bool = True

    @classmethod
    def of(cls, chip: ChipSpec | str, shape: Sequence[int], hosts: int | None = None) -> Topology:
        """The system of `hosts` hosts (None: one slice) made of `shape` slices; ValueError naming the reason."""
        c = get_chip(chip)
        shape = tuple(int(a) for a in shape)
        check_shape(shape, c)
        topo = cls(c, shape)
        if hosts is not None:
            per = topo.hosts_per_slice
            if hosts < per or hosts % per:
                raise ValueError(f"TORCHTPU_HOSTS={hosts}: a {topo.describe()} slice is {per} host"
                                 f"{'s' if per > 1 else ''}; valid: a multiple of {per} (slices joined by DCN)")
            topo = cls(c, shape, hosts // per)
            if topo.slices > 1 and not c.dcn_bw:
                raise ValueError(f"TORCHTPU_HOSTS={hosts} makes {topo.slices} slices joined by DCN, but the chip "
                                 f"table has no DCN bandwidth for {c.name}; valid: TORCHTPU_HOSTS={per}")
        return topo

    @classmethod
    def single_host(cls, chip: ChipSpec | str, devices: int) -> Topology:
        """The default system: `devices` chips on one host, not checked against the pod (TORCHTPU_NUM_DEVICES)."""
        return cls(get_chip(chip), (int(devices),), 1, explicit=False)

    # ---- sizes ----
    @property
    def slice_chips(self) -> int:
        return math.prod(self.shape)

    @property
    def chips(self) -> int:
        """Chips of the whole system (every slice)."""
        return self.slice_chips * self.slices

    @property
    def chips_per_host(self) -> int:
        if not self.explicit:
            return self.slice_chips
        return min(self.chip.chips_per_host, self.slice_chips)

    @property
    def hosts_per_slice(self) -> int:
        return -(-self.slice_chips // self.chips_per_host)

    @property
    def hosts(self) -> int:
        return self.hosts_per_slice * self.slices

    def describe(self) -> str:
        text = f"{'x'.join(map(str, self.shape))} {self.chip.name}"
        return f"{self.slices} x {text}" if self.slices > 1 else text

    # ---- places ----
    def _check_id(self, chip_id: int) -> int:
        if not 0 <= int(chip_id) < self.chips:
            raise ValueError(f"chip {chip_id} is not in the {self.describe()} system; valid: 0..{self.chips - 1}")
        return int(chip_id)

    def coords(self, chip_id: int) -> tuple[int, ...]:
        """Torus coordinates of a chip inside its slice (row-major: last axis fastest)."""
        local = self._check_id(chip_id) % self.slice_chips
        out = []
        for size in reversed(self.shape):
            out.append(local % size)
            local //= size
        return tuple(reversed(out))

    def slice_of(self, chip_id: int) -> int:
        return self._check_id(chip_id) // self.slice_chips

    def host_of(self, chip_id: int) -> int:
        """Global host index of a chip (JAX's process index of a one-process-per-host run)."""
        cid = self._check_id(chip_id)
        return self.slice_of(cid) * self.hosts_per_slice + (cid % self.slice_chips) // self.chips_per_host

    def host_chips(self, host: int) -> range:
        """Global ids of the chips of host `host`."""
        if not 0 <= host < self.hosts:
            raise ValueError(f"host {host} is not in the {self.describe()} system; valid: 0..{self.hosts - 1}")
        s, h = divmod(host, self.hosts_per_slice)
        first = s * self.slice_chips + h * self.chips_per_host
        return range(first, min(first + self.chips_per_host, (s + 1) * self.slice_chips))

    # ---- collectives ----
    def group_axes(self, chip_ids: Iterable[int]) -> GroupGeometry:
        """Where a group of chips lies (module docstring)."""
        ids = sorted({self._check_id(i) for i in chip_ids})
        by_slice: dict[int, list[int]] = {}
        for i in ids:
            by_slice.setdefault(i // self.slice_chips, []).append(i % self.slice_chips)
        parts = list(by_slice.values())
        m = len(parts[0])
        same = all(p == parts[0] for p in parts)
        coords = [self.coords(i) for i in parts[0]]
        axes, regular = [], same
        for d, full in enumerate(self.shape):
            vals = sorted({c[d] for c in coords})
            if len(vals) == 1:
                continue
            if vals != list(range(vals[0], vals[0] + len(vals))):
                regular = False
            axes.append((len(vals), len(vals) == full and self.chip.has_wraparound(full)))
        if math.prod(a for a, _ in axes) != m:
            regular = False
        if not regular and m > 1:
            axes = [(max(len(p) for p in parts), False)]
        return GroupGeometry(tuple(axes), m, len(parts), regular)

    def ici_axes(self, geometry: GroupGeometry) -> list[Axis]:
        return [Axis(n, w, self.chip.ici_link_bw_bidi) for n, w in geometry.axes]

    def collective_seconds(self, kind: str, nbytes: float, chip_ids: Iterable[int], ici_hop_s: float,
                           dcn_hop_s: float) -> float:
        """Seconds of one collective (`torchtpu.sim.ici` kinds) of a `nbytes` array over the group (module
        docstring: ICI inside each slice plus DCN of each chip's 1/m part across slices)."""
        g = self.group_axes(chip_ids)
        t = collective_time(kind, nbytes, self.ici_axes(g), ici_hop_s)
        if g.slices > 1:
            t += dcn_collective_time(kind, nbytes / g.per_slice, g.slices, self.chip.dcn_bw, dcn_hop_s)
        return t

    def barrier_seconds(self, chip_ids: Iterable[int], ici_hop_s: float, dcn_hop_s: float) -> float:
        """The all-reduce latency floor of the group: 2 steps per ICI hop, 2(k-1) DCN steps over k slices."""
        g = self.group_axes(chip_ids)
        return 2.0 * ici_hop_s * sum(ring_hops(a) for a in self.ici_axes(g)) + 2.0 * (g.slices - 1) * dcn_hop_s

    def hops(self, a: int, b: int) -> int:
        """ICI links on the shortest route between chips `a` and `b` of one slice (wraparound where it exists)."""
        if self.slice_of(a) != self.slice_of(b):
            raise ValueError(f"chips {a} and {b} are in different slices (joined by DCN, not ICI)")
        return torus_hops(self.coords(a), self.coords(b), self.shape,
                          [self.chip.has_wraparound(n) for n in self.shape])

    def p2p_seconds(self, nbytes: float, a: int, b: int, ici_hop_s: float, dcn_hop_s: float) -> float:
        """Seconds of one message of `nbytes` from chip `a` to chip `b` (`torchtpu.sim.ici.p2p_time` over the
        torus route; between slices one DCN step latency plus the bytes at the per-chip DCN bandwidth)."""
        if self.slice_of(a) != self.slice_of(b):
            return dcn_hop_s + max(float(nbytes), 0.0) / self.chip.dcn_bw
        return p2p_time(nbytes, self.hops(a, b), self.chip.ici_link_bw_oneway, ici_hop_s)
