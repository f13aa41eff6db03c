"""Rank programs for tests/test_subgroups.py (launched by dist_workers.py as "subgroup_workers:NAME").

Subgroups (`new_group`, `split_group`, `new_subgroups`), object collectives and functional collectives on
tpu_dist, each against the same call on a plain gloo group on cpu; then the bad-input cases of subgroups.
"""

from __future__ import annotations

from typing import Any

from dist_workers import record_outcome

TIMEOUT_S = 30


def _objects(out: dict[str, Any], rank: int, world: int, group: Any, ref: Any, tag: str) -> None:
    """Every object collective on `group` and on the gloo group `ref`: (got, expected) of the received objects."""
    import torch.distributed as dist

    mine = {"rank": rank, "payload": list(range(rank + 3)), "text": "x" * (7 * rank + 1)}
    results = []
    for g in (group, ref):
        got: dict[str, Any] = {}
        gathered: list[Any] = [None] * world
        dist.all_gather_object(gathered, mine, group=g)
        got["all_gather_object"] = gathered
        objs = [mine, ("root", 5)] if rank == world - 1 else [None, None]
        dist.broadcast_object_list(objs, src=world - 1, group=g)
        got["broadcast_object_list"] = objs
        dest: list[Any] | None = [None] * world if rank == 0 else None
        dist.gather_object(mine, dest, dst=0, group=g)
        got["gather_object"] = dest
        recv: list[Any] = [None]
        dist.scatter_object_list(recv, [{"to": j} for j in range(world)] if rank == 0 else None, src=0, group=g)
        got["scatter_object_list"] = recv
        if rank in (0, 1):
            box: list[Any] = [mine] if rank == 0 else [None]
            (dist.send_object_list if rank == 0 else dist.recv_object_list)(box, 1 - rank, group=g)
            got["send/recv_object_list"] = box
        results.append(got)
    for key in results[0]:
        out[f"{tag} {key}"] = (results[0][key], results[1][key])


