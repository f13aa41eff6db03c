"""What one rank of benchmarks/scaling.py runs: the decoder, its DDP / FSDP2 / TP layouts, the training step and
the analysis of the rank's simulated timeline; and the perfmodel's prediction of the same step.

Also used by tests/perfmodel/test_scaling_model.py (2 ranks, a small config).
"""

from __future__ import annotations

import datetime
import math
from typing import Any


def topology(world: int, chip: str = "v5e") -> str:
    """TORCHTPU_TOPOLOGY for `world` chips: the slice shape the perfmodel assumes for that many chips."""
    from torchtpu.perfmodel.layout import default_slice_shape

    return "x".join(str(d) for d in default_slice_shape(chip, world))


def model(hidden: int, layers: int, heads: int, ffn: int, vocab: int) -> Any:
    """A bf16-ready decoder: RMSNorm, causal attention (q, k, v, o), gated MLP (gate, up, down), untied output.
    Heads per rank come from the (possibly column-sharded) q width, so the same code runs under TP."""
    import torch
    import torch.nn.functional as F  # noqa: N812
    from torch import nn

    head_dim = hidden // heads

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.n1, self.n2 = nn.RMSNorm(hidden), nn.RMSNorm(hidden)
            self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden, bias=False) for _ in range(4))
            self.gate, self.up = nn.Linear(hidden, ffn, bias=False), nn.Linear(hidden, ffn, bias=False)
            self.down = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            h = self.n1(x)
            q, k, v = (p(h).view(b, s, -1, head_dim).transpose(1, 2) for p in (self.q, self.k, self.v))
            mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
            att = torch.softmax(((q @ k.transpose(-2, -1)) / math.sqrt(head_dim)).masked_fill(~mask, -1e4), -1)
            x = x + self.o((att @ v).transpose(1, 2).reshape(b, s, -1))
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

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


def _tp(net: Any, mesh: Any) -> None:
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    parallelize_module(net, mesh, {
        "emb": RowwiseParallel(input_layouts=Replicate()),
        "out": ColwiseParallel(output_layouts=Shard(-1), use_local_output=False),  # vocab-parallel loss
    })
    col, row = ColwiseParallel(), RowwiseParallel()
    for blk in net.blocks:
        parallelize_module(blk, mesh, {"q": col, "k": col, "v": col, "o": row, "gate": col, "up": col,
                                       "down": row})


def run_rank(rank: int, world: int, cfg: dict[str, Any], layout: str, timeout: datetime.timedelta) -> dict:
    """Build `layout` on this rank, run warmup + measured steps; the per-step simulated times and the timeline
    analysis of the last step (`analyse`). RANK/WORLD_SIZE/MASTER_* and TORCHTPU_TOPOLOGY are already set."""
    import torch
    import torch.distributed as dist

    from torchtpu.distributed import clock
    from torchtpu.distributed import topology as dist_topology

    dist.init_process_group(timeout=timeout)
    try:
        if world > 1 and dist_topology.system() is None:
            raise RuntimeError("TORCHTPU_TOPOLOGY did not reach the driver: the slice would be priced as a line")
        torch.tpu.set_device(rank % torch.tpu.device_count())
        dev = torch.tpu.current_device()
        net = model(cfg["hidden"], cfg["layers"], cfg["heads"], cfg["ffn"], cfg["vocab"]).to("tpu", torch.bfloat16)
        loss_ctx = _nullcontext
        batch, seed = cfg["batch"], rank
        run = net
        if world > 1 and layout == "ddp":
            from torch.nn.parallel import DistributedDataParallel

            run = DistributedDataParallel(net, device_ids=[dev])
        elif world > 1 and layout == "fsdp":
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.fsdp import fully_shard

            mesh = init_device_mesh("tpu", (world,))
            for blk in net.blocks:
                fully_shard(blk, mesh=mesh)
            fully_shard(net, mesh=mesh)
        elif world > 1 and layout == "tp":
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.tensor.parallel import loss_parallel

            _tp(net, init_device_mesh("tpu", (world,), mesh_dim_names=("tp",)))
            loss_ctx = loss_parallel
            batch, seed = cfg["batch"] * world, 0  # the TP group shares one batch of world x batch sequences
        # foreach=False under TP: plain norm weights beside DTensors (a DTensor rule, the same on cuda)
        opt = torch.optim.SGD(net.parameters(), lr=1e-3, foreach=None if layout != "tp" or world == 1 else False)
        g = torch.Generator().manual_seed(seed)
        tokens = torch.randint(0, cfg["vocab"], (batch, cfg["seq"] + 1), generator=g).to("tpu")
        tl = clock.timeline_of(dev)
        times: list[float] = []
        for i in range(cfg["warmup"] + cfg["steps"]):
            torch.tpu.synchronize()
            t0, n0 = tl.wall_seconds, tl.launch_count
            opt.zero_grad()
            logits = run(tokens[:, :-1])
            with loss_ctx():
                loss = torch.nn.functional.cross_entropy(logits.reshape(-1, cfg["vocab"]).float(),
                                                         tokens[:, 1:].reshape(-1))
                loss.backward()
            opt.step()
            float(loss.detach().full_tensor() if hasattr(loss, "full_tensor") else loss.detach())
            torch.tpu.synchronize()
            if i >= cfg["warmup"]:
                times.append(tl.wall_seconds - t0)
        recs = tl.records_since(n0)
        timeline = analyse(recs, t0, tl.wall_seconds)
        if cfg.get("dump"):  # the last step's launches, for a look at the schedule
            timeline["records"] = [(r.op, r.start - t0, r.end - t0, r.hbm_bytes) for r in recs]
    finally:
        dist.destroy_process_group()
    return {"steps": times, "timeline": timeline}


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _length(spans: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in spans)


