"""TORCHTPU_TOPOLOGY: a simulated slice (sim/topology.py), its devices in one process, and tpu_dist's collective
charges by the torus positions of a group's chips (torchtpu/distributed/topology.py).

Several devices in one process and the multi-rank runs need a fresh process (the driver is made once per
process from the environment): `python tests/test_topology.py devices` prints what one process with
TORCHTPU_TOPOLOGY=2x2 sees; `... ranks WORLD PORT OUTDIR` runs WORLD spawned ranks and writes each one's
measurements. Every subprocess runs under a timeout; every rank's store timeout is bounded.
"""

from __future__ import annotations

import ast
import datetime
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest
from torchtpu.drivers import config
from torchtpu.drivers.sim.driver import SimDriver, process_host, topology_from_env
from torchtpu.sim.chips import get_chip
from torchtpu.sim.topology import Topology

HERE = Path(__file__).resolve()
LAUNCH_TIMEOUT_S = 420  # the machine is shared: a 4-rank start takes a minute of it
V5E = get_chip("v5e")
W = V5E.ici_link_bw_bidi  # 9e10 B/s per link, both directions [SB-tpus]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTPU_") or k == "TORCHTPU_CACHE_DIR"}
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"):
        env.pop(k, None)
    return {**env, "MASTER_ADDR": "127.0.0.1", **extra}


# ---------------------------------------------------------------------------- parsing and the chip table
@pytest.mark.parametrize("raw,reason", [
    ("2x2x2", "2-D torus"), ("32x4", "does not fit in the 16x16 v5e pod"), ("3x4", "whole v5e hosts of 8"),
    ("2x", "not integers"), ("1x1x1x1", "1 to 3"), ("-2", "not a positive"), ("32x32", "a v5e pod has 256")])
def test_bad_topology_names_the_variable_the_value_the_reason_and_the_valid_forms(raw, reason):
    with pytest.raises(config.ConfigError) as info:
        config.parse("TORCHTPU_TOPOLOGY", raw)
    msg = str(info.value)
    assert f"TORCHTPU_TOPOLOGY={raw!r}" in msg and reason in msg and "valid values: N, AxB or AxBxC" in msg


def test_topology_follows_the_chip_generation(monkeypatch):
    monkeypatch.setenv("TORCHTPU_TOPOLOGY", "2x2x2")
    monkeypatch.setenv("TORCHTPU_CHIP", "v5p")  # 3-D torus: fine
    assert config.get("TORCHTPU_TOPOLOGY") == (2, 2, 2)
    monkeypatch.setenv("TORCHTPU_CHIP", "v5e")  # the cached value follows TORCHTPU_CHIP
    with pytest.raises(config.ConfigError, match="v5e chips form a 2-D torus"):
        config.get("TORCHTPU_TOPOLOGY")


def test_hosts_and_chips_per_host_come_from_the_chip_table():
    t = Topology.of("v5e", (4, 4))  # [GC-v5e] 8 chips (4x2) per host: 2 hosts, joined by ICI
    assert (t.chips, t.chips_per_host, t.hosts, t.slices) == (16, 8, 2, 1)
    assert list(t.host_chips(1)) == list(range(8, 16)) and t.host_of(9) == 1
    small = Topology.of("v5e", (2, 2))  # a 4-chip host
    assert (small.chips_per_host, small.hosts) == (4, 1)
    v5p = Topology.of("v5p", (2, 2, 2))  # [GC-v5p] 4 chips per host
    assert (v5p.hosts, v5p.coords(5)) == (2, (1, 0, 1))
    two = Topology.of("v5e", (2, 2), hosts=2)  # two 1-host slices joined by DCN
    assert (two.slices, two.chips, two.slice_of(5), two.coords(5), two.host_of(5)) == (2, 8, 1, (0, 1), 1)


