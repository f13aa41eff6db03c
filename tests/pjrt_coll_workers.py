"""Rank programs for tests/test_pjrt_collectives.py, run by tests/dist_workers.py as "pjrt_coll_workers:NAME".

The same scenario runs once with TORCHTPU_DRIVER=sim and once with TORCHTPU_DRIVER=pjrt (CPU client); each rank
writes what every collective produced, and the test compares the two runs bit for bit.
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

    R = dist.ReduceOp
    out: dict[str, Any] = {}
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        d = str(dtype).rsplit(".", 1)[-1]
        for op in (R.SUM, R.MAX, R.MIN):
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
    return out


SCENARIOS = {"collectives": (collectives, "tpu_dist", 30)}
