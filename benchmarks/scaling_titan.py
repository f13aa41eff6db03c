"""TorchTitan's llama3 debug model on 1 to 8 simulated chips and across 2 hosts: simulated per-chip throughput
beside the perfmodel's prediction for the same layout, and the host wall time per step.

    .venv-titan/bin/python benchmarks/scaling_titan.py                      # every row (about an hour here)
    .venv-titan/bin/python benchmarks/scaling_titan.py --rows 1 fsdp2x2     # some rows
    .venv-titan/bin/python benchmarks/scaling_titan.py --save t.json        # keep the rows ...
    .venv-titan/bin/python benchmarks/scaling_titan.py --replay t.json      # ... and print them again

Every row is TorchTitan's own `torchrun -m torchtitan.train` (`--module torchtpu.titan_spec --config
llama3_debugmodel_sdpa`, one process per simulated chip, `--nnodes 2` on 127.0.0.1 for the 2-host rows) with
`--sim_times_path`: each rank records per step its chip's simulated seconds and its host seconds
(`titan_spec.SimClockTrainer`). Per row: the simulated step (median over the measured steps of the slowest rank),
tokens per second per chip (the rank's local batch x seq over that step), the perfmodel's prediction
(`perfmodel.eager.predict_titan_step`, the same model, batch, layout and slice) and the ratio, the MFU per chip,
and the host wall per step (median over steps of the slowest rank) with its ratio to the 1-chip row of the same
run: how much slower the simulation gets per simulated chip on this machine (all ranks share its cores).
Weak scaling: every data-parallel group reads the same batches (the debug data set is written 8 times), TP ranks
share their group's batch. The model starts from one seed checkpoint (TorchTitan's `--checkpoint.
create-seed-checkpoint`), so every row trains the same weights.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# name: (nodes, ranks per node, TORCHTPU_* system, dp_replicate, dp_shard, tp)
ROWS: dict[str, tuple[int, int, dict[str, str], int, int, int]] = {
    "1": (1, 1, {}, 1, 1, 1),
    "fsdp2": (1, 2, {"TORCHTPU_TOPOLOGY": "1x2"}, 1, 2, 1),
    "fsdp4": (1, 4, {"TORCHTPU_TOPOLOGY": "2x2"}, 1, 4, 1),
    "fsdp8": (1, 8, {"TORCHTPU_TOPOLOGY": "2x4"}, 1, 8, 1),
    "fsdp2x2": (1, 4, {"TORCHTPU_TOPOLOGY": "2x2"}, 1, 2, 2),
    "fsdp4x2": (1, 8, {"TORCHTPU_TOPOLOGY": "2x4"}, 1, 4, 2),
    "hsdp2h2": (2, 2, {"TORCHTPU_TOPOLOGY": "1x2", "TORCHTPU_HOSTS": "2"}, 2, 2, 1),
    "hsdp2h4": (2, 4, {"TORCHTPU_TOPOLOGY": "2x2", "TORCHTPU_HOSTS": "2"}, 2, 4, 1),
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(system: dict[str, str], chip: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTPU_") or k == "TORCHTPU_CACHE_DIR"}
    return {**env, "MASTER_ADDR": "127.0.0.1", "PYTHONUNBUFFERED": "1", "LOG_RANK": "0", "TORCHTPU_CHIP": chip,
            "OMP_NUM_THREADS": "1", **system}


def _titan(args: argparse.Namespace, work: Path, name: str, extra: list[str]) -> list[str]:
    return ["-m", "torchtitan.train", "--module", "torchtpu.titan_spec", "--config", "llama3_debugmodel_sdpa",
            "--hf_assets_path", str(work / "assets" / "tokenizer"), "--dataloader.dataset_path",
            str(work / "assets" / "c4_test"), "--dump_folder", str(work / name), "--training.seq_len",
            str(args.seq), "--training.local_batch_size", str(args.batch), "--debug.seed", "0",
            "--validator.no-enable", "--metrics.log_freq", "1", *extra, "activation-checkpoint:none"]


def _launch(args: argparse.Namespace, work: Path, name: str, nodes: int, nproc: int, system: dict[str, str],
            extra: list[str]) -> None:
    port = _free_port()
    if nodes == 1:
        hows = [["--nproc-per-node", str(nproc), "--master-addr", "127.0.0.1", "--master-port", str(port)]]
    else:
        hows = [["--nnodes", str(nodes), "--nproc-per-node", str(nproc), "--node-rank", str(n), "--rdzv-backend",
                 "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-conf",
                 f"is_host={int(n == 0)},timeout=600,read_timeout=600", "--local-addr", "127.0.0.1",
                 "--max-restarts", "0"] for n in range(nodes)]
    procs = []
    for n, how in enumerate(hows):
        with open(work / f"{name}.node{n}.log", "w") as log:
            procs.append(subprocess.Popen([sys.executable, "-m", "torch.distributed.run", *how,
                                           *_titan(args, work, name, extra)], env=_env(system, args.chip),
                                          stdout=log, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + args.timeout
    for p in procs:
        try:
            p.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            p.wait()
    bad = [p.returncode for p in procs if p.returncode != 0]
    if bad:
        tail = (work / f"{name}.node0.log").read_text()[-4000:]
        raise RuntimeError(f"{name}: torchrun exited with {bad}\n{tail}")


def measure(name: str, args: argparse.Namespace, work: Path, seed: Path) -> dict[str, Any]:
    """One row: run TorchTitan on the row's layout; the slowest rank's simulated and host seconds per step."""
    nodes, nproc, system, rep, shard, tp = ROWS[name]
    times = work / f"{name}.times"
    extra = ["--training.steps", str(args.warmup + args.steps), "--checkpoint.enable",
             "--checkpoint.initial-load-path", str(seed), "--checkpoint.interval", "100000",
             "--checkpoint.no-last-save-model-only", "--sim_times_path", str(times)]
    if nodes * nproc > 1:
        extra += ["--parallelism.spmd_backend", "partial_dtensor", "--parallelism.data_parallel_replicate_degree",
                  str(rep), "--parallelism.data_parallel_shard_degree", str(shard),
                  "--parallelism.tensor_parallel_degree", str(tp)]
    t0 = time.perf_counter()
    _launch(args, work, name, nodes, nproc, system, extra)
    ranks = [json.loads((times / f"rank{r}.json").read_text())["steps"] for r in range(nodes * nproc)]
    measured = range(args.warmup, args.warmup + args.steps)
    return {"name": name, "chips": nodes * nproc, "hosts": nodes, "replicate": rep, "shard": shard, "tp": tp,
            "topology": system.get("TORCHTPU_TOPOLOGY", "1"),
            "step": statistics.median(max(r[i]["sim"] for r in ranks) for i in measured),
            "host": statistics.median(max(r[i]["host"] for r in ranks) for i in measured),
            "launches": ranks[0][args.warmup]["launches"], "wall": time.perf_counter() - t0}


def prediction(row: dict[str, Any], args: argparse.Namespace) -> Any:
    from torchtpu.perfmodel.eager import predict_titan_step

    return predict_titan_step(args.chip, replicate=row["replicate"], shard=row["shard"], tp=row["tp"],
                              topology=row["topology"], hosts=row["hosts"], per_device_batch=args.batch,
                              seq_len=args.seq)


def _print(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    from torchtpu.sim.chips import get_chip

    peak = get_chip(args.chip).bf16_flops
    base = next((r for r in rows if r["chips"] == 1), None)
    print(f"TorchTitan llama3 debugmodel (dim 256, 6 layers, vocab 2048), simulated {args.chip}, seq {args.seq}, "
          f"{args.batch} seqs per data-parallel rank, median of {args.steps} steps after {args.warmup}")
    print(f"{'row':>8} {'chips':>5} {'hosts':>5} {'rep x shard x tp':>16} {'sim ms':>8} {'pred ms':>8} "
          f"{'sim/pred':>8} {'tok/s/chip':>10} {'pred tok/s':>10} {'MFU':>6} {'launch':>6} {'pred':>6} "
          f"{'host s':>7} {'host x1':>7}")
    for row in rows:
        pred = prediction(row, args)
        tokens = args.batch * args.seq / row["tp"]  # per chip: TP ranks share their group's batch
        host_ratio = row["host"] / base["host"] if base else float("nan")
        print(f"{row['name']:>8} {row['chips']:>5} {row['hosts']:>5} "
              f"{row['replicate']:>6} x {row['shard']} x {row['tp']:<3} {row['step'] * 1e3:>8.3f} "
              f"{pred.step_seconds * 1e3:>8.3f} {row['step'] / pred.step_seconds:>8.2f} "
              f"{tokens / row['step']:>10.0f} {tokens / pred.step_seconds:>10.0f} "
              f"{pred.model_flops / row['step'] / peak:>6.2%} {row['launches']:>6} {pred.launches:>6} "
              f"{row['host']:>7.2f} {host_ratio:>7.2f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=2, help="sequences per data-parallel rank")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--chip", default=os.environ.get("TORCHTPU_CHIP", "v5e"))
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--save", help="write the measured rows to this JSON file")
    p.add_argument("--replay", help="print the rows of a --save file against the perfmodel, running nothing")
    args = p.parse_args(argv)
    if args.replay:
        saved = json.loads(Path(args.replay).read_text())
        args = argparse.Namespace(**{**vars(args), **saved["args"]})
        _print(saved["rows"], args)
        return 0
    from torchtpu.titan_spec import make_debug_assets

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        make_debug_assets(work / "assets")
        _launch(args, work, "seed", 1, 1, {}, ["--training.steps", "1", "--checkpoint.enable",
                                               "--checkpoint.create-seed-checkpoint"])
        seed = work / "seed" / "checkpoint" / "step-0"
        for name in args.rows:
            rows.append(measure(name, args, work, seed))
            r = rows[-1]
            print(f"# {name}: {r['step'] * 1e3:.3f} ms simulated, {r['host']:.2f} s host per step, "
                  f"{r['wall']:.0f} s in all", flush=True)
            if args.save:
                keep = {k: v for k, v in vars(args).items() if k not in ("save", "replay", "rows")}
                Path(args.save).write_text(json.dumps({"args": keep, "rows": rows}, indent=1))
    _print(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