def _overlap(xs: list[tuple[float, float]], ys: list[tuple[float, float]]) -> float:
    total, j = 0.0, 0
    for a, b in xs:
        while j < len(ys) and ys[j][1] <= a:
            j += 1
        k = j
        while k < len(ys) and ys[k][0] < b:
            total += min(b, ys[k][1]) - max(a, ys[k][0])
            k += 1
    return total


def analyse(records: list[Any], start: float, end: float) -> dict[str, Any]:
    """One step of a rank's simulated timeline: TensorCore busy (`compute`, and its matmul / other parts), ICI
    busy (`ici`, per collective kind), `exposed` = ICI busy while the TensorCore is idle, `idle` = neither busy,
    and the exposed ICI time after the last compute launch of the backward (`tail`)."""
    from torchtpu.distributed.clock import KINDS

    comm = [r for r in records if r.op in KINDS]
    work = [r for r in records if r.op not in KINDS]
    cu = _union([(r.start, r.end) for r in work])
    iu = _union([(r.start, r.end) for r in comm])
    kinds: dict[str, list[float]] = {}
    for r in comm:
        k = kinds.setdefault(r.op, [0, 0.0, 0.0])
        k[0] += 1
        k[1] += r.seconds
        k[2] += r.cost.ici_bytes if r.cost is not None else 0.0
    mm = sum(r.seconds for r in work if r.op in ("aten.mm.default", "aten.bmm.default", "aten.addmm.default"))
    busy = _length(cu)
    return {"wall": end - start, "compute": busy, "matmul": mm, "other": busy - mm, "ici": _length(iu),
            "exposed": _length(iu) - _overlap(iu, cu), "idle": (end - start) - _length(_union(
                [(r.start, r.end) for r in records])), "launches": len(work),
            "collectives": {k: {"count": int(c), "seconds": s, "bytes": b} for k, (c, s, b) in kinds.items()}}


def _config(cfg: dict[str, Any]) -> Any:
    from torchtpu.perfmodel.config import ModelConfig

    return ModelConfig(name=f"decoder-h{cfg['hidden']}-l{cfg['layers']}", d_model=cfg["hidden"],
                     n_layers=cfg["layers"], n_heads=cfg["heads"], head_dim=cfg["hidden"] // cfg["heads"],
                     d_ff=cfg["ffn"], vocab_size=cfg["vocab"], n_kv_heads=cfg["heads"], gated_mlp=True)


def eager_prediction(world: int, layout: str, cfg: dict[str, Any]) -> Any:
    """The perfmodel's prediction of this benchmark's step (`torchtpu.perfmodel.eager.predict_step`)."""
    from torchtpu.perfmodel.eager import predict_step

    return predict_step(_config(cfg), cfg["chip"], world, layout, per_device_batch=cfg["batch"],
                        seq_len=cfg["seq"])


def compiled_prediction(world: int, layout: str, cfg: dict[str, Any]) -> Any:
    """`perfmodel.training.train_step` for the same shapes: the model of an XLA-compiled step (fused element-wise
    work, flash attention), with this program's bf16 SGD update; shown beside the eager model."""
    from torchtpu.perfmodel.training import train_step

    lay = {"ddp": f"dp={world}", "fsdp": f"fsdp={world}", "tp": f"tp={world},sp=0"}[layout]
    return train_step(_config(cfg), cfg["chip"], world, lay, per_device_batch=cfg["batch"], seq_len=cfg["seq"],
                      remat="none", param_bytes=2, grad_bytes=2, optimizer_bytes=0)