@pytest.mark.parametrize("env,match", [
    ({"TORCHTPU_TOPOLOGY": "4x4", "TORCHTPU_HOSTS": "3"}, "TORCHTPU_HOSTS=3: a 4x4 v5e slice is 2 hosts; valid: a "
                                                          "multiple of 2"),
    ({"TORCHTPU_HOSTS": "2"}, "TORCHTPU_HOSTS=2 needs TORCHTPU_TOPOLOGY"),
    ({"TORCHTPU_TOPOLOGY": "2x2", "TORCHTPU_NUM_DEVICES": "2"}, "TORCHTPU_NUM_DEVICES=2 disagrees with "
                                                               "TORCHTPU_TOPOLOGY=2x2.*set it to 4"),
    ({"TORCHTPU_TOPOLOGY": "2x2x1", "TORCHTPU_HOSTS": "2", "TORCHTPU_CHIP": "v4"}, "no DCN bandwidth for v4"),
])
def test_bad_combinations_name_the_variables_and_what_is_valid(monkeypatch, env, match):
    for k in ("TORCHTPU_TOPOLOGY", "TORCHTPU_HOSTS", "TORCHTPU_NUM_DEVICES", "TORCHTPU_CHIP"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(config.ConfigError, match=match):
        topology_from_env()


def test_a_world_or_a_node_that_does_not_fit_the_topology_is_refused():
    t = Topology.of("v5e", (2, 2))
    with pytest.raises(config.ConfigError, match="WORLD_SIZE=8 ranks, but TORCHTPU_TOPOLOGY=2x2 .* has 4 chips.*"
                                                 "valid: at most 4 ranks"):
        process_host(t, {"WORLD_SIZE": "8", "RANK": "0"})
    assert process_host(Topology.of("v5e", (4, 4)), {"WORLD_SIZE": "16", "RANK": "9"}) == 1  # rank 9: host 1
    two_hosts = Topology.of("v5e", (1, 2), hosts=2)
    assert process_host(two_hosts, {"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1"}) == 1
    with pytest.raises(config.ConfigError, match=r"RANK=3 is LOCAL_RANK=0 of its node \(3 processes per node\).*"
                       r"valid: one process per chip of each host, torchrun --nproc-per-node 2"):
        process_host(two_hosts, {"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "3"})
    drv = SimDriver(topology=Topology.of("v5e", (4, 4)), host=1)
    assert drv.device_count() == 8 and drv.device_properties(3)["coords"] == (2, 3)


# ---------------------------------------------------------------------------- group geometry and times
def test_groups_are_priced_by_their_place_on_the_torus():
    t = Topology.of("v5e", (4, 4))
    v = 64e6
    line = t.collective_seconds("all_gather", v, [0, 1, 2, 3], 1e-6, 5e-5)  # a row: axis 1, 4 chips, no wrap
    assert line == pytest.approx(v * 3 / 4 / (W / 2))  # V (N-1)/N over half the bidi bandwidth [SB-shard]
    col = t.collective_seconds("all_gather", v, [1, 5, 9, 13], 1e-6, 5e-5)  # a column: axis 0
    assert col == pytest.approx(line)
    assert t.group_axes([1, 5, 9, 13]).axes == ((4, False),)
    two_d = t.collective_seconds("all_reduce", v, range(16), 1e-6, 5e-5)  # both axes: bandwidths add
    assert two_d == pytest.approx(2 * v * 15 / 16 / (W / 2 + W / 2))
    sub = t.group_axes([0, 1, 4, 5])  # a 2x2 sub-torus
    assert sub.axes == ((2, False), (2, False)) and sub.regular
    odd = t.group_axes([0, 5, 10])  # a diagonal: modelled as a line through 3 chips
    assert odd.axes == ((3, False),) and not odd.regular
    full = Topology.of("v5e", (16, 16)).group_axes(range(16))  # a full v5e axis of 16 wraps [SB-tpus]
    assert full.axes == ((16, True),)
    tiny = t.collective_seconds("all_gather", 8, [0, 1, 2, 3], 1e-6, 5e-5)
    assert tiny == pytest.approx(3e-6)  # latency floor: 1 us per hop, 3 hops on a line of 4


def test_groups_across_slices_add_the_dcn_collective():
    t = Topology.of("v5e", (2, 2), hosts=2)
    v = 64e6
    only_dcn = t.collective_seconds("all_reduce", v, [0, 4], 1e-6, 5e-5)  # one chip per slice
    assert only_dcn == pytest.approx(2 * v / 2 / V5E.dcn_bw + 2 * 5e-5)  # 2(k-1)/k V/B + 2(k-1) steps
    both = t.collective_seconds("all_reduce", v, range(8), 1e-6, 5e-5)  # ICI 2x2 inside, DCN of V/4 across
    ici = 2 * v * 3 / 4 / W
    assert both == pytest.approx(ici + 2 * (v / 4) / 2 / V5E.dcn_bw + 2 * 5e-5)


# ---------------------------------------------------------------------------- devices of one process
def _devices_probe() -> dict[str, Any]:
    import torch

    import torchtpu

    out: dict[str, Any] = {"count": torch.tpu.device_count()}
    out["names"] = [torch.tpu.get_device_name(i) for i in range(4)]
    props = [torch.tpu.get_device_properties(i) for i in range(4)]
    out["props"] = [{k: getattr(p, k) for k in ("coords", "core_on_chip", "process_index", "slice_index", "id",
                                                "total_memory", "topology")} for p in props]
    base = [torch.tpu.memory_allocated(i) for i in range(4)]
    a = torch.arange(1024, dtype=torch.float32, device="tpu:1")
    b = a.to("tpu:2") * 2
    c = b.to("tpu:1")
    out["mem"] = [torch.tpu.memory_allocated(i) - base[i] for i in range(4)]
    out["copy"] = bool(torch.equal(c.cpu(), torch.arange(1024, dtype=torch.float32) * 2)) and str(b.device)
    try:
        a + b
        out["mixed"] = "no error"
    except RuntimeError as exc:
        out["mixed"] = str(exc)
    torchtpu.random.manual_seed(7, 0)
    torchtpu.random.manual_seed(7, 3)
    x0 = torch.rand(8, device="tpu:0").cpu()
    torchtpu.random.manual_seed(99, 1)  # reseeding device 1 leaves device 3's stream alone
    x3 = torch.rand(8, device="tpu:3").cpu()
    out["rng_same_seed_same_stream"] = bool(torch.equal(x0, x3))
    drv = torchtpu.runtime.driver()
    before = [tl.wall_seconds for tl in drv.timelines]
    y = torch.ones(256, 256, device="tpu:2")
    (y @ y).sum()
    torch.tpu.synchronize()
    out["clock_moved"] = [tl.wall_seconds > b0 for tl, b0 in zip(drv.timelines, before)]
    torch.tpu.set_device(3)
    out["current"] = (torch.tpu.current_device(), torch.empty(1, device="tpu").device.index)
    errors = []
    for bad in (lambda: torch.tpu.set_device(4), lambda: torch.zeros(2, device="tpu:5")):
        try:
            bad()
            errors.append("no error")
        except RuntimeError as exc:
            errors.append(str(exc))
    out["errors"] = errors
    return out


@pytest.fixture(scope="module")
def devices() -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(HERE), "devices"], env=_env(TORCHTPU_TOPOLOGY="2x2"),
                          capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_topology_makes_one_device_per_local_chip_with_torus_attributes(devices):
    assert devices["count"] == 4
    assert devices["names"] == ["TPU v5e"] * 4  # the JAX device_kind style name (see docs/distributed.md)
    assert [p["coords"] for p in devices["props"]] == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert {(p["core_on_chip"], p["process_index"], p["slice_index"], p["topology"]) for p in devices["props"]} \
        == {(0, 0, 0, "2x2")}
    assert [p["id"] for p in devices["props"]] == [0, 1, 2, 3]
    assert devices["props"][0]["total_memory"] == V5E.hbm_bytes


def test_devices_have_their_own_memory_rng_and_clock(devices):
    assert devices["mem"][0] == devices["mem"][3] == 0 and devices["mem"][1] >= 8192 and devices["mem"][2] >= 4096
    assert devices["rng_same_seed_same_stream"]
    assert devices["clock_moved"] == [False, False, True, False]


def test_cross_device_copies_work_and_mixed_devices_raise_as_cuda(devices):
    assert devices["copy"] == "tpu:2"
    assert "Expected all tensors to be on the same device" in devices["mixed"] and "tpu:1" in devices["mixed"]
    assert devices["current"] == [3, 3]
    for msg in devices["errors"]:  # set_device (torch.tpu) and a factory (the C++ shim's device guard)
        assert "invalid device ordinal" in msg and "valid indices are 0..3 (4 tpu devices" in msg
        assert "TORCHTPU_NUM_DEVICES or TORCHTPU_TOPOLOGY sets how many" in msg  # both variables, both paths


# ---------------------------------------------------------------------------- tpu_dist on a 2x2 slice
def _rank(rank: int, world: int, port: int, outdir: str, scenario: str) -> None:
    result: dict[str, Any] = {}
    try:
        import torch
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh

        import torchtpu.distributed
        import torchtpu.runtime

        os.environ.update(MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
        try:
            dist.init_process_group(timeout=datetime.timedelta(seconds=30))
        except Exception as exc:  # noqa: BLE001 - the bad-world scenario reports it
            result["init_error"] = f"{type(exc).__name__}: {exc}"
            return
        torch.tpu.set_device(int(os.environ["LOCAL_RANK"]))
        mesh = init_device_mesh("tpu", (2, 2), mesh_dim_names=("dp", "tp"))
        groups = {"tp": mesh.get_group("tp"), "dp": mesh.get_group("dp"), "world": dist.group.WORLD}
        x = torch.ones(256 * 1024, device="tpu")  # V = 1 MiB
        for name, group in groups.items():
            for kind in ("all_reduce", "all_gather"):
                torchtpu.distributed.reset_stats()
                if kind == "all_reduce":
                    dist.all_reduce(x, group=group)
                else:
                    n = dist.get_world_size(group)
                    out = torch.empty(x.numel() * n, device="tpu")
                    dist.all_gather_into_tensor(out, x, group=group)
                result[f"{name}/{kind}"] = torchtpu.distributed.stats()[kind]["ici_seconds"]
            result[f"{name}/ranks"] = dist.get_process_group_ranks(group)
        result["clock"] = torchtpu.runtime.driver().timelines[rank].wall_seconds
        try:
            init_device_mesh("tpu", (4, 2))
            result["mesh_error"] = "no error"
        except Exception as exc:  # noqa: BLE001
            result["mesh_error"] = f"{type(exc).__name__}: {exc}"
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - written for the test to show
        result["crash"] = traceback.format_exc()
    finally:
        import torch

        torch.save(result, os.path.join(outdir, f"rank{rank}.pt"))


def _launch(world: int, port: int, outdir: str, scenario: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_rank, args=(r, world, port, outdir, scenario)) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(LAUNCH_TIMEOUT_S - 60)
    for p in procs:
        if p.is_alive():
            p.kill()
    print([p.exitcode for p in procs])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_ranks(tmp_path: Path, world: int, topology: str) -> list[dict[str, Any]]:
    import torch

    done = subprocess.run([sys.executable, str(HERE), "ranks", str(world), str(_free_port()), str(tmp_path)],
                          env=_env(TORCHTPU_TOPOLOGY=topology), capture_output=True, text=True,
                          timeout=LAUNCH_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    assert ast.literal_eval(done.stdout.strip().splitlines()[-1]) == [0] * world, done.stderr[-3000:]
    results = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(world)]
    for r, res in enumerate(results):
        assert "crash" not in res, f"rank {r}:\n{res['crash']}"
    return results


def test_four_ranks_on_a_2x2_slice_are_charged_by_the_torus(tmp_path):
    results = _run_ranks(tmp_path, 4, "2x2")
    x = 1024 * 1024  # each rank's tensor: 1 MiB
    line = V5E.ici_link_bw_bidi / 2  # a 2-chip v5e axis does not wrap: a line at half the bidi bandwidth [SB-tpus]

    def expected(kind: str, n: int, bandwidth: float) -> float:  # [SB-shard] with the (N-1)/N ring factor
        v = x * n if kind == "all_gather" else x  # V: the gathered array, the all-reduced array
        return (2 if kind == "all_reduce" else 1) * v * (n - 1) / n / bandwidth

    for r, res in enumerate(results):
        assert res["tp/ranks"] == [r - r % 2, r - r % 2 + 1]  # mesh dim 1: torus axis 1
        assert res["dp/ranks"] == [r % 2, r % 2 + 2]  # mesh dim 0: torus axis 0
        for kind in ("all_gather", "all_reduce"):
            assert res[f"tp/{kind}"] == pytest.approx(expected(kind, 2, line), rel=1e-9)  # 1-D: one axis
            assert res[f"dp/{kind}"] == pytest.approx(expected(kind, 2, line), rel=1e-9)
            assert res[f"world/{kind}"] == pytest.approx(expected(kind, 4, 2 * line), rel=1e-9)  # 2-D: both
        assert "mesh" in res["mesh_error"].lower() and "8" in res["mesh_error"]  # torch's check: 8 > world 4
    assert len({round(res["clock"], 12) for res in results}) == 1  # every rank ends at the same simulated time


def test_a_world_larger_than_the_topology_fails_on_every_rank(tmp_path):
    results = _run_ranks(tmp_path, 2, "1")
    for res in results:
        assert "init_error" in res and "2 ranks" in res["init_error"] and "1 chips" in res["init_error"], res


if __name__ == "__main__":
    if sys.argv[1] == "devices":
        print(json.dumps(_devices_probe()))
    else:
        _launch(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[1])
    sys.stdout.flush()
