"""FSDP2 rank programs for tests/test_fsdp.py (`python tests/fsdp_workers.py SCENARIO WORLD PORT OUTDIR TIMEOUT`,
multiprocessing spawn, one simulated chip per rank, gloo on 127.0.0.1, each rank writes OUTDIR/rank{r}.pt):
unmodified `fully_shard` on tpu_dist vs one chip, and its simulated overlap.

Every scenario trains the same small transformer (2 blocks, hidden 32) for STEPS SGD steps at HIGHEST precision
on the rank's shard of the batch (the loss is a mean over the whole batch, so the gradients equal one chip's),
and a single-chip copy on the full batch in the same process.
"""

from __future__ import annotations

import copy
import os
import sys
from typing import Any

TIMEOUT_S = 60
STEPS = 10
HIDDEN, HEADS, VOCAB, SEQ, BATCH = 32, 4, 64, 8, 4


def _model() -> Any:
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
            self.qkv, self.proj = nn.Linear(HIDDEN, 3 * HIDDEN), nn.Linear(HIDDEN, HIDDEN)
            self.mlp = nn.Sequential(nn.Linear(HIDDEN, 4 * HIDDEN), nn.GELU(), nn.Linear(4 * HIDDEN, HIDDEN))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, HEADS, HIDDEN // HEADS).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) / (HIDDEN // HEADS) ** 0.5, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, s, HIDDEN))
            return x + self.mlp(self.norm2(x))

    class Transformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(VOCAB, HIDDEN)
            self.layers = nn.ModuleList([Block(), Block()])
            self.norm = nn.LayerNorm(HIDDEN)
            self.head = nn.Linear(HIDDEN, VOCAB)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            x = self.embed(tokens)
            for layer in self.layers:
                x = layer(x)
            return self.head(self.norm(x))

    torch.manual_seed(0)
    return Transformer()


def _data(world: int) -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(1)
    n = BATCH * world
    return torch.randint(0, VOCAB, (n, SEQ), generator=g), torch.randint(0, VOCAB, (n, SEQ), generator=g)


def _train(model: Any, x: Any, y: Any, scale: float) -> list[float]:
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, VOCAB), y.reshape(-1)) * scale
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def _shard(model: Any, mesh: Any, reshard: bool, mp: Any) -> Any:
    from torch.distributed.fsdp import fully_shard

    for layer in model.layers:
        fully_shard(layer, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
    return model


def _use_own_chip(rank: int) -> None:
    """Under TORCHTPU_TOPOLOGY a process sees its host's chips: rank r drives tpu:r (LOCAL_RANK, as with CUDA)."""
    import torch

    if torch.tpu.device_count() > 1:
        torch.tpu.set_device(rank % torch.tpu.device_count())


_SINGLE: dict[bool, tuple[list[float], dict[str, Any]]] = {}  # mixed -> one chip's losses and parameters


def _run(rank: int, world: int, reshard: bool, mixed: bool, destroy: bool = True) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy

    import torchtpu

    torchtpu.set_precision("HIGHEST")
    _use_own_chip(rank)
    torchtpu.distributed.reset_stats()
    mesh = init_device_mesh("tpu", (world,))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if mixed \
        else MixedPrecisionPolicy()
    x, y = _data(world)
    base = _model().to("tpu")
    single = copy.deepcopy(base)
    before = torch.tpu.memory_allocated()
    model = _shard(base, mesh, reshard, mp)
    n = x.shape[0] // world
    part = slice(rank * n, (rank + 1) * n)
    # each rank's loss is its shard's mean / world: FSDP2 averages the gradients over ranks (reduce-scatter avg)
    losses = _train(model, x[part].to("tpu"), y[part].to("tpu"), 1.0)
    if mixed not in _SINGLE:  # one chip's run depends on the arithmetic only (not on reshard_after_forward)
        if mixed:
            single_losses = _train_mixed(single, x.to("tpu"), y.to("tpu"), world)
        else:
            single_losses = _train(single, x.to("tpu"), y.to("tpu"), 1.0)
        _SINGLE[mixed] = single_losses, {k: v.detach().cpu() for k, v in single.state_dict().items()}
    single_losses, reference = _SINGLE[mixed]
    full = {k: v.full_tensor().cpu() for k, v in model.state_dict().items()}
    # state_dict round trip: load the full (unsharded) values back into the sharded model
    from torch.distributed.tensor import distribute_tensor

    sharded = model.state_dict()
    reloaded = {k: distribute_tensor(full[k].to("tpu"), v.device_mesh, v.placements) for k, v in sharded.items()}
    model.load_state_dict(reloaded)
    again = {k: v.full_tensor().cpu() for k, v in model.state_dict().items()}
    out = {"full": full, "single": reference, "again": again, "losses": losses, "single losses": single_losses,
           "dist stats": torchtpu.distributed.stats(), "memory before shard": before,
           "local shapes": {k: tuple(v.to_local().shape) for k, v in sharded.items()},
           "device": str(next(model.parameters()).device)}
    if destroy:
        dist.destroy_process_group()
    return out


def _train_mixed(master: Any, x: Any, y: Any, world: int) -> list[float]:
    """FSDP2's arithmetic under MixedPrecisionPolicy(bf16, fp32) on one chip: per data shard a bf16 copy of the
    fp32 parameters runs forward and backward, its gradients are cast to fp32 and averaged over the shards (the
    reduce-scatter), and SGD updates the fp32 parameters. Rank 0's shard losses are returned."""
    import torch

    opt = torch.optim.SGD(master.parameters(), lr=0.1)
    n = x.shape[0] // world
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        grads: list[Any] = [None] * len(list(master.parameters()))
        for r in range(world):
            low = copy.deepcopy(master).to(torch.bfloat16)
            logits = low(x[r * n:(r + 1) * n])
            loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, VOCAB), y[r * n:(r + 1) * n]
                                                     .reshape(-1))
            loss.backward()
            if r == 0:
                losses.append(float(loss))
            for i, p in enumerate(low.parameters()):
                g = p.grad.float()
                grads[i] = g if grads[i] is None else grads[i] + g
        for p, g in zip(master.parameters(), grads):
            p.grad = g / world
        opt.step()
    return losses