def groups(rank: int, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    import torchtpu
    from torchtpu.distributed.process_group import TpuProcessGroup

    ref = dist.new_group(backend="gloo")
    out: dict[str, Any] = {}

    def compare(name: str, fn: Any, x: Any, group: Any, ref_group: Any) -> None:
        out[name] = (fn(x.to("tpu"), group).cpu(), fn(x.clone(), ref_group))

    x = _int_values(rank)
    xf = torch.randn(3, 4, generator=torch.Generator().manual_seed(rank)) * 3.3

    def all_reduce(t: Any, g: Any) -> Any:
        dist.all_reduce(t, group=g)
        return t

    # new_group of every rank and of rank 0 alone: charged only to its members
    sub_all = dist.new_group(list(range(world)))
    ref_all = dist.new_group(list(range(world)), backend="gloo")
    compare("new_group all_reduce int64", all_reduce, x, sub_all, ref_all)
    compare("new_group all_reduce float32", all_reduce, xf, sub_all, ref_all)
    out["new_group type"] = type(sub_all).__name__
    solo = dist.new_group([0])
    before = torchtpu.distributed.stats().get("all_reduce", {}).get("count", 0)
    t = torch.full((4,), float(rank + 1), device="tpu")
    if rank == 0:
        dist.all_reduce(t, group=solo)
    out["solo charged"] = torchtpu.distributed.stats().get("all_reduce", {}).get("count", 0) - before
    sub, _ = dist.new_subgroups(group_size=max(world // 2, 1))
    ref_sub, _ = dist.new_subgroups(group_size=max(world // 2, 1), backend="gloo")
    compare("new_subgroups all_reduce int64", all_reduce, x, sub, ref_sub)
    # object collectives: the default group (picks the cpu side of it) and a "cpu:gloo,tpu:tpu_dist" subgroup
    _objects(out, rank, world, None, ref, "default")
    pair = dist.new_group(backend="cpu:gloo,tpu:tpu_dist")
    out["pair type"] = type(pair).__name__
    _objects(out, rank, world, pair, ref, "cpu:gloo,tpu:tpu_dist")
    # functional collectives (what DTensor calls), eager and compiled
    w = torch.distributed.group.WORLD

    def functional(t: Any) -> tuple[Any, ...]:
        a = funcol.all_reduce(t, "sum", w)
        b = funcol.all_gather_tensor(t, 0, w)
        c = funcol.reduce_scatter_tensor(torch.cat([t] * world), "sum", 0, w)
        d = funcol.all_to_all_single(torch.cat([t] * world), None, None, w)
        e = funcol.broadcast(t, world - 1, w)
        return tuple(funcol.wait_tensor(v) if isinstance(v, torch.Tensor) else v for v in (a, b, c, d, e))

    expected = functional(x.clone())
    eager = functional(x.to("tpu"))
    out["functional eager"] = ([v.cpu() for v in eager], list(expected))
    ops = [funcol.all_reduce(x.to("tpu"), "max", w), torch.ops._c10d_functional.all_reduce(
        x.to("tpu"), "sum", w.group_name)]
    ops = [torch.ops._c10d_functional.wait_tensor(o) for o in ops]
    out["_c10d_functional ops"] = ([o.cpu() for o in ops], [funcol.all_reduce(x.clone(), "max", w),
                                                            funcol.all_reduce(x.clone(), "sum", w)])

    def step(t: Any) -> Any:
        a = funcol.all_reduce(t * 2, "sum", w)
        return funcol.all_gather_tensor(a + 1, 0, w)

    import torch._dynamo

    torch._dynamo.reset()
    explained = torch._dynamo.explain(step)(xf.to("tpu"))
    out["compile graph breaks"] = (explained.graph_count, explained.graph_break_count,
                                   [str(b.reason)[:200] for b in explained.break_reasons])
    torch._dynamo.reset()
    compiled = torch.compile(step, backend="tpu")(xf.to("tpu"))
    out["functional compiled"] = ([compiled.cpu()], [step(xf.clone())])
    out["pg is tpu"] = isinstance(dist.group.WORLD, TpuProcessGroup)
    # bad input: a cpu tensor through a tpu-only subgroup, a non-member's call, ranks outside the world
    tpu_only = dist.new_group(backend="tpu_dist")
    record_outcome(out, "cpu tensor on tpu-only subgroup", lambda: dist.all_reduce(torch.ones(3), group=tpu_only))
    record_outcome(out, "functional cpu tensor on tpu-only subgroup",
            lambda: funcol.all_reduce(torch.ones(3), "sum", tpu_only).wait())
    t = torch.full((3,), float(rank + 1), device="tpu")
    if rank != 0:  # c10d returns at once on a non-member (a warning), as with gloo: no hang, tensor unchanged
        record_outcome(out, "non-member call", lambda: dist.all_reduce(t, group=solo))
        out["non-member tensor"] = t.cpu()
    record_outcome(out, "non-member get_rank", lambda: out.__setitem__("non-member rank", dist.get_rank(solo)))
    t = torch.full((2,), float(rank + 1), device="tpu")
    dist.all_reduce(t)  # the world still works afterwards
    out["after"] = t.cpu()
    dist.destroy_process_group()
    return out


def _int_values(rank: int) -> Any:
    import torch

    return torch.arange(12, dtype=torch.int64).reshape(3, 4) * (rank + 2) - 5


def split(rank: int, world: int) -> dict[str, Any]:
    """init_process_group(device_id=tpu:0): split_group, DeviceMesh (which splits then) and object collectives on
    the tpu-only group that device_id picks. c10d cannot make a gloo group beside a group bound to "tpu" (it asks
    the gloo group for its tpu backend), so the reference is the exact integer sum of every member's values."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    out: dict[str, Any] = {"bound": str(dist.group.WORLD.bound_device_id), "backend": dist.get_backend()}
    for name, ranks in (("split_group singletons", [[r] for r in range(world)]),
                        ("split_group all", [list(range(world))])):
        g = dist.split_group(split_ranks=ranks)
        members = next(m for m in ranks if rank in m)
        t = _int_values(rank).to("tpu")
        dist.all_reduce(t, group=g)
        out[name] = ([t.cpu()], [sum(_int_values(r) for r in members)])
        out[name + " type"] = (type(g).__name__, g.size(), str(g.bound_device_id))
    mesh = init_device_mesh("tpu", (world,))
    t = _int_values(rank).to("tpu")
    dist.all_reduce(t, group=mesh.get_group())
    out["mesh all_reduce"] = ([t.cpu()], [sum(_int_values(r) for r in range(world))])
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, {"rank": rank, "s": "y" * rank})
    out["tpu-only all_gather_object"] = (gathered, [{"rank": r, "s": "y" * r} for r in range(world)])
    record_outcome(out, "split_group bad ranks", lambda: dist.split_group(split_ranks=[[0, world]]))
    dist.destroy_process_group()
    return out


SCENARIOS = {"groups": (groups, None, TIMEOUT_S), "split": (split, {"device_id": "tpu:0"}, TIMEOUT_S)}
