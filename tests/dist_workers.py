"""Rank programs for tests/test_distributed.py: `python tests/dist_workers.py SCENARIO WORLD PORT OUTDIR`.

Each scenario runs on WORLD processes (multiprocessing spawn, one simulated chip each, gloo on 127.0.0.1) and
writes what it measured to OUTDIR/rank{r}.pt; the test asserts on those files, so a rank that hangs or dies shows
up as a missing file and an exit code, never as a hung test (the test runs this under a timeout).
"""

from __future__ import annotations

import datetime
import multiprocessing
import os
import sys
import time
import traceback
from typing import Any

TIMEOUT_S = 20


def record_outcome(out: dict[str, Any], name: str, fn: Any) -> None:
    """Runs fn and records under `name` its exception's class, message and the seconds it took (for the test)."""
    t0 = time.perf_counter()
    try:
        fn()
        out[name] = ("no error", "", time.perf_counter() - t0)
    except Exception as exc:  # noqa: BLE001 - recorded for the test
        out[name] = (type(exc).__name__, str(exc), time.perf_counter() - t0)


def _init(rank: int, world: int, port: int, backend: str | dict | None, timeout_s: float = TIMEOUT_S) -> None:
    """init_process_group(backend) (a dict: its keyword arguments, "device_id" named as a string)."""
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    kwargs = dict(backend) if isinstance(backend, dict) else {"backend": backend}
    if "device_id" in kwargs:
        kwargs["device_id"] = torch.device(kwargs["device_id"])
    dist.init_process_group(**kwargs, timeout=datetime.timedelta(seconds=timeout_s))


def _values(dtype: Any, shape: tuple[int, ...], rank: int, salt: int = 0) -> Any:
    """Deterministic per-rank values: small integers for integer dtypes, awkward fractions for floats."""
    import torch

    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 3.7).to(dtype)
    return torch.randint(1, 9, shape, generator=g).to(dtype)


