"""The rank program of tests/test_multihost.py: `torchrun --nnodes 2 --nproc-per-node 2 ... multihost_workers.py
OUTDIR` on a simulated system of 2 slices (TORCHTPU_TOPOLOGY=1x2, TORCHTPU_HOSTS=2 on v5e: each slice one host of
2 chips, the slices joined by DCN). Each rank writes OUTDIR/rank{RANK}.pt: where it runs (torchrun's variables, its
device's global chip id, slice, host), the simulated seconds charged to it by all_reduces over the groups of a
("replicate", "shard") mesh, and HSDP (`fully_shard` over that 2-D mesh) against one chip, with the helpers of
tests/fsdp_workers.py.
"""

from __future__ import annotations

import copy
import datetime
import os
import sys
import traceback
from typing import Any

HSDP_STEPS = 3
NUMEL = 256 * 1024  # an all-reduced fp32 array of 1 MiB


def _where(torch: Any) -> dict[str, Any]:
    props = torch.tpu.get_device_properties(torch.tpu.current_device())
    env = {k: int(os.environ[k]) for k in ("RANK", "LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE", "WORLD_SIZE")}
    return {"env": env, "device_count": torch.tpu.device_count(), "current": torch.tpu.current_device(),
            "chip": props.id, "slice": props.slice_index, "host": props.process_index, "coords": props.coords,
            "num_slices": props.num_slices, "num_hosts": props.num_hosts}


def _charges(torch: Any, dist: Any, mesh: Any) -> dict[str, Any]:
    """Per group: its ranks, the all_reduce's charged seconds (tpu_dist's stats) and the rank's simulated clock
    across it (synchronize before and after)."""
    import torchtpu
    from torchtpu.distributed import clock

    out: dict[str, Any] = {}
    tl = clock.timeline_of(torch.tpu.current_device())
    groups = {"shard": mesh.get_group("shard"), "replicate": mesh.get_group("replicate"), "world": dist.group.WORLD}
    for name, group in groups.items():
        x = torch.ones(NUMEL, device="tpu")
        dist.barrier()
        torch.tpu.synchronize()
        torchtpu.distributed.reset_stats()
        before = tl.wall_seconds
        work = dist.all_reduce(x, group=group, async_op=True)
        work.wait()
        torch.tpu.synchronize()
        out[name] = {"ranks": dist.get_process_group_ranks(group), "clock": tl.wall_seconds - before,
                     "charged": torchtpu.distributed.stats()["all_reduce"]["ici_seconds"],
                     "value": float(x[0].cpu()), "bytes": x.numel() * x.element_size()}
    return out


def _hsdp(torch: Any, dist: Any, mesh: Any, rank: int, world: int) -> dict[str, Any]:
    """HSDP_STEPS SGD steps of fsdp_workers' transformer, sharded over "shard" and replicated over "replicate",
    each rank on its own quarter of the batch, against one chip on the whole batch."""
    import fsdp_workers as fw
    from torch.distributed.fsdp import MixedPrecisionPolicy

    import torchtpu

    fw.STEPS = HSDP_STEPS
    torchtpu.set_precision("HIGHEST")
    x, y = fw._data(world)
    base = fw._model().to("tpu")
    single = copy.deepcopy(base)
    model = fw._shard(base, mesh, True, MixedPrecisionPolicy())
    n = x.shape[0] // world
    part = slice(rank * n, (rank + 1) * n)
    torchtpu.distributed.reset_stats()
    losses = fw._train(model, x[part].to("tpu"), y[part].to("tpu"), 1.0)
    stats = torchtpu.distributed.stats()
    single_losses = fw._train(single, x.to("tpu"), y.to("tpu"), 1.0)
    full = {k: v.full_tensor().cpu() for k, v in model.state_dict().items()}
    sharded = model.state_dict()
    return {"losses": losses, "single losses": single_losses, "full": full, "dist stats": stats,
            "single": {k: v.detach().cpu() for k, v in single.state_dict().items()},
            "local shapes": {k: tuple(v.to_local().shape) for k, v in sharded.items()},
            "placements": {k: str(v.placements) for k, v in sharded.items()},
            "mesh groups": {d: dist.get_process_group_ranks(mesh.get_group(d)) for d in ("replicate", "shard")}}


def main(outdir: str, scenarios: list[str]) -> None:
    rank = int(os.environ["RANK"])
    result: dict[str, Any] = {}
    try:
        import torch
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh

        import torchtpu  # noqa: F401

        dist.init_process_group(timeout=datetime.timedelta(seconds=60))
        torch.tpu.set_device(int(os.environ["LOCAL_RANK"]))
        result["where"] = _where(torch)
        world = dist.get_world_size()
        mesh = init_device_mesh("tpu", (2, world // 2), mesh_dim_names=("replicate", "shard"))
        if "charges" in scenarios:
            result["charges"] = _charges(torch, dist, mesh)
        if "hsdp" in scenarios:
            result["hsdp"] = _hsdp(torch, dist, mesh, rank, world)
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - written for the test to show
        result["crash"] = traceback.format_exc()
    finally:
        import torch

        torch.save(result, os.path.join(outdir, f"rank{rank}.pt"))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1], sys.argv[2].split(","))
