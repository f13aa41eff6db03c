"""Rank programs for tests/test_dtensor.py (launched by dist_workers.py as "dtensor_workers:NAME").

DTensor on a "tpu" DeviceMesh over tpu_dist: distribute_tensor with Shard/Replicate/Partial, redistribute between
them, full_tensor, and the sharding propagation of common ops, each against the unsharded op on CPU; then the
bad-input cases (tensors that differ across ranks).
"""

from __future__ import annotations

from typing import Any

from dist_workers import record_outcome

TIMEOUT_S = 30


def dtensor(rank: int, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F  # noqa: N812
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    import torchtpu

    torchtpu.set_precision("HIGHEST")
    mesh = init_device_mesh("tpu", (world,))
    out: dict[str, Any] = {"mesh": (mesh.device_type, tuple(mesh.shape))}
    g = torch.Generator().manual_seed(7)  # the same values on every rank
    x = torch.randn(8, 12, generator=g)
    w = torch.randn(12, 6, generator=g)
    ints = torch.randint(-50, 50, (8, 12), generator=g)
    idx = torch.randint(0, 10, (4, 5), generator=g)
    table = torch.randn(10, 8, generator=g)

    def keep(name: str, got: Any, expected: torch.Tensor) -> None:
        full = got.full_tensor() if isinstance(got, DTensor) else got
        out[name] = (full.cpu(), expected, [str(p) for p in got.placements] if isinstance(got, DTensor) else [])

    dx = {p: distribute_tensor(x.to("tpu"), mesh, [p]) for p in (Shard(0), Shard(1), Replicate())}
    for p, d in dx.items():
        keep(f"distribute {p}", d, x)
        out[f"local shape {p}"] = tuple(d.to_local().shape)
    di = distribute_tensor(ints.to("tpu"), mesh, [Shard(0)])
    keep("int64 distribute Shard(0)", di, ints)
    # Partial: every rank holds a summand; full_tensor reduces
    part = DTensor.from_local((ints * (rank + 1)).to("tpu"), mesh, [Partial()], run_check=False)
    keep("int64 Partial full_tensor", part, ints * sum(range(1, world + 1)))
    # redistribute between every pair
    for src, dst in ((Shard(0), Replicate()), (Shard(0), Shard(1)), (Replicate(), Shard(0)), (Shard(1), Shard(0))):
        keep(f"redistribute {src}->{dst}", dx[src].redistribute(mesh, [dst]), x)
    for dst in (Replicate(), Shard(0), Shard(1)):
        keep(f"int64 redistribute Partial->{dst}", part.redistribute(mesh, [dst]),
             ints * sum(range(1, world + 1)))
    # ops and their sharding propagation
    dw = distribute_tensor(w.to("tpu"), mesh, [Replicate()])
    keep("matmul Shard(0) @ Replicate", dx[Shard(0)] @ dw, x @ w)
    dw0 = distribute_tensor(w.to("tpu"), mesh, [Shard(0)])
    keep("matmul Shard(1) @ Shard(0) (Partial)", dx[Shard(1)] @ dw0, x @ w)
    keep("elementwise Shard(0)", dx[Shard(0)] * 2 + torch.tanh(dx[Shard(0)]), x * 2 + torch.tanh(x))
    keep("elementwise Shard(0) + Replicate", dx[Shard(0)] + dx[Replicate()], x + x)
    keep("int64 elementwise", di * 3 - di, ints * 3 - ints)
    keep("sum dim 1 of Shard(1)", dx[Shard(1)].sum(dim=1), x.sum(dim=1))
    keep("int64 sum of Shard(0)", di.sum(), ints.sum())
    keep("int64 sum dim 0 of Shard(0)", di.sum(dim=0), ints.sum(dim=0))
    keep("softmax dim 1 of Shard(0)", torch.softmax(dx[Shard(0)], dim=1), torch.softmax(x, dim=1))
    keep("softmax dim 1 of Shard(1)", torch.softmax(dx[Shard(1)], dim=1), torch.softmax(x, dim=1))
    dtab = distribute_tensor(table.to("tpu"), mesh, [Shard(1)])
    didx = distribute_tensor(idx.to("tpu"), mesh, [Replicate()])
    keep("embedding colwise Shard(1)", F.embedding(didx, dtab), F.embedding(idx, table))
    dtab0 = distribute_tensor(table.to("tpu"), mesh, [Shard(0)])
    keep("embedding rowwise Shard(0)", F.embedding(didx, dtab0), F.embedding(idx, table))
    if world == 4:  # a 2-D mesh where the world allows
        mesh2 = init_device_mesh("tpu", (2, 2), mesh_dim_names=("dp", "tp"))
        d2 = distribute_tensor(x.to("tpu"), mesh2, [Shard(0), Shard(1)])
        keep("2-D mesh Shard(0),Shard(1)", d2, x)
        keep("2-D mesh matmul", d2 @ distribute_tensor(w.to("tpu"), mesh2, [Replicate(), Shard(0)]), x @ w)
    # bad input: ranks that disagree
    record_outcome(out, "distribute shapes differ", lambda: distribute_tensor(
        torch.ones(4 + rank, 3, device="tpu"), mesh, [Replicate()]))
    record_outcome(out, "distribute dtypes differ", lambda: distribute_tensor(
        torch.ones(4, 3, device="tpu", dtype=torch.float32 if rank else torch.int32), mesh, [Shard(0)]))
    record_outcome(out, "from_local run_check shapes differ", lambda: DTensor.from_local(
        torch.ones(4 + rank, device="tpu"), mesh, [Replicate()], run_check=True))
    keep("after errors", distribute_tensor(x.to("tpu"), mesh, [Shard(0)]).redistribute(mesh, [Replicate()]), x)
    dist.destroy_process_group()
    return out


SCENARIOS = {"dtensor": (dtensor, "cpu:gloo,tpu:tpu_dist", TIMEOUT_S)}
