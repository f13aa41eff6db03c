"""Several hosts: two torchrun nodes of 2 processes each (c10d rendezvous on 127.0.0.1) form one simulated system of
2 slices joined by DCN (TORCHTPU_TOPOLOGY=1x2, TORCHTPU_HOSTS=2 on v5e: each slice one host of 2 chips); rank r
drives chip r through `torch.tpu.set_device(LOCAL_RANK)`. The collectives' charges equal the formulas of
sim/ici.py worked by hand (ICI only within a slice, DCN across, ICI + DCN for the world's hierarchical
all-reduce); HSDP over a ("replicate", "shard") mesh equals one chip. `torchtpu topology` prints the system.

The ranks run tests/multihost_workers.py; each launch and every subprocess is bounded in time.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torchtpu.perfmodel.calibration import Calibration
from torchtpu.sim.chips import get_chip

HERE = Path(__file__).resolve().parent
LAUNCH_TIMEOUT_S = 400  # a shared 2-core machine: 4 ranks import torch and torchtpu at once
V5E = get_chip("v5e")
W = V5E.ici_link_bw_bidi  # 9e10 B/s per link, both directions [SB-tpus]
DCN = V5E.dcn_bw  # 3.125e9 B/s per chip [SB-tpus]
ICI_HOP_S = 1e-6  # T_min per ICI hop [SB-shard]
DCN_HOP_S = Calibration.dcn_hop_latency_s  # per DCN ring step (the perfmodel's calibration)
SYSTEM = {"TORCHTPU_CHIP": "v5e", "TORCHTPU_TOPOLOGY": "1x2", "TORCHTPU_HOSTS": "2"}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTPU_") or k == "TORCHTPU_CACHE_DIR"}
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK", "LOCAL_WORLD_SIZE"):
        env.pop(k, None)
    return {**env, **extra}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(outdir: Path, scenarios: str) -> list[dict[str, Any]]:
    """Two torchrun nodes on loopback (node 0 hosts the rendezvous store), 2 processes each; every rank's file."""
    port = _free_port()
    nodes = []
    for node in (0, 1):
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "2",
               "--node-rank", str(node), "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
               "--rdzv-conf", f"is_host={int(node == 0)},timeout=120,read_timeout=120", "--local-addr", "127.0.0.1",
               "--max-restarts", "0", "--monitor-interval", "1", str(HERE / "multihost_workers.py"), str(outdir),
               scenarios]
        log = open(outdir / f"node{node}.log", "w")  # noqa: SIM115 - closed below
        nodes.append((subprocess.Popen(cmd, env=_env(**SYSTEM), stdout=log, stderr=subprocess.STDOUT), log))
    codes = []
    for proc, log in nodes:
        try:
            codes.append(proc.wait(timeout=LAUNCH_TIMEOUT_S))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(proc.wait(timeout=30))
        log.close()
    logs = "\n".join((outdir / f"node{n}.log").read_text()[-3000:] for n in (0, 1))
    assert codes == [0, 0], logs
    results = [torch.load(outdir / f"rank{r}.pt", weights_only=False) for r in range(4)]
    for r, res in enumerate(results):
        assert "crash" not in res, f"rank {r}:\n{res['crash']}"
    return results


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return _torchrun(tmp_path_factory.mktemp("multihost"), "charges,hsdp")


