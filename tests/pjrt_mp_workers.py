"""Rank programs for tests/test_pjrt_multiprocess.py: `torchrun ... tests/pjrt_mp_workers.py SCENARIO OUTDIR`.

Run under torchrun on 3 or 4 ranks with TORCHTPU_DRIVER=pjrt and TORCHTPU_PJRT_PLATFORM=cpu (JAX's real CPU PJRT
client; RANK, WORLD_SIZE and MASTER_PORT are set before torchtpu loads, so the driver joins JAX's distributed
runtime). The group is `init_process_group("cpu:gloo,tpu:tpu_dist")`: every collective runs once on tpu tensors
(tpu_dist on the pjrt driver: XLA's collectives where it can, the host path through gloo elsewhere) and once on the
same values as cpu tensors (plain gloo), and each rank records both; the test compares them bit for bit. Each rank
writes OUTDIR/rank{r}.pt. `fsdp` trains a small model under fully_shard (1-D mesh, and HSDP on a 2x2 mesh) next
to the same model on one device with the whole batch.
"""

from __future__ import annotations

import os
from typing import Any


def _values(dtype: Any, shape: tuple[int, ...], rank: int, salt: int, exact: bool = False) -> Any:
    """Per-rank values; `exact`: signed powers of two 2^-2..2^2, whose sums and products over up to 4 ranks need no
    rounding in bf16 or fp32, so that any reduction order gives the same bits (and an average one rounding)."""
    import torch

    g = torch.Generator().manual_seed(1000 * rank + salt)
    if exact:
        signs = torch.randint(0, 2, shape, generator=g) * 2 - 1
        return (signs * 2.0 ** torch.randint(-2, 3, shape, generator=g)).to(dtype)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 3.7).to(dtype)
    return torch.randint(-50, 50, shape, generator=g).to(dtype)


DTYPES = ("float32", "bfloat16", "int32")


class _Both:
    """Runs fn(tensors on tpu, group=G) and fn(same values on cpu, group=G) and keeps (tpu result, cpu result)."""

    def __init__(self) -> None:
        self.out: dict[str, tuple[list[Any], list[Any]]] = {}

    def __call__(self, name: str, fn: Any, *tensors: Any, group: Any = None) -> None:
        cpu = [[t.clone() for t in x] if isinstance(x, list) else x.clone() for x in tensors]
        tpu = [[t.to("tpu") for t in x] if isinstance(x, list) else x.to("tpu") for x in tensors]
        fn(*tpu, group=group)
        fn(*cpu, group=group)

        def flat(xs: Any) -> list:
            return [t for x in xs for t in (x if isinstance(x, list) else [x])]

        assert name not in self.out, name
        self.out[name] = ([t.cpu() for t in flat(tpu)], flat(cpu))


