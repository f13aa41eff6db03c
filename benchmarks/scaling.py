"""A data-parallel (DDP over tpu_dist) training step on 1, 2, 4, 8 simulated chips, one process per chip.

    python benchmarks/scaling.py                       # small model, chips 1 2 4 8
    python benchmarks/scaling.py --hidden 1024 --layers 4 --seq 512 --chips 1 2

Per size: the simulated step time (median over the measured steps of the ranks' simulated clocks, the slowest
rank), MFU per chip (the perfmodel's model FLOPs per chip / simulated step / the chip's bf16 peak), tokens/s per
chip, and the perfmodel's prediction for the same model, batch and layout (`dp=N`, remat none), with the ratio
simulated / predicted. Each rank: a decoder-only transformer in bf16 (RMSNorm, gated MLP, causal attention, untied
output) with the perfmodel's shapes, SGD, a fixed per-chip batch (weak scaling), `torch.set_num_threads(1)`.
"""

from __future__ import annotations

import argparse
import datetime
import math
import multiprocessing
import os
import socket
import statistics
import sys
import tempfile
import time
from typing import Any


def _model(hidden: int, layers: int, heads: int, ffn: int, vocab: int) -> Any:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.n1, self.n2 = nn.RMSNorm(hidden), nn.RMSNorm(hidden)
            self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
            self.o = nn.Linear(hidden, hidden, bias=False)
            self.gate_up = nn.Linear(hidden, 2 * ffn, bias=False)
            self.down = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, s, 3, heads, -1).permute(2, 0, 3, 1, 4)
            mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
            att = torch.softmax(((q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])).masked_fill(~mask, -1e4), -1)
            x = x + self.o((att @ v).transpose(1, 2).reshape(b, s, hidden))
            g, u = self.gate_up(self.n2(x)).chunk(2, dim=-1)
            return x + self.down(F.silu(g) * u)

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.norm, self.out = nn.RMSNorm(hidden), nn.Linear(hidden, vocab, bias=False)

        def forward(self, t: torch.Tensor) -> torch.Tensor:
            h = self.emb(t)
            for blk in self.blocks:
                h = blk(h)
            return self.out(self.norm(h))

    torch.manual_seed(0)
    return Decoder()


def _rank(rank: int, world: int, port: int, args: argparse.Namespace, outdir: str) -> None:
    import torch

    torch.set_num_threads(1)
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from torchtpu.distributed import clock

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    dist.init_process_group(timeout=datetime.timedelta(seconds=args.timeout))
    model = _model(args.hidden, args.layers, args.heads, args.ffn, args.vocab).to("tpu", torch.bfloat16)
    ddp = DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g).to("tpu")
    steps = []
    tl = clock.timeline_of(0)
    for i in range(args.warmup + args.steps):
        torch.tpu.synchronize()
        t0 = tl.wall_seconds
        opt.zero_grad()
        logits = ddp(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, args.vocab).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        float(loss)
        torch.tpu.synchronize()
        if i >= args.warmup:
            steps.append(tl.wall_seconds - t0)
    import torchtpu

    torch.save({"steps": steps, "dist": torchtpu.distributed.stats()}, os.path.join(outdir, f"rank{rank}.pt"))
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _measure(world: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    import torch

    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as outdir:
        port = _free_port()
        procs = [ctx.Process(target=_rank, args=(r, world, port, args, outdir)) for r in range(world)]
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
            raise RuntimeError(f"{world} chips: ranks exited with {bad}")
        return [torch.load(os.path.join(outdir, f"rank{r}.pt")) for r in range(world)]


def _predicted(world: int, args: argparse.Namespace) -> Any:
    from torchtpu.perfmodel.config import ModelConfig
    from torchtpu.perfmodel.training import train_step

    cfg = ModelConfig(name=f"decoder-h{args.hidden}-l{args.layers}", d_model=args.hidden, n_layers=args.layers,
                      n_heads=args.heads, head_dim=args.hidden // args.heads, d_ff=args.ffn,
                      vocab_size=args.vocab, n_kv_heads=args.heads, gated_mlp=True)
    return train_step(cfg, args.chip, world, f"dp={world}", per_device_batch=args.batch, seq_len=args.seq,
                      remat="none")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chips", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=None, help="gated MLP width (default 8/3 hidden, rounded to 128)")
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=4, help="sequences per chip")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--chip", default=os.environ.get("TORCHTPU_CHIP", "v5e"))
    p.add_argument("--timeout", type=float, default=300)
    args = p.parse_args(argv)
    args.ffn = args.ffn or max(128, round(args.hidden * 8 / 3 / 128) * 128)
    os.environ.setdefault("TORCHTPU_NUM_DEVICES", "1")
    os.environ["TORCHTPU_CHIP"] = args.chip
    from torchtpu.sim.chips import get_chip

    peak = get_chip(args.chip).bf16_flops
    print(f"DDP (dp=N) on simulated {args.chip}: hidden {args.hidden}, {args.layers} layers, {args.heads} heads, "
          f"ffn {args.ffn}, vocab {args.vocab}, seq {args.seq}, {args.batch} seqs/chip, bf16, median of "
          f"{args.steps} steps after {args.warmup} warmup")
    print(f"{'chips':>5} {'sim step ms':>11} {'pred ms':>9} {'sim/pred':>8} {'sim MFU':>8} {'pred MFU':>8} "
          f"{'sim tok/s/chip':>14} {'ici ms/step':>11} {'host s':>7}")
    base = None
    for world in args.chips:
        t0 = time.perf_counter()
        ranks = _measure(world, args)
        host = time.perf_counter() - t0
        step = statistics.median(max(r["steps"][i] for r in ranks) for i in range(args.steps))
        pred = _predicted(world, args)
        flops = pred.model_flops_per_chip
        ici = sum(v.get("ici_seconds", 0.0) for v in ranks[0]["dist"].values()) / (args.steps + args.warmup)
        tok = args.batch * args.seq / step
        base = base or tok
        print(f"{world:>5} {step * 1e3:>11.3f} {pred.step_seconds * 1e3:>9.3f} {step / pred.step_seconds:>8.2f} "
              f"{flops / step / peak:>8.1%} {pred.mfu:>8.1%} {tok:>14.0f} {ici * 1e3:>11.3f} {host:>7.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