# one 4-rank torchrun launch for the module: ~35 s on two quiet cores
def test_each_rank_of_two_torchrun_nodes_drives_its_own_chip_of_its_host(two_nodes):
    for r, res in enumerate(two_nodes):
        w = res["where"]
        assert w["env"] == {"RANK": r, "LOCAL_RANK": r % 2, "GROUP_RANK": r // 2, "LOCAL_WORLD_SIZE": 2,
                            "WORLD_SIZE": 4}
        assert w["device_count"] == 2 and w["current"] == r % 2  # a host's 2 chips; set_device(LOCAL_RANK)
        assert (w["chip"], w["slice"], w["host"], tuple(w["coords"])) == (r, r // 2, r // 2, (0, r % 2))
        assert (w["num_slices"], w["num_hosts"]) == (2, 2)


def test_collectives_are_charged_ici_within_a_slice_dcn_across_and_both_for_the_world(two_nodes):
    v = 1024 * 1024  # each all-reduced array: 1 MiB
    line = W / 2  # a 2-chip v5e axis does not wrap: a line at half the bidi bandwidth [SB-tpus]
    ici = max(2 * v * (2 - 1) / 2 / line, 2 * ICI_HOP_S * 1)  # all-reduce = 2 x all-gather [SB-shard]
    dcn_across = 2 * (2 - 1) / 2 * v / DCN + 2 * (2 - 1) * DCN_HOP_S  # ring over 2 slices, 2(k-1) steps
    dcn_world = 2 * (2 - 1) / 2 * (v / 2) / DCN + 2 * (2 - 1) * DCN_HOP_S  # each chip's half of V across
    expected = {"shard": ici, "replicate": dcn_across, "world": ici + dcn_world}
    for r, res in enumerate(two_nodes):
        c = res["charges"]
        assert c["shard"]["ranks"] == [r - r % 2, r - r % 2 + 1]  # within the rank's slice: ICI
        assert c["replicate"]["ranks"] == [r % 2, r % 2 + 2]  # one chip per slice: DCN
        assert c["world"]["ranks"] == [0, 1, 2, 3]
        for name, seconds in expected.items():
            assert c[name]["bytes"] == v
            assert c[name]["charged"] == pytest.approx(seconds, rel=1e-9), name
            assert c[name]["value"] == len(c[name]["ranks"])  # the sum of ones over the group
            # the rank's clock across the call: the charge plus launch overheads
            assert seconds <= c[name]["clock"] <= seconds + 50e-6, (name, c[name]["clock"])
    assert expected["replicate"] > 10 * expected["shard"]  # DCN is far slower than ICI at this size


def test_hsdp_over_replicate_across_slices_and_shard_within_equals_one_chip(two_nodes):
    for r, res in enumerate(two_nodes):
        h = res["hsdp"]
        assert h["mesh groups"] == {"replicate": [r % 2, r % 2 + 2], "shard": [r - r % 2, r - r % 2 + 1]}
        assert h["placements"]["embed.weight"] == "(Replicate(), Shard(dim=0))"
        assert h["local shapes"]["embed.weight"] == (32, 32)  # 64 rows sharded over the 2 chips of a slice
        assert h["full"].keys() == h["single"].keys()
        for name, value in h["full"].items():  # the tolerance of tests/test_fsdp.py
            torch.testing.assert_close(value, h["single"][name], rtol=1e-5, atol=1e-6, msg=name)
        stats = h["dist stats"]
        assert stats["reduce_scatter"]["count"] >= 3 and stats["all_reduce"]["count"] >= 3
        assert h["losses"][-1] < h["losses"][0]
    assert len({tuple(res["hsdp"]["losses"]) for res in two_nodes}) == 4  # each rank its own quarter


# ---------------------------------------------------------------------------- torchtpu topology
def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torchtpu.cli", "topology", *args], env=_env(**env),
                          capture_output=True, text=True, timeout=180)


def test_topology_cli_prints_slices_hosts_chips_and_links():
    done = _cli(**SYSTEM)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "chip: v5e (TPU v5e)" in out and "slice: 1x2 (2 slices, 4 chips in all)" in out
    assert "hosts: 2 (1 per slice), 2 chips per host" in out
    assert "host 0 (slice 0): chips 0 (0, 0), 1 (0, 1)" in out and "host 1 (slice 1): chips 2 (0, 0), 3 (0, 1)" in out
    assert "9e+10 B/s per link both ways" in out and V5E.sources["ici_link_bw_bidi"] in out
    assert f"DCN (between slices): 3.125e+09 B/s per chip [{V5E.sources['dcn_bw']}]" in out
    done = _cli("--json", **SYSTEM)
    d = json.loads(done.stdout)
    assert (d["slices"], d["hosts"], d["chips_per_host"], d["chips"]) == (2, 2, 2, 4)
    assert [[c["id"] for c in h["chips"]] for h in d["host_list"]] == [[0, 1], [2, 3]]
    assert d["dcn"] == {"bw_per_chip": DCN, "source": V5E.sources["dcn_bw"], "joins": "slices", "used": True}


@pytest.mark.parametrize("env,match", [
    ({"TORCHTPU_TOPOLOGY": "4x4", "TORCHTPU_HOSTS": "3"}, "TORCHTPU_HOSTS=3: a 4x4 v5e slice is 2 hosts"),
    ({"TORCHTPU_TOPOLOGY": "2x"}, "TORCHTPU_TOPOLOGY='2x'"),
])
def test_topology_cli_bad_values_give_the_clear_error(env, match):
    done = _cli(**env)
    # the variables are checked when torchtpu is imported (registration's config.check_all) or by the command
    assert done.returncode != 0 and match in done.stderr and "valid" in done.stderr, done.stderr[-2000:]
