"""`torchtpu topology [--json]`: the simulated system the current environment makes (TORCHTPU_CHIP,
TORCHTPU_TOPOLOGY, TORCHTPU_HOSTS, TORCHTPU_NUM_DEVICES, read by the sim driver's `topology_from_env`): chip
generation, slice shape, slices, hosts, each host's chips with their torus coordinates, and the ICI and DCN
bandwidths with the chip table's source for each. A bad variable prints the driver's error and exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

ENV = ("TORCHTPU_CHIP", "TORCHTPU_TOPOLOGY", "TORCHTPU_HOSTS", "TORCHTPU_NUM_DEVICES")


def add_topology_parser(sub: Any) -> None:
    p = sub.add_parser("topology", help="show the simulated system (slices, hosts, chips, ICI and DCN links)")
    p.add_argument("--json", action="store_true", help="print the system as one JSON object")


def describe_system(topo: Any) -> dict[str, Any]:
    """The system `topo` (a `torchtpu.sim.topology.Topology`) as plain data (the `--json` output)."""
    c = topo.chip
    hosts = []
    for h in range(topo.hosts):
        ids = list(topo.host_chips(h))
        hosts.append({"host": h, "slice": topo.slice_of(ids[0]),
                      "chips": [{"id": i, "coords": list(topo.coords(i))} for i in ids]})
    return {
        "chip": c.name, "display_name": c.display_name,
        "explicit": topo.explicit,  # False: TORCHTPU_TOPOLOGY unset, the default single host
        "slice_shape": list(topo.shape), "slices": topo.slices, "hosts_per_slice": topo.hosts_per_slice,
        "hosts": topo.hosts, "chips_per_host": topo.chips_per_host, "chips": topo.chips, "host_list": hosts,
        "ici": {"link_bw_bidi": c.ici_link_bw_bidi, "link_bw_oneway": c.ici_link_bw_oneway,
                "wraparound": [bool(c.has_wraparound(n)) for n in topo.shape],
                "source": c.sources.get("ici_link_bw_bidi", ""),
                "wraparound_source": c.sources.get("ici_wraparound_min_axis", ""),
                "joins": "the chips of one slice, across its hosts"},
        "dcn": {"bw_per_chip": c.dcn_bw, "source": c.sources.get("dcn_bw", ""), "joins": "slices",
                "used": topo.slices > 1},
        "chips_per_host_source": c.sources.get("chips_per_host", ""),
        "environment": {k: os.environ.get(k) for k in ENV},
    }


def _text(d: dict[str, Any]) -> str:
    shape = "x".join(map(str, d["slice_shape"]))
    lines = [f"chip: {d['chip']} ({d['display_name']})"]
    if d["explicit"]:
        lines.append(f"slice: {shape} ({d['slices']} slice{'s' if d['slices'] > 1 else ''}, "
                     f"{d['chips']} chips in all)")
    else:
        lines.append(f"slice: default, one host of {d['chips']} chips (TORCHTPU_TOPOLOGY unset; collectives use "
                     "one ICI axis per group)")
    lines.append(f"hosts: {d['hosts']} ({d['hosts_per_slice']} per slice), {d['chips_per_host']} chips per host "
                 f"(chip table: {d['chips_per_host_source']})")
    for h in d["host_list"]:
        chips = ", ".join(f"{c['id']} {tuple(c['coords'])}" for c in h["chips"])
        lines.append(f"  host {h['host']} (slice {h['slice']}): chips {chips}")
    ici, dcn = d["ici"], d["dcn"]
    wraps = ", ".join(f"axis {i}: {'ring' if w else 'line'}" for i, w in enumerate(ici["wraparound"]))
    lines.append(f"ICI (within a slice, across its hosts): {ici['link_bw_bidi']:.4g} B/s per link both ways, "
                 f"{ici['link_bw_oneway']:.4g} B/s one way [{ici['source']}]; {wraps} [{ici['wraparound_source']}]")
    if dcn["bw_per_chip"] is None:
        lines.append("DCN (between slices): none in the chip table for this chip (one slice only)")
    else:
        use = "" if dcn["used"] else "; unused: one slice"
        lines.append(f"DCN (between slices): {dcn['bw_per_chip']:.4g} B/s per chip [{dcn['source']}]{use}")
    return "\n".join(lines)


def run_topology(args: argparse.Namespace) -> int:
    import sys

    from torchtpu.drivers.config import ConfigError
    from torchtpu.drivers.sim.driver import topology_from_env

    try:
        topo = topology_from_env()
    except ConfigError as exc:
        print(f"torchtpu topology: {exc}", file=sys.stderr)
        return 2
    d = describe_system(topo)
    print(json.dumps(d, indent=1) if args.json else _text(d))
    return 0
