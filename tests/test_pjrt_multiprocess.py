"""tpu_dist on the PJRT driver (JAX's CPU client) across 3 and 4 processes: every collective equals gloo's, on the
world, on a subgroup of a subset of ranks and on the dims of a 2x2 DeviceMesh; FSDP2 and HSDP train as one device.

Each test runs a scenario of tests/pjrt_mp_workers.py under torchrun (127.0.0.1, under a timeout) with
TORCHTPU_DRIVER=pjrt: the driver joins JAX's distributed runtime and tpu_dist runs all_reduce / all_gather /
reduce_scatter / broadcast / all_to_all as XLA collectives (drivers/pjrt/collectives.py), the rest through gloo.
Every collective also runs on the same values as cpu tensors through plain gloo. Results must be equal bit for bit,
except where the reduction order is free: a floating-point SUM / AVG / PRODUCT over 3 or more ranks, which gloo's
ring and XLA's all-reduce add in different orders (2 ranks: one addition, the same bits; test_pjrt_collectives.py).
Those are checked within a few roundings, every rank of a group must hold the same bits, and the same reductions
of values that need no rounding in any order ("exact") must be equal bit for bit. A rank that dies inside an XLA
collective must give the others tpu_dist's error naming it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch
from test_pjrt_collectives import _launch

pytest.importorskip("jax")

ORDER_FREE = ("SUM", "AVG", "PRODUCT")  # floating-point reductions whose result depends on the order of ranks
EPS = {torch.float32: 2.0 ** -23, torch.bfloat16: 2.0 ** -7}


def _group_size(name: str, world: int) -> int:
    if name.startswith("world"):
        return world
    if name.startswith("subgroup"):
        return name.split("]")[0].count(",") + 1
    return 2  # a dim of the 2x2 mesh


def _order_free(name: str) -> bool:
    """A reduction of random floats with SUM / AVG / PRODUCT (the list reduce_scatter sums); not "exact" values."""
    m = re.search(r" (all_reduce|reduce_scatter_tensor|reduce_scatter) (?:RedOpType\.(\w+) )?\w+$", name)
    return m is not None and (m.group(2) or "SUM") in ORDER_FREE


def _xla_per_group(n: int, floats: int = 2) -> dict[str, int]:
    """The XLA collectives one `_every_collective` call with `floats` floating and one integer dtype runs on a group
    of n (the rest take the host path): per float dtype 5 all-reduce ops twice (random and exact values) and 2 x 3
    reduce-scatter_tensor ops + 2 list reduce-scatters, per integer dtype 7 and 2 + 1; per dtype 2 all-gathers,
    n broadcasts (every root) and one even all_to_all_single."""
    d = floats + 1
    return {"all_reduce": floats * 10 + 7, "all_gather": 2 * d, "reduce_scatter": floats * 8 + 3,
            "broadcast": d * n, "all_to_all": d}


def _check(results: list[dict[str, Any]], world: int) -> None:
    for r, res in enumerate(results):
        assert res is not None and "crash" not in res, res and res.get("crash")
        assert res["process"] == (r, world)  # JAX process RANK of WORLD_SIZE
    for r, res in enumerate(results):
        for name, (tpu, cpu) in res["pairs"].items():
            n = _group_size(name, world)
            assert len(tpu) == len(cpu), name
            for a, b in zip(tpu, cpu):
                assert a.dtype == b.dtype and a.shape == b.shape, name
                if n > 2 and a.is_floating_point() and _order_free(name):
                    bound = 4 * (n - 1) * EPS[a.dtype] * float(b.float().abs().max())
                    torch.testing.assert_close(a.float(), b.float(), rtol=0, atol=bound, msg=f"rank {r}: {name}")
                else:
                    assert torch.equal(a.view(torch.uint8) if a.is_floating_point() else a,
                                       b.view(torch.uint8) if b.is_floating_point() else b), (r, name, a, b)
    # the world's all-reduces: the same bits on every rank, XLA's and gloo's alike
    for name in results[0]["pairs"]:
        if name.startswith("world all_reduce"):
            for side in (0, 1):
                first = results[0]["pairs"][name][side][0]
                for res in results[1:]:
                    other = res["pairs"][name][side][0]
                    assert torch.equal(first.view(torch.uint8), other.view(torch.uint8)) if first.is_floating_point() \
                        else torch.equal(first, other), name


def _expected_xla(rank: int, world: int) -> dict[str, int]:
    sizes = [(world, 2)]
    subset = [0, 2] if world == 3 else [1, 2, 3]
    if rank in subset:
        sizes.append((len(subset), 2 if world == 3 else 1))
    if world == 4:
        sizes += [(2, 1), (2, 1)]  # the mesh's "dp" and "tp" groups: float32 and int32
    total: dict[str, int] = {}
    for n, floats in sizes:
        for k, v in _xla_per_group(n, floats).items():
            total[k] = total.get(k, 0) + v
    return total


def test_every_collective_on_three_pjrt_processes_equals_gloo_and_a_rank_dying_inside_xla_is_named(
        tmp_path: Path) -> None:
    """Then (pjrt_mp_workers.dies_in_xla) rank 2 exits after the ranks agreed on an XLA all_reduce, before joining
    it. XLA's gloo all-reduce fails on the survivors (jaxlib raised a bare ValueError before); tpu_dist turns it into
    its DistBackendError naming the collective and the dead rank, within the report wait, not the group timeout."""
    results, err = _launch("collectives_then_dies", tmp_path, "pjrt", world=3, worker="pjrt_mp_workers.py")
    assert all(res is not None for res in results), err
    _check(results, 3)
    for r, res in enumerate(results):
        assert res["xla"] == _expected_xla(r, 3), (r, res["xla"])
        assert len(res["pairs"]) == (143 if r in (0, 2) else 73)
    assert "dies" not in results[2]  # it exited after saving its collectives
    for r in (0, 1):
        res = results[r]["dies"]
        kind, msg = res["error"]
        assert kind == "DistBackendError", msg
        assert re.search(rf"tpu_dist all_reduce #\d+ of group '0' \(3 ranks\) failed on rank {r}: rank 2 did not "
                         "reach it", msg), msg
        assert "CollectiveFailed: XLA all_reduce over processes [0, 1, 2] failed" in msg, msg
        assert res["seconds"] < 30, res  # the 5 s report wait; the group's timeout is 60 s


def test_four_pjrt_processes_collectives_subgroups_2x2_mesh_and_fsdp2_equal_gloo_and_one_device(
        tmp_path: Path) -> None:
    results, err = _launch("everything", tmp_path, "pjrt", world=4, worker="pjrt_mp_workers.py")
    assert all(res is not None for res in results), err
    _check(results, 4)
    for r, res in enumerate(results):
        assert res["xla"] == _expected_xla(r, 4), (r, res["xla"])
        assert res["mesh ranks"] == {"dp": [r % 2, r % 2 + 2], "tp": [r // 2 * 2, r // 2 * 2 + 1]}
    # FSDP2 over 4 ranks and HSDP (replicate "dp", shard "tp") on the 2x2 mesh vs one device on the whole batch
    single = results[0]["training"]["single losses"]
    for config in ("fsdp", "hsdp 2x2"):
        runs = [res["training"][config] for res in results]
        for step, want in enumerate(single):  # each rank's loss is its quarter's mean: their mean is the batch's
            assert sum(run["losses"][step] for run in runs) / 4 == pytest.approx(want, rel=1e-6), (config, step)
        for r, run in enumerate(runs):
            for name, value in run["full"].items():
                torch.testing.assert_close(value, results[r]["training"]["single"][name], rtol=1e-5, atol=1e-6,
                                           msg=f"{config} rank {r} {name}")
                assert torch.equal(value, runs[0]["full"][name]), (config, r, name)
            assert run["xla"]["all_gather"] > 0 and run["xla"]["reduce_scatter"] > 0, run["xla"]
        assert ("all_reduce" in runs[0]["xla"] and runs[0]["xla"]["all_reduce"] > 0) == (config == "hsdp 2x2")

