"""Rank programs for tests/test_premul_sum.py ("premul_workers:premul" through tests/dist_workers.py's launcher).

`ReduceOp.PREMUL_SUM` on "tpu_dist" against a plain gloo group on cpu, where the reference premultiplies by hand
(gloo has no PREMUL_SUM): each rank's input times its own factor in the input's dtype, then SUM.
"""

from __future__ import annotations

from typing import Any

from dist_workers import record_outcome

TIMEOUT_S = 20


def premul(rank: int, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    import torchtpu
    from torchtpu.distributed import clock

    ref = dist.new_group(backend="gloo")
    R = dist.ReduceOp
    out: dict[str, Any] = {}
    factor = 1.0 / 3.0 + 0.25 * rank  # each rank its own factor, as NCCL allows; not exact in bf16/fp16

    def values(dtype: torch.dtype, shape: tuple[int, ...], salt: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(1000 * rank + salt)
        return (torch.randn(shape, generator=g) * 3.7).to(dtype)

    def times(t: torch.Tensor, f: float | torch.Tensor) -> torch.Tensor:
        return t * (f.to(t.dtype) if isinstance(f, torch.Tensor) else torch.tensor(f, dtype=t.dtype))

    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        x = values(dtype, (5, 3), 1)
        got = x.to("tpu")
        dist.all_reduce(got, op=R.PREMUL_SUM(factor))
        expected = times(x, factor)
        dist.all_reduce(expected, group=ref)
        out[f"all_reduce {dtype}"] = (got.cpu(), expected)

        big = values(dtype, (4 * world, 3), 2)
        src = big.to("tpu")
        got = torch.zeros(4, 3, dtype=dtype, device="tpu")
        dist.reduce_scatter_tensor(got, src, op=R.PREMUL_SUM(factor))
        expected = torch.zeros(4, 3, dtype=dtype)
        dist.reduce_scatter_tensor(expected, times(big, factor), group=ref)
        out[f"reduce_scatter_tensor {dtype}"] = (got.cpu(), expected)
        out[f"reduce_scatter_tensor {dtype} input kept"] = (src.cpu(), big)

    f_tensor = torch.tensor([0.5 + rank], device="tpu")  # a 1-element tensor factor on the device
    x = values(torch.float32, (7,), 3)
    got = x.to("tpu")
    dist.all_reduce(got, op=R.PREMUL_SUM(f_tensor))
    expected = times(x, f_tensor.cpu())
    dist.all_reduce(expected, group=ref)
    out["all_reduce tensor factor"] = (got.cpu(), expected)

    parts = [values(torch.float32, (2, 3), 10 + j) for j in range(world)]
    got = torch.zeros(2, 3, device="tpu")
    dist.reduce_scatter(got, [p.to("tpu") for p in parts], op=R.PREMUL_SUM(factor))
    expected = torch.zeros(2, 3)
    dist.reduce_scatter(expected, [times(p, factor) for p in parts], group=ref)
    out["reduce_scatter list"] = (got.cpu(), expected)

    x = values(torch.float32, (6,), 4)
    got = x.to("tpu")
    dist.reduce(got, dst=0, op=R.PREMUL_SUM(factor))
    expected = times(x, factor)
    dist.reduce(expected, dst=0, group=ref)
    out["reduce"] = (got.cpu(), expected) if rank == 0 else (got.cpu()[:0], expected[:0])

    # the clock: the sum collective plus one elementwise pass over the input at HBM bandwidth
    t = torch.ones(1 << 18, device="tpu")  # 1 MiB
    dist.all_reduce(t, op=R.PREMUL_SUM(0.5))
    rec = torchtpu.timeline_records(0)[-1]
    chip = clock.chip_of(0)
    out["clock"] = (rec["op"], rec["seconds"], clock.collective_seconds("all_reduce", 1 << 20, world, chip),
                    2 * (1 << 20) / float(chip.hbm_bw), t[:2].cpu().tolist())

    record_outcome(out, "integer", lambda: dist.all_reduce(torch.ones(3, dtype=torch.int64, device="tpu"),
                                              op=R.PREMUL_SUM(0.5)))
    record_outcome(out, "factor dtype", lambda: dist.all_reduce(torch.ones(3, device="tpu"),
                                                   op=R.PREMUL_SUM(torch.tensor([2.0], dtype=torch.float64))))
    record_outcome(out, "factor shape", lambda: dist.reduce_scatter_tensor(torch.zeros(1, device="tpu"),
                                                              torch.ones(world, device="tpu"),
                                                              op=R.PREMUL_SUM(torch.ones(2))))
    after = torch.full((2,), float(rank + 1), device="tpu")
    dist.all_reduce(after)  # the group still works after the errors
    out["after"] = after.cpu().tolist()
    dist.destroy_process_group()
    return out


SCENARIOS = {"premul": (premul, None, TIMEOUT_S)}
