"""A sharded training step on 1, 2, 4, 8 simulated chips under DDP, FSDP2 and TP, vs the perfmodel's prediction.

    python benchmarks/scaling.py                                  # hidden 1024, seq 256, 2 layers; 1 2 4 chips
    python benchmarks/scaling.py --chips 1 2 4 8 --layouts ddp    # the 8-chip rows (slow on a 2-core machine)
    python benchmarks/scaling.py --save runs.json                 # keep the simulated rows ...
    python benchmarks/scaling.py --replay runs.json               # ... and print them again vs the perfmodel

TorchTitan's own trainer (its llama3 debug model, FSDP2 / FSDP2 x TP / HSDP across 2 hosts, 1 to 8 chips) is
benchmarked the same way by `benchmarks/scaling_titan.py` (in .venv-titan, against `perfmodel.eager.
predict_titan_step`).

One process per chip (spawned, `TORCHTPU_TOPOLOGY` = the perfmodel's default slice shape for N chips, rank r on
chip r), tpu_dist underneath PyTorch's own DDP (`DistributedDataParallel`), FSDP2 (`fully_shard` per block and
the root, reshard after forward) and TP (`parallelize_module`: q/k/v/gate/up column-, o/down row-parallel, the
embedding row-parallel and the output column-parallel with a vocab-parallel loss, as TorchTitan does).

Per row: the simulated step (median over the measured steps of the slowest rank's simulated clock), MFU per chip
(the perfmodel's model FLOPs per chip / simulated step / bf16 peak), the perfmodel's prediction for the same
model, batch, layout and program (`perfmodel.eager.predict_step`: eager PyTorch, SGD on bf16 parameters), the
ratio simulated / predicted, and from rank 0's simulated timeline of the last step: TensorCore busy time, collective
(ICI) busy time and the exposed part of it (ICI busy while the TensorCore is idle), beside the model's figures;
last, "compiled": `perfmodel.training.train_step` for the same shapes, the model of an XLA-compiled step (for
reference: it is not this program).
The model: a decoder-only transformer in bf16 (RMSNorm, gated MLP, causal attention, untied output), SGD, a fixed
batch per chip (weak scaling; TP ranks share their group's batch), `torch.set_num_threads(1)`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scaling_steps as steps  # noqa: E402 - the model, the layouts and the timeline analysis

LAYOUTS = ("ddp", "fsdp", "tp")


def _rank(rank: int, world: int, port: int, args: argparse.Namespace, layout: str, outdir: str,
          shape: str) -> None:
    # before anything imports torchtpu: the driver reads TORCHTPU_TOPOLOGY once, when it is made
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    if world > 1:
        os.environ["TORCHTPU_TOPOLOGY"] = shape
    import torch

    torch.set_num_threads(1)
    out = steps.run_rank(rank, world, vars(args), layout, datetime.timedelta(seconds=args.timeout))
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump(out, f)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(world: int, layout: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run `world` spawned ranks of `layout`; each rank's measurements (`scaling_steps.run_rank`)."""
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as outdir:
        port, shape = _free_port(), steps.topology(world, args.chip)
        procs = [ctx.Process(target=_rank, args=(r, world, port, args, layout, outdir, shape))
                 for r in range(world)]
        for p in procs:
            p.start()
        deadline = time.monotonic() + args.timeout * 4
        for p in procs:
            p.join(max(deadline - time.monotonic(), 0.1))
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        bad = [p.exitcode for p in procs if p.exitcode != 0]
        if bad:
            raise RuntimeError(f"{layout} on {world} chips: ranks exited with {bad}")
        ranks = []
        for r in range(world):
            with open(os.path.join(outdir, f"rank{r}.json")) as f:
                ranks.append(json.load(f))
        return ranks


def summarise(world: int, layout: str, ranks: list[dict[str, Any]]) -> dict[str, Any]:
    """One row: the median over steps of the slowest rank's step, and rank 0's timeline of the last step."""
    n = len(ranks[0]["steps"])
    step = statistics.median(max(r["steps"][i] for r in ranks) for i in range(n))
    return {"chips": world, "layout": layout, "step": step, **ranks[0]["timeline"]}


def _print(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    from torchtpu.sim.chips import get_chip

    peak = get_chip(args.chip).bf16_flops
    print(f"simulated {args.chip}: hidden {args.hidden}, {args.layers} layers, {args.heads} heads, ffn {args.ffn}, "
          f"vocab {args.vocab}, seq {args.seq}, {args.batch} seqs/chip, bf16, SGD, median of {args.steps} steps "
          f"after {args.warmup} warmup")
    print(f"{'layout':>6} {'chips':>5} {'sim ms':>8} {'pred ms':>8} {'sim/pred':>8} {'sim MFU':>7} {'pred MFU':>8}"
          f" {'tc ms':>7} {'pred tc':>7} {'ici ms':>7} {'pred ici':>8} {'exp ms':>7} {'pred exp':>8} {'compiled':>8}")
    for row in rows:
        pred = steps.eager_prediction(row["chips"], row["layout"], vars(args))
        xla = steps.compiled_prediction(row["chips"], row["layout"], vars(args))
        step = row["step"]
        print(f"{row['layout']:>6} {row['chips']:>5} {step * 1e3:>8.3f} {pred.step_seconds * 1e3:>8.3f} "
              f"{step / pred.step_seconds:>8.2f} {pred.model_flops / step / peak:>7.1%} {pred.mfu:>8.1%} "
              f"{row['compute'] * 1e3:>7.3f} {pred.compute_seconds * 1e3:>7.3f} {row['ici'] * 1e3:>7.3f} "
              f"{pred.comm_seconds * 1e3:>8.3f} {row['exposed'] * 1e3:>7.3f} {pred.exposed_seconds * 1e3:>8.3f} "
              f"{xla.step_seconds * 1e3:>8.3f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chips", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=LAYOUTS)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=None, help="gated MLP width (default 8/3 hidden, rounded to 128)")
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=4, help="sequences per chip")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--chip", default=os.environ.get("TORCHTPU_CHIP", "v5e"))
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--dump", action="store_true", help="keep rank 0's launches of the last step in --save")
    p.add_argument("--save", help="write the simulated rows to this JSON file")
    p.add_argument("--replay", help="print the rows of a --save file against the perfmodel, simulating nothing")
    args = p.parse_args(argv)
    if args.replay:
        saved = json.loads(Path(args.replay).read_text())
        args = argparse.Namespace(**{**vars(args), **saved["args"], "replay": args.replay})
        _print(saved["rows"], args)
        return 0
    args.ffn = args.ffn or max(128, round(args.hidden * 8 / 3 / 128) * 128)
    os.environ["TORCHTPU_CHIP"] = args.chip
    os.environ.pop("TORCHTPU_NUM_DEVICES", None)
    rows = []
    for layout in args.layouts:
        for world in args.chips:
            if layout != "ddp" and world == 1:
                continue  # one chip: the same program as DDP's 1-chip row
            t0 = time.perf_counter()
            rows.append(summarise(world, layout, measure(world, layout, args)))
            rows[-1]["host_seconds"] = time.perf_counter() - t0
            print(f"# {layout} x{world}: {rows[-1]['step'] * 1e3:.3f} ms simulated, "
                  f"{rows[-1]['host_seconds']:.0f} s host", flush=True)
            if args.save:
                keep = {k: v for k, v in vars(args).items() if k not in ("save", "replay", "chips", "layouts")}
                Path(args.save).write_text(json.dumps({"args": keep, "rows": rows}, indent=1))
    _print(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