# ---------------------------------------------------------------------- every collective vs gloo on cpu
def collectives(rank: int, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _coalescing_manager

    ref = dist.new_group(backend="gloo")  # a plain torch gloo group: the reference
    out: dict[str, Any] = {"backend": dist.get_backend(), "pg": type(dist.group.WORLD).__name__}
    R = dist.ReduceOp

    def both(name: str, fn: Any, *tensors: Any) -> None:
        """fn(tensors on tpu, group=None) vs fn(same on cpu, group=ref); keeps (got, expected) of every tensor."""
        cpu = [[t.clone() for t in x] if isinstance(x, list) else x.clone() for x in tensors]
        tpu = [[t.to("tpu") for t in x] if isinstance(x, list) else x.to("tpu") for x in tensors]
        fn(*tpu, group=None)
        fn(*cpu, group=ref)

        def flat(xs: Any) -> list:
            return [t for x in xs for t in (x if isinstance(x, list) else [x])]

        out[name] = ([t.cpu() for t in flat(tpu)], flat(cpu))

    for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.int32):
        ops = [R.SUM, R.MIN, R.MAX, R.PRODUCT]
        ops += [R.AVG] if dtype.is_floating_point else [R.BAND, R.BOR, R.BXOR]
        for op in ops:
            both(f"all_reduce {dtype} {op}", lambda t, group, op=op: dist.all_reduce(t, op=op, group=group),
                 _values(dtype, (5, 3), rank))
    x = _values(torch.float32, (6, 4), rank, 1)
    both("all_reduce async", lambda t, group: dist.all_reduce(t, group=group, async_op=True).wait(), x)
    def strided(t: Any, group: Any) -> None:
        if group is None:
            dist.all_reduce(t[:, ::2])
        else:  # gloo on cpu reads a strided view as if it were contiguous: the reference goes through a copy
            v = t[:, ::2].contiguous()
            dist.all_reduce(v, group=group)
            t[:, ::2] = v

    both("all_reduce strided view", strided, x)
    both("broadcast", lambda t, group: dist.broadcast(t, src=world - 1, group=group), x)
    both("reduce", lambda t, group: dist.reduce(t, dst=0, op=R.MAX, group=group), x)
    outs = [torch.zeros(6, 4) for _ in range(world)]
    both("all_gather", lambda t, o, group: dist.all_gather(o, t, group=group), x, outs)
    both("all_gather_into_tensor", lambda t, o, group: dist.all_gather_into_tensor(o, t, group=group), x,
         torch.zeros(6 * world, 4))

    def coalesced_gather(a: Any, b: Any, oa: Any, ob: Any, group: Any) -> None:
        with _coalescing_manager(group=group, async_ops=True) as cm:
            dist.all_gather_into_tensor(oa, a, group=group)
            dist.all_gather_into_tensor(ob, b, group=group)
        cm.wait()

    y = _values(torch.int64, (3,), rank, 2)
    both("all_gather_into_tensor coalesced", coalesced_gather, x, y, torch.zeros(6 * world, 4),
         torch.zeros(3 * world, dtype=torch.int64))

    def coalesced_reduce(a: Any, b: Any, group: Any) -> None:
        with _coalescing_manager(group=group, async_ops=True) as cm:
            dist.all_reduce(a, group=group)
            dist.all_reduce(b, group=group)
        cm.wait()

    both("all_reduce coalesced", coalesced_reduce, x, _values(torch.float32, (7,), rank, 3))
    big = _values(torch.float32, (4 * world, 3), rank, 4)
    both("reduce_scatter_tensor", lambda t, o, group: dist.reduce_scatter_tensor(o, t, group=group), big,
         torch.zeros(4, 3))

    def coalesced_scatter(a: Any, oa: Any, group: Any) -> None:
        with _coalescing_manager(group=group, async_ops=True) as cm:
            dist.reduce_scatter_tensor(oa, a, op=R.MAX, group=group)
        cm.wait()

    both("reduce_scatter_tensor coalesced", coalesced_scatter, big, torch.zeros(4, 3))
    both("reduce_scatter", lambda ins, o, group: dist.reduce_scatter(o, ins, group=group),
         [_values(torch.int64, (2, 2), rank, 10 + j) for j in range(world)], torch.zeros(2, 2, dtype=torch.int64))
    # uneven all-to-all: rank r sends r + j + 1 rows to rank j
    send = [rank + j + 1 for j in range(world)]
    recv = [j + rank + 1 for j in range(world)]
    a2a_in = _values(torch.float32, (sum(send), 2), rank, 5)
    both("all_to_all_single uneven", lambda t, o, group: dist.all_to_all_single(o, t, recv, send, group=group),
         a2a_in, torch.zeros(sum(recv), 2))
    # rank 0 sends nothing from an empty 1-d tensor while its peers send rows of width 3 (TorchRec's sequence
    # all-to-all): gloo matches byte counts, not row shapes
    empty_sender = [0 if rank == 0 else 1 for _ in range(world)]
    from_senders = [0 if j == 0 else 1 for j in range(world)]
    sender_in = torch.empty(0) if rank == 0 else _values(torch.float32, (world, 3), rank, 7)
    both("all_to_all_single empty 1-d sender",
         lambda t, o, group: dist.all_to_all_single(o, t, from_senders, empty_sender, group=group),
         sender_in, torch.zeros(world - 1, 3))
    both("all_to_all_single even", lambda t, o, group: dist.all_to_all_single(o, t, group=group),
         _values(torch.int32, (2 * world, 3), rank, 6), torch.zeros(2 * world, 3, dtype=torch.int32))
    def a2a_list(ins: list, outs: list, group: Any) -> None:
        if group is None:
            dist.all_to_all(outs, ins)
        else:  # gloo's list all-to-all needs equal sizes: the reference is its all_to_all_single
            flat = torch.empty(sum(o.numel() for o in outs))
            dist.all_to_all_single(flat, torch.cat(ins), [o.numel() for o in outs], [i.numel() for i in ins],
                                   group=group)
            for o, piece in zip(outs, flat.split([o.numel() for o in outs])):
                o.copy_(piece)

    both("all_to_all uneven", a2a_list,
         [_values(torch.float32, (send[j],), rank, 20 + j) for j in range(world)],
         [torch.zeros(recv[j]) for j in range(world)])
    both("gather", lambda t, o, group: dist.gather(t, o if rank == 0 else None, dst=0, group=group), x,
         [torch.zeros(6, 4) for _ in range(world)])
    both("scatter", lambda o, ins, group: dist.scatter(o, ins if rank == 1 else None, src=1, group=group),
         torch.zeros(2, 2), [_values(torch.float32, (2, 2), rank, 30 + j) for j in range(world)])

    def ring(t: Any, r: Any, group: Any) -> None:
        ops = [dist.P2POp(dist.irecv, r, (rank - 1) % world, group=group),
               dist.P2POp(dist.isend, t, (rank + 1) % world, group=group)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()

    both("batch_isend_irecv ring (irecv first)", ring, x, torch.zeros(6, 4))

    def pair(t: Any, r: Any, group: Any) -> None:
        if rank == 0:
            dist.send(t, 1, group=group, tag=3)
        elif rank == 1:
            dist.recv(r, 0, group=group, tag=3)

    both("send/recv", pair, y, torch.zeros(3, dtype=torch.int64))
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("tpu", (world,))  # DeviceMesh reads the group's name (kept by TpuProcessGroup)
    both("all_reduce on a DeviceMesh group", lambda t, group: dist.all_reduce(
        t, group=mesh.get_group() if group is None else group), x)
    out["mesh group"] = (type(mesh.get_group()).__name__, mesh.get_group().group_name)
    dist.barrier()
    out["default map tpu"] = dist.Backend.default_device_backend_map.get("tpu")
    out.update(_clock_check(rank, world))
    dist.destroy_process_group()
    return out


def _clock_check(rank: int, world: int) -> dict[str, Any]:
    """Rank 0 computes first; after an all-reduce every rank's clock is the slowest start + the ICI time."""
    import torch
    import torch.distributed as dist

    import torchtpu
    from torchtpu.distributed import clock

    torch.tpu.synchronize()
    if rank == 0:
        a = torch.randn(512, 512, device="tpu")
        for _ in range(4):
            a = a @ a
        torch.tpu.synchronize()
    tl = clock.timeline_of(0)
    before = tl.wall_seconds + tl.chip.launch_overhead_s
    t = torch.ones(1 << 18, device="tpu")  # 1 MiB
    dist.all_reduce(t)
    rec = torchtpu.timeline_records(0)[-1]
    return {"clock before": before, "clock after": tl.wall_seconds, "record": rec,
            "formula": clock.collective_seconds("all_reduce", t.numel() * 4, world, clock.chip_of(0)),
            "dist stats": torchtpu.distributed.stats()}


# ---------------------------------------------------------------------- bad input
def bad_input(rank: int, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    out: dict[str, Any] = {}

    def expect(name: str, fn: Any) -> None:
        t0 = time.perf_counter()
        try:
            fn()
            out[name] = ("no error", None, time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001 - recorded for the test
            out[name] = (type(exc).__name__, str(exc), time.perf_counter() - t0)

    expect("cpu tensor", lambda: dist.all_reduce(torch.ones(3)))
    expect("shape mismatch", lambda: dist.all_reduce(torch.ones(4 + rank, device="tpu")))
    expect("dtype mismatch", lambda: dist.broadcast(torch.ones(4, device="tpu",
                                                               dtype=torch.float32 if rank else torch.int32), 0))
    expect("gather list length", lambda: dist.all_gather([torch.zeros(2, device="tpu")] * (world + rank),
                                                         torch.ones(2, device="tpu")))
    split = [1] * world
    expect("a2a splits", lambda: dist.all_to_all_single(torch.zeros(world + (rank == 0), device="tpu"),
                                                         torch.ones(world, device="tpu"),
                                                         split if rank else [2] + [1] * (world - 1), split))
    x = torch.ones(3, device="tpu")
    if rank == 0:
        expect("recv mismatch", lambda: dist.send(x, 1))
    elif rank == 1:
        expect("recv mismatch", lambda: dist.recv(torch.zeros(4, device="tpu"), 0))
    t = torch.full((2,), float(rank + 1), device="tpu")
    dist.all_reduce(t)  # the group still works after every error above
    out["after"] = t.cpu()
    dist.destroy_process_group()
    return out


def dead_rank(rank: int, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    t = torch.ones(4, device="tpu")
    dist.all_reduce(t)
    if rank == world - 1:
        os._exit(3)  # dies between two collectives
    t0 = time.perf_counter()
    try:
        dist.all_reduce(t)
        return {"error": None}
    except Exception as exc:  # noqa: BLE001 - recorded for the test
        return {"error": (type(exc).__name__, str(exc)), "seconds": time.perf_counter() - t0}


def stuck_rank(rank: int, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    t = torch.ones(4, device="tpu")
    if rank == world - 1:
        time.sleep(TIMEOUT_S / 4 * 3 + 6)  # alive, but never reaches this barrier in time
        return {"error": None}
    t0 = time.perf_counter()
    try:
        dist.broadcast(t, 0)
        return {"error": None}
    except Exception as exc:  # noqa: BLE001 - recorded for the test
        return {"error": (type(exc).__name__, str(exc)), "seconds": time.perf_counter() - t0}


def bench(rank: int, world: int) -> dict[str, Any]:
    """Host wall seconds per collective (median of 5): tpu_dist on tpu tensors vs a plain gloo group on cpu."""
    import statistics

    import torch
    import torch.distributed as dist

    ref = dist.new_group(backend="gloo")
    out: dict[str, Any] = {}
    for size in (1 << 10, 1 << 16, 1 << 20, 1 << 24):
        n = size // 4
        cases = {"all_reduce": lambda t, g: dist.all_reduce(t[0], group=g),
                 "all_gather_into_tensor": lambda t, g: dist.all_gather_into_tensor(t[1], t[0], group=g),
                 "reduce_scatter_tensor": lambda t, g: dist.reduce_scatter_tensor(t[2], t[0], group=g),
                 "all_to_all_single": lambda t, g: dist.all_to_all_single(t[3], t[0], group=g)}
        for name, fn in cases.items():
            row = []
            for device, group in (("tpu", None), ("cpu", ref)):
                ts = (torch.ones(n, device=device), torch.empty(n * world, device=device),
                      torch.empty(n // world, device=device), torch.empty(n, device=device))
                fn(ts, group)
                times = []
                for _ in range(5):
                    dist.barrier(group=ref)
                    t0 = time.perf_counter()
                    fn(ts, group)
                    times.append(time.perf_counter() - t0)
                row.append(statistics.median(times))
            out[(name, size)] = tuple(row)
    dist.destroy_process_group()
    return out


SCENARIOS = {"bench": (bench, None, 60), "collectives": (collectives, None, TIMEOUT_S),
             "bad": (bad_input, "tpu_dist", TIMEOUT_S), "dead": (dead_rank, None, TIMEOUT_S),
             "stuck": (stuck_rank, None, TIMEOUT_S / 4)}


def _main(scenario: str, rank: int, world: int, port: int, outdir: str) -> None:
    import torch

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if scenario in SCENARIOS:
        fn, backend, timeout_s = SCENARIOS[scenario]
    elif ":" in scenario:  # "module:scenario", a worker module beside this one
        import importlib

        module, name = scenario.split(":", 1)
        fn, backend, timeout_s = importlib.import_module(module).SCENARIOS[name]
    else:
        import dist_train_workers

        fn, backend, timeout_s = dist_train_workers.SCENARIOS[scenario]
    try:
        _init(rank, world, port, backend, timeout_s)
        result = fn(rank, world)
    except BaseException:  # noqa: BLE001 - the test shows it
        result = {"crash": traceback.format_exc()}
    torch.save(result, os.path.join(outdir, f"rank{rank}.pt"))


def launch(scenario: str, world: int, port: int, outdir: str, timeout_s: float) -> list[int | None]:
    """Run the scenario on `world` spawned processes; their exit codes (None: still running, then killed)."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_main, args=(scenario, r, world, port, outdir)) for r in range(world)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout_s
    for p in procs:
        p.join(max(deadline - time.monotonic(), 0.1))
    codes = [p.exitcode for p in procs]
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    return codes


if __name__ == "__main__":
    name, n, port_arg, directory = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    print(launch(name, n, port_arg, directory, float(sys.argv[5]) if len(sys.argv) > 5 else 600))
