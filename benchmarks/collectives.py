"""tpu_dist collectives on a simulated slice: simulated time vs the ICI formulas, and host time vs plain gloo.

    python benchmarks/collectives.py [--ranks 4] [--sizes 1K,64K,1M,...] [--reps 3]
    python benchmarks/collectives.py --ranks 4 --sizes 256M          # the largest size alone

Spawns `--ranks` processes (4: TORCHTPU_TOPOLOGY=2x2, `init_device_mesh("tpu", (2, 2))`; 2: TORCHTPU_TOPOLOGY=2)
on 127.0.0.1. For each size V (the whole logical array: the all-reduced array, the gathered result, the
reduce-scatter input, the all-to-all array) and each of all-reduce, all-gather, reduce-scatter and all-to-all, it
runs the collective on tpu tensors over a 1-D group (mesh dim "tp": 2 chips along one torus axis) and, with 4
ranks, the 2-D group (all 4 chips of the 2x2 torus), and prints

* sim us: the simulated ICI time tpu_dist charged (`torchtpu.distributed.stats()`);
* formula us: ../shared/reference/tpu-facts.md section 2, written out here on its own ([SB-shard]): all-gather
  and reduce-scatter max(T_min * hops, V (N-1)/N / W), all-reduce 2x, all-to-all 1/4x; W = the bidirectional
  link bandwidth per wrapped axis and half of it per axis without wraparound ("no wraparound typically doubles
  the time" [SB-tpus]; v5e axes below 16 do not wrap), summed over the group's axes; T_min = 1 us per hop;
* ratio: sim / formula;
* host ms: median wall time per call of the tpu_dist collective, and of the same collective on cpu tensors
  through a plain gloo group of the same ranks (same run, same sizes), and their ratio.
`torch.set_num_threads(1)` in every rank; medians over `--reps` calls after one warm-up call. Last line: each
rank's peak resident memory (`ru_maxrss`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import resource
import socket
import statistics
import sys
import tempfile
import time
import warnings
from typing import Any

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# the range, 1 KB..256 MB; 256M alone on 4 ranks took 334 s and peaked at 1.42 GB per rank (measured);
# each rank's peak resident memory is printed at the end
DEFAULT_SIZES = "1K,4K,16K,64K,256K,1M,4M,16M,64M,256M"
T_MIN = 1e-6  # per hop [SB-shard]


def _size(text: str) -> int:
    text = text.strip().upper().rstrip("B")
    return int(float(text[:-1]) * UNITS[text[-1]]) if text[-1] in UNITS else int(text)


def formula_seconds(kind: str, v: float, axes: list[tuple[int, bool]], link_bidi: float) -> float:
    """tpu-facts.md section 2 for a group spanning `axes` ((chips, wraps) per torus axis)."""
    n = 1
    for size, _ in axes:
        n *= size
    bw = sum(link_bidi if wraps else link_bidi / 2 for _, wraps in axes)
    hops = sum(size // 2 if wraps else size - 1 for size, wraps in axes)
    gather = max(T_MIN * hops, v * (n - 1) / n / bw)
    return {"all_gather": gather, "reduce_scatter": gather, "all_reduce": 2 * gather,
            "all_to_all": max(T_MIN * hops, v * (n - 1) / n / bw / 4)}[kind]


def _call(kind: str, v: int, group: Any, n: int, device: str) -> Any:
    """A function running one collective of array size `v` bytes (float32) over `group` on `device`."""
    import torch
    import torch.distributed as dist

    elems = max(v // 4 // n * n, n)
    if kind == "all_reduce":
        x = torch.ones(elems, device=device)
        return lambda: dist.all_reduce(x, group=group)
    if kind == "all_gather":
        x, out = torch.ones(elems // n, device=device), torch.empty(elems, device=device)
        return lambda: dist.all_gather_into_tensor(out, x, group=group)
    if kind == "reduce_scatter":
        x, out = torch.ones(elems, device=device), torch.empty(elems // n, device=device)
        return lambda: dist.reduce_scatter_tensor(out, x, group=group)
    x, out = torch.ones(elems // n, device=device), torch.empty(elems // n, device=device)
    return lambda: dist.all_to_all_single(out, x, group=group)


def _rank(rank: int, world: int, port: int, sizes: list[int], reps: int, outfile: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    import torchtpu.distributed
    import torchtpu.runtime

    warnings.filterwarnings("ignore", category=FutureWarning)  # reduce_scatter_tensor's rename notice
    torch.set_num_threads(1)
    dist.init_process_group(timeout=datetime.timedelta(seconds=300))
    torch.tpu.set_device(rank)
    mesh = init_device_mesh("tpu", (world // 2, 2), mesh_dim_names=("dp", "tp"))
    pairs = [list(range(i, i + 2)) for i in range(0, world, 2)]
    gloo_pairs = [dist.new_group(p, backend="gloo") for p in pairs]
    groups = {"1-D": (mesh.get_group("tp"), gloo_pairs[rank // 2], 2)}
    if world == 4:
        groups["2-D"] = (dist.group.WORLD, dist.new_group(list(range(world)), backend="gloo"), 4)
    sync = dist.new_group(list(range(world)), backend="gloo")
    rows = []
    for name, (tpu_group, gloo_group, n) in groups.items():
        for v in sizes:
            for kind in KINDS:
                walls = {}
                for device, group in (("tpu", tpu_group), ("cpu", gloo_group)):
                    # one collective's tensors alive at a time: the last ones freed, and the simulator told so
                    # now (it hears of freed storages at its next host access), before the next are made
                    fn = None
                    torchtpu.runtime.collect_freed()
                    fn = _call(kind, v, group, n, device)
                    fn()
                    torchtpu.distributed.reset_stats()
                    times = []
                    for _ in range(reps):
                        dist.barrier(group=sync)
                        start = time.perf_counter()
                        fn()
                        times.append(time.perf_counter() - start)
                    walls[device] = statistics.median(times)
                    if device == "tpu":
                        s = torchtpu.distributed.stats()[kind]
                        sim = s["ici_seconds"] / s["count"]
                        charged_v = s["bytes"] / s["count"]
                fn = None
                rows.append({"group": name, "kind": kind, "v": charged_v, "sim": sim, "tpu_wall": walls["tpu"],
                             "gloo_wall": walls["cpu"]})
    if rank == 0:
        props = torch.tpu.get_device_properties(0)
        chip = torchtpu.runtime.driver().topology.chip
        with open(outfile, "w") as f:
            json.dump({"rows": rows, "topology": props.topology, "chip": props.chip,
                       "link_bidi": chip.ici_link_bw_bidi, "wrap": {str(k): chip.has_wraparound(k) for k in (2, 4)}},
                      f)
    with open(f"{outfile}.rss{rank}", "w") as f:
        f.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))  # kilobytes on Linux
    dist.destroy_process_group()


def _fmt(v: float) -> str:
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if v >= scale:
            return f"{v / scale:g}{unit}"
    return f"{v:g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=4, choices=(2, 4))
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help="array sizes V, e.g. 1K,64K,1M (default %(default)s)")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    sizes = [_size(s) for s in args.sizes.split(",")]
    os.environ["TORCHTPU_TOPOLOGY"] = "2x2" if args.ranks == 4 else "2"
    os.environ.pop("TORCHTPU_NUM_DEVICES", None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    outfile = os.path.join(tempfile.mkdtemp(), "collectives.json")
    ctx = multiprocessing.get_context("spawn")
    start = time.perf_counter()
    procs = [ctx.Process(target=_rank, args=(r, args.ranks, port, sizes, args.reps, outfile))
             for r in range(args.ranks)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(1800)
    if any(p.exitcode != 0 for p in procs):
        for p in procs:
            if p.is_alive():
                p.kill()
        sys.exit(f"a rank failed: exit codes {[p.exitcode for p in procs]}")
    with open(outfile) as f:
        res = json.load(f)
    bidi = res["link_bidi"]
    print(f"TORCHTPU_TOPOLOGY={res['topology']} ({res['chip']}, {args.ranks} ranks, link {bidi:.3g} B/s bidi; "
          f"2-chip axes wrap: {res['wrap']['2']}); V = whole array; medians of {args.reps}")
    print(f"{'group':5} {'collective':14} {'V':>6} {'sim us':>10} {'formula us':>11} {'ratio':>6} "
          f"{'tpu_dist ms':>11} {'gloo ms':>8} {'host ratio':>10}")
    for row in res["rows"]:
        axes = [(2, res["wrap"]["2"])] * (1 if row["group"] == "1-D" else 2)
        expect = formula_seconds(row["kind"], row["v"], axes, bidi)
        print(f"{row['group']:5} {row['kind']:14} {_fmt(row['v']):>6} {row['sim'] * 1e6:10.2f} {expect * 1e6:11.2f} "
              f"{row['sim'] / expect:6.3f} {row['tpu_wall'] * 1e3:11.3f} {row['gloo_wall'] * 1e3:8.3f} "
              f"{row['tpu_wall'] / row['gloo_wall']:10.2f}")
    peaks = []
    for r in range(args.ranks):
        with open(f"{outfile}.rss{r}") as f:
            peaks.append(int(f.read()) / 1e9)
    print(f"peak resident memory per rank: {', '.join(f'{p:.2f}' for p in peaks)} GB")
    print(f"total wall {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