def mixed(rank: int, world: int) -> dict[str, Any]:
    return _run(rank, world, reshard=True, mixed=True)


def plain(rank: int, world: int) -> dict[str, Any]:
    return _run(rank, world, reshard=True, mixed=False)


def keep_unsharded(rank: int, world: int) -> dict[str, Any]:
    return _run(rank, world, reshard=False, mixed=False)


def four(rank: int, world: int) -> dict[str, Any]:
    """The three configurations in one process (a 4-rank start is the expensive part on a small machine)."""
    import torch.distributed as dist

    out = {name: _run(rank, world, reshard=reshard, mixed=mixed, destroy=False)
           for name, reshard, mixed in (("plain", True, False), ("keep", False, False), ("mixed", True, True))}
    dist.destroy_process_group()
    return out


OVERLAP_WIDTH, OVERLAP_TOKENS, OVERLAP_LAYERS = 1024, 2048, 4


def overlap(rank: int, world: int) -> dict[str, Any]:
    """One FSDP2 training step of OVERLAP_LAYERS bias-free 1024-wide linear layers on OVERLAP_TOKENS tokens per
    rank (sized so that a layer's matmuls and its 4 MiB all-gather take similar simulated time, and the step is
    device-bound): its simulated time against the compute and collective time its records add up to."""
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    import torchtpu
    from torchtpu.distributed import clock

    mesh = init_device_mesh("tpu", (world,))
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(OVERLAP_WIDTH, OVERLAP_WIDTH, bias=False), nn.ReLU())
                            for _ in range(OVERLAP_LAYERS)]).to("tpu")
    for layer in model:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    x = torch.randn(OVERLAP_TOKENS, OVERLAP_WIDTH, device="tpu")

    def step() -> None:
        model(x).square().mean().backward()
        model.zero_grad()

    step()  # lazy initialisation and the first compiles
    tl = clock.timeline_of(0)
    out: dict[str, Any] = {}
    torch.tpu.synchronize()
    start, launches = tl.wall_seconds, tl.launch_count
    step()
    out["host"] = tl.host_seconds - start  # when the host had issued the whole step
    torch.tpu.synchronize()
    records = tl.records_since(launches)
    out["step"] = tl.wall_seconds - start
    out["compute"] = sum(r.seconds for r in records if r.op not in clock.KINDS)
    out["collectives"] = sum(r.seconds for r in records if r.op in clock.KINDS)
    out["kinds"] = sorted({r.op for r in records if r.op in clock.KINDS})
    out["dist stats"] = torchtpu.distributed.stats()
    dist.destroy_process_group()
    return out


SCENARIOS = {name: (fn, None, TIMEOUT_S) for name, fn in
             {"plain": plain, "keep": keep_unsharded, "mixed": mixed, "overlap": overlap, "four": four}.items()}


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import dist_workers

    name, n, port_arg, directory = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    print(dist_workers.launch(f"fsdp_workers:{name}", n, port_arg, directory,
                              float(sys.argv[5]) if len(sys.argv) > 5 else 600))
