"""Rank programs for tests/test_pjrt_collectives.py: `torchrun ... tests/pjrt_coll_workers.py SCENARIO OUTDIR`.

Run under torchrun (RANK, WORLD_SIZE, MASTER_PORT set before torch and torchtpu load, so the pjrt driver joins
JAX's distributed runtime as it starts). The same scenario runs once with TORCHTPU_DRIVER=sim and once with
TORCHTPU_DRIVER=pjrt (CPU client); each rank writes what every collective produced to OUTDIR/rank{r}.pt, and the
test compares the two runs bit for bit.
"""

from __future__ import annotations

from typing import Any


def _values(dtype: Any, shape: tuple[int, ...], rank: int, salt: int) -> Any:
    import torch

    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 3.7).to(dtype)
    return torch.randint(-50, 50, shape, generator=g).to(dtype)


def collectives(rank: int, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    import torchtpu.distributed
    import torchtpu.runtime

    R = dist.ReduceOp
    out: dict[str, Any] = {}
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        d = str(dtype).rsplit(".", 1)[-1]
        for op in (R.SUM, R.MAX, R.MIN, R.AVG) if dtype.is_floating_point else (R.SUM, R.MAX, R.MIN):
            t = _values(dtype, (5, 3), rank, 1).to("tpu")
            dist.all_reduce(t, op=op)
            out[f"all_reduce.{op}.{d}"] = t.cpu()
        x = _values(dtype, (4, 3), rank, 2).to("tpu")
        outs = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(outs, x)
        out[f"all_gather.{d}"] = torch.stack([o.cpu() for o in outs])
        big = torch.empty((world * 4, 3), dtype=dtype, device="tpu")
        dist.all_gather_into_tensor(big, x)
        out[f"all_gather_into_tensor.{d}"] = big.cpu()
        for op in (R.SUM, R.MAX):
            src = _values(dtype, (world * 2, 3), rank, 3).to("tpu")
            small = torch.empty((2, 3), dtype=dtype, device="tpu")
            dist.reduce_scatter_tensor(small, src, op=op)
            out[f"reduce_scatter_tensor.{op}.{d}"] = small.cpu()
        pieces = [_values(dtype, (3,), rank, 10 + j).to("tpu") for j in range(world)]
        small = torch.empty(3, dtype=dtype, device="tpu")
        dist.reduce_scatter(small, pieces)
        out[f"reduce_scatter.{d}"] = small.cpu()
        b = _values(dtype, (6,), rank, 4).to("tpu")
        dist.broadcast(b, src=world - 1)
        out[f"broadcast.{d}"] = b.cpu()
        a = _values(dtype, (world * 2, 2), rank, 5).to("tpu")
        got = torch.empty_like(a)
        dist.all_to_all_single(got, a)
        out[f"all_to_all_single.{d}"] = got.cpu()
    dist.barrier()
    p = _values(torch.float32, (4,), rank, 6).to("tpu")
    dist.all_reduce(p, op=R.PRODUCT)
    out["all_reduce.PRODUCT.float32"] = p.cpu()
    out["all_reduce.charged"] = torchtpu.distributed.stats()["all_reduce"]["count"]
    coll = getattr(torchtpu.runtime.driver(), "collectives", None)
    out["xla"] = dict(coll.counts) if coll is not None else None
    return out


def xla_path(rank: int, world: int) -> dict[str, Any]:
    """On pjrt under JAX's distributed runtime: the collectives XLA ran, and the host transfers they made (none)."""
    import torch
    import torch.distributed as dist

    from torchtpu import runtime

    drv = runtime.driver()
    t = _values(torch.float32, (8, 3), rank, 1).to("tpu")
    x = _values(torch.bfloat16, (4,), rank, 2).to("tpu")
    big = torch.empty(4 * world, dtype=torch.bfloat16, device="tpu")
    small = torch.empty(4, dtype=torch.bfloat16, device="tpu")
    torch.tpu.synchronize()
    before = (drv.reads, drv.writes, dict(drv.collectives.counts))
    dist.all_reduce(t)
    dist.all_gather_into_tensor(big, x)
    dist.reduce_scatter_tensor(small, big, op=dist.ReduceOp.MAX)
    dist.broadcast(x, src=0)
    after = (drv.reads, drv.writes, dict(drv.collectives.counts))
    s = torch.arange(6, dtype=torch.int64, device="tpu") + rank  # int64: the host path (jax runs without x64)
    dist.all_reduce(s)
    return {"before": before, "after": after, "after_int64": dict(drv.collectives.counts),
            "int64": s.cpu(), "sum": t.cpu(), "process": drv.client.process}


def dead_peer(rank: int, world: int) -> dict[str, Any]:
    """Rank 1 dies after one collective; rank 0's next all_reduce must raise within the group's timeout."""
    import os
    import time

    import torch
    import torch.distributed as dist

    t = torch.ones(4, device="tpu")
    dist.all_reduce(t)
    if rank == 1:
        os._exit(0)  # gone without a word; exit code 0, so that torchrun lets the survivor run on rather than kill it
    start = time.monotonic()
    try:
        dist.all_reduce(t)
        torch.tpu.synchronize()
        return {"error": None, "seconds": time.monotonic() - start}
    except Exception as exc:  # noqa: BLE001 - the test reads it
        return {"error": f"{type(exc).__name__}: {exc}", "seconds": time.monotonic() - start}


SCENARIOS = {"collectives": (collectives, "tpu_dist", 30), "xla_path": (xla_path, "tpu_dist", 30),
             "dead_peer": (dead_peer, "tpu_dist", 10)}


if __name__ == "__main__":
    from scenario_main import run

    run(SCENARIOS)