def _every_collective(both: _Both, rank: int, group: Any, tag: str, dtypes: tuple[str, ...] = DTYPES) -> None:
    """Every collective tpu_dist offers, on `group` (None: the world), in this rank's group-rank terms; the
    dtype-dependent ones for each of `dtypes`."""
    import torch
    import torch.distributed as dist

    R = dist.ReduceOp
    me = dist.get_rank(group) if group is not None else rank
    n = dist.get_world_size(group)
    glob = dist.get_process_group_ranks(group) if group is not None else list(range(n))
    for d in dtypes:
        dtype = getattr(torch, d)
        ops = [R.SUM, R.MAX, R.MIN, R.PRODUCT]
        ops += [R.AVG] if dtype.is_floating_point else [R.BAND, R.BOR, R.BXOR]
        for op in ops:
            both(f"{tag} all_reduce {op} {d}", lambda t, group, op=op: dist.all_reduce(t, op=op, group=group),
                 _values(dtype, (5, 3), rank, 1), group=group)
            if dtype.is_floating_point:  # values whose reduction is the same in any order
                both(f"{tag} all_reduce {op} {d} exact",
                     lambda t, group, op=op: dist.all_reduce(t, op=op, group=group),
                     _values(dtype, (5, 3), rank, 1, exact=True), group=group)
        if dtype.is_floating_point:  # FSDP2's op: the host path on pjrt; gloo has none, the reference scales first
            def premul(t: Any, group: Any) -> None:
                if t.device.type == "tpu":
                    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.375), group=group)
                else:
                    t.mul_(0.375)
                    dist.all_reduce(t, op=R.SUM, group=group)

            both(f"{tag} all_reduce PREMUL_SUM(0.375) {d}", premul, _values(dtype, (5, 3), rank, 1), group=group)
        x = _values(dtype, (4, 3), rank, 2)
        both(f"{tag} all_gather {d}", lambda t, o, group: dist.all_gather(o, t, group=group), x,
             [torch.zeros_like(x) for _ in range(n)], group=group)
        both(f"{tag} all_gather_into_tensor {d}",
             lambda t, o, group: dist.all_gather_into_tensor(o, t, group=group), x,
             torch.zeros((4 * n, 3), dtype=dtype), group=group)
        for op in (R.SUM, R.MAX) + ((R.AVG,) if dtype.is_floating_point else ()):
            for exact in (False, True) if dtype.is_floating_point else (False,):
                both(f"{tag} reduce_scatter_tensor {op} {d}" + " exact" * exact,
                     lambda t, o, group, op=op: dist.reduce_scatter_tensor(o, t, op=op, group=group),
                     _values(dtype, (2 * n, 3), rank, 3, exact), torch.zeros((2, 3), dtype=dtype), group=group)
        for exact in (False, True) if dtype.is_floating_point else (False,):
            both(f"{tag} reduce_scatter {d}" + " exact" * exact,
                 lambda ins, o, group: dist.reduce_scatter(o, ins, group=group),
                 [_values(dtype, (3,), rank, 10 + j, exact) for j in range(n)], torch.zeros(3, dtype=dtype),
                 group=group)
        for root in range(n):
            both(f"{tag} broadcast root {root} {d}",
                 lambda t, group, root=root: dist.broadcast(t, src=glob[root], group=group),
                 _values(dtype, (6,), rank, 4), group=group)
        both(f"{tag} all_to_all_single even {d}",
             lambda t, o, group: dist.all_to_all_single(o, t, group=group),
             _values(dtype, (2 * n, 2), rank, 5), torch.zeros((2 * n, 2), dtype=dtype), group=group)
    # uneven all-to-all: group rank i sends i + j + 1 rows to group rank j
    send = [me + j + 1 for j in range(n)]
    recv = [j + me + 1 for j in range(n)]
    both(f"{tag} all_to_all_single uneven",
         lambda t, o, group: dist.all_to_all_single(o, t, recv, send, group=group),
         _values(torch.float32, (sum(send), 2), rank, 6), torch.zeros(sum(recv), 2), group=group)

    def a2a_list(ins: list, outs: list, group: Any) -> None:
        if ins[0].device.type == "tpu":
            dist.all_to_all(outs, ins, group=group)
        else:  # gloo's list all-to-all needs equal sizes: the reference is its all_to_all_single
            flat = torch.empty(sum(o.numel() for o in outs))
            dist.all_to_all_single(flat, torch.cat(ins), [o.numel() for o in outs], [i.numel() for i in ins],
                                   group=group)
            for o, piece in zip(outs, flat.split([o.numel() for o in outs])):
                o.copy_(piece)

    both(f"{tag} all_to_all uneven", a2a_list, [_values(torch.float32, (send[j],), rank, 20 + j) for j in range(n)],
         [torch.zeros(recv[j]) for j in range(n)], group=group)
    x = _values(torch.float32, (3, 2), rank, 7)
    both(f"{tag} reduce", lambda t, group: dist.reduce(t, dst=glob[n - 1], op=R.SUM, group=group), x, group=group)
    both(f"{tag} gather", lambda t, o, group: dist.gather(t, o if me == 0 else None, dst=glob[0], group=group), x,
         [torch.zeros(3, 2) for _ in range(n)], group=group)
    both(f"{tag} scatter", lambda o, ins, group: dist.scatter(o, ins if me == 1 else None, src=glob[1], group=group),
         torch.zeros(3, 2), [_values(torch.float32, (3, 2), rank, 30 + j) for j in range(n)], group=group)

    def ring(t: Any, o: Any, group: Any) -> None:  # send to the next group rank, receive from the previous
        nxt, prev = glob[(me + 1) % n], glob[(me - 1) % n]
        if me % 2 == 0:
            dist.send(t, nxt, group=group)
            dist.recv(o, prev, group=group)
        else:
            dist.recv(o, prev, group=group)
            dist.send(t, nxt, group=group)

    both(f"{tag} send/recv ring", ring, _values(torch.float32, (5,), rank, 8), torch.zeros(5), group=group)

    def batched(t: Any, o: Any, group: Any) -> None:
        ops = [dist.P2POp(dist.isend, t, glob[(me - 1) % n], group=group),
               dist.P2POp(dist.irecv, o, glob[(me + 1) % n], group=group)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()

    both(f"{tag} batch_isend_irecv", batched, _values(torch.bfloat16, (4, 2), rank, 9),
         torch.zeros(4, 2, dtype=torch.bfloat16), group=group)
    dist.barrier(group=group)


def collectives(rank: int, world: int) -> dict[str, Any]:
    """Every collective on the world, on a subgroup of a subset of ranks, and (4 ranks) on a 2x2 DeviceMesh."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    from torchtpu import runtime

    both = _Both()
    _every_collective(both, rank, None, "world")
    subset = [0, 2] if world == 3 else [1, 2, 3]  # not a prefix of the ranks: group ranks != global ranks
    sub = dist.new_group(subset)
    if rank in subset:  # 4 ranks: the 3-process run has every dtype on 3 ranks
        _every_collective(both, rank, sub, f"subgroup {subset}", DTYPES if world == 3 else ("float32", "int32"))
    out: dict[str, Any] = {"pairs": both.out}
    if world == 4:
        mesh = init_device_mesh("tpu", (2, 2), mesh_dim_names=("dp", "tp"))
        for dim in ("dp", "tp"):
            _every_collective(both, rank, mesh.get_group(dim), f"mesh {dim}", ("float32", "int32"))
        out["mesh ranks"] = {dim: dist.get_process_group_ranks(mesh.get_group(dim)) for dim in ("dp", "tp")}
    coll = getattr(runtime.driver(), "collectives", None)
    out["xla"] = dict(coll.counts) if coll is not None else None
    out["process"] = runtime.driver().client.process
    return out


# ---------------------------------------------------------------------- FSDP2 on pjrt vs the one-process run
STEPS = 3
BATCH, WIDTH = 4, 16


def _model() -> Any:
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(WIDTH, 2 * WIDTH), torch.nn.Tanh(),
                               torch.nn.Linear(2 * WIDTH, 2 * WIDTH), torch.nn.Tanh(),
                               torch.nn.Linear(2 * WIDTH, 4))


def fsdp(rank: int, world: int) -> dict[str, Any]:
    """fully_shard over all ranks (1-D mesh) and HSDP over a 2x2 mesh (replicate "dp", shard "tp"), each rank on its
    shard of the batch, against one device training the same model on the whole batch (the 1-process run)."""
    import torch
    from dist_train_workers import _train as train
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from torchtpu import runtime

    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(BATCH * world, WIDTH, generator=g), torch.randn(BATCH * world, 4, generator=g)
    single = _model().to("tpu")
    out: dict[str, Any] = {"single losses": train(single, x.to("tpu"), y.to("tpu"), steps=STEPS),
                           "single": {k: v.detach().cpu() for k, v in single.state_dict().items()}}
    meshes = {"fsdp": init_device_mesh("tpu", (world,))}
    if world == 4:
        meshes["hsdp 2x2"] = init_device_mesh("tpu", (2, 2), mesh_dim_names=("dp", "tp"))
    for name, mesh in meshes.items():
        model = _model().to("tpu")
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        part = slice(rank * BATCH, (rank + 1) * BATCH)
        before = dict(runtime.driver().collectives.counts)
        losses = train(model, x[part].to("tpu"), y[part].to("tpu"), steps=STEPS)
        after = runtime.driver().collectives.counts
        out[name] = {"losses": losses, "full": {k: v.full_tensor().cpu() for k, v in model.state_dict().items()},
                     "xla": {k: after[k] - before.get(k, 0) for k in after}}
    return out


def dies_in_xla(rank: int, world: int) -> dict[str, Any]:
    """The last rank exits once the ranks have agreed on an all_reduce's XLA path, before it joins the XLA
    collective: the others are inside XLA's all-reduce when their peer is gone. Their call must raise (naming it),
    not hang."""
    import time

    import torch
    import torch.distributed as dist

    from torchtpu.distributed import xla_route

    t = torch.ones(4, device="tpu")
    dist.all_reduce(t)  # compiled and run once by every rank
    if rank == world - 1:
        def gone(*_args: Any) -> None:
            os._exit(0)  # exit code 0: torchrun lets the others run on

        xla_route.run = gone
    start = time.monotonic()
    try:
        dist.all_reduce(t)
        torch.tpu.synchronize()
        return {"error": None, "seconds": time.monotonic() - start}
    except Exception as exc:  # noqa: BLE001 - the test reads it
        return {"error": (type(exc).__name__, str(exc)), "seconds": time.monotonic() - start}


def collectives_then_dies(rank: int, world: int) -> dict[str, Any]:
    """`collectives`, then `dies_in_xla` (the last rank saves its results first): one start of the processes."""
    import sys

    import torch

    out = collectives(rank, world)
    if rank == world - 1:
        torch.save(out, os.path.join(sys.argv[2], f"rank{rank}.pt.partial"))
        os.replace(os.path.join(sys.argv[2], f"rank{rank}.pt.partial"), os.path.join(sys.argv[2], f"rank{rank}.pt"))
    return {**out, "dies": dies_in_xla(rank, world)}


def everything(rank: int, world: int) -> dict[str, Any]:
    """`collectives`, then `fsdp` in the same processes (a start of 4 JAX processes is the expensive part here)."""
    return {**collectives(rank, world), "training": fsdp(rank, world)}


SCENARIOS = {"collectives": (collectives, "cpu:gloo,tpu:tpu_dist", 60), "fsdp": (fsdp, "tpu_dist", 60),
             "everything": (everything, "cpu:gloo,tpu:tpu_dist", 60), "dies_in_xla": (dies_in_xla, "tpu_dist", 10),
             "collectives_then_dies": (collectives_then_dies, "cpu:gloo,tpu:tpu_dist", 60)}


if __name__ == "__main__":
    from scenario_main import run

    run(SCENARIOS)
