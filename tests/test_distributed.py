"""The c10d backend "tpu_dist" on 2 and 4 ranks (one process per simulated chip, gloo on 127.0.0.1).

Each multi-rank test runs one scenario of tests/dist_workers.py in a subprocess under a timeout and asserts on
what every rank wrote: collectives against a plain gloo group on cpu (bit-identical), the simulated clock after a
collective, DDP against one chip, and the bad-input cases (clear errors on every rank, no hang).
"""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torchtpu.sim.chips import get_chip

import torchtpu  # noqa: F401  (registers the device and the backend)
from torchtpu.distributed import clock

HERE = Path(__file__).resolve().parent
LAUNCH_TIMEOUT_S = 420  # the machine is shared: a 2-rank start takes ~40 s of it


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(scenario: str, tmp_path: Path, world: int = 2) -> tuple[list[int | None], list[dict[str, Any] | None]]:
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "TORCHTPU_NUM_DEVICES": "1"}
    done = subprocess.run([sys.executable, str(HERE / "dist_workers.py"), scenario, str(world), str(_free_port()),
                           str(tmp_path), str(LAUNCH_TIMEOUT_S - 30)], env=env, capture_output=True, text=True,
                          timeout=LAUNCH_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    codes = ast.literal_eval(done.stdout.strip().splitlines()[-1])  # the launcher prints the exit codes
    results = []
    for r in range(world):
        path = tmp_path / f"rank{r}.pt"
        results.append(torch.load(path, weights_only=False) if path.exists() else None)
    for r, res in enumerate(results):
        assert res is None or "crash" not in res, f"rank {r} crashed:\n{res['crash']}"
    return codes, results


def test_registered_for_tpu_as_a_list_and_init_without_backend_picks_it() -> None:
    m = dist.Backend.default_device_backend_map
    assert m["tpu"] == "tpu_dist" and m["cpu"] == "gloo"
    assert not {"t", "p", "u"} & set(m), "devices= was given as a string (iterated per character)"
    assert dist.Backend.backend_capability["tpu_dist"] == ["tpu"]
    assert torch._C._get_accelerator().type == "tpu"  # what init_process_group() with no backend looks up


def test_ici_cost_follows_the_ring_formulas() -> None:
    v5e = get_chip("v5e")
    # 2 chips of a v5e axis (no wraparound below 16): one link, 4.5e10 B/s each way [SB-tpus]
    assert clock.collective_seconds("all_reduce", 9e6, 2, v5e) == pytest.approx(9e6 / 4.5e10)
    assert clock.collective_seconds("all_gather", 9e6, 2, v5e) == pytest.approx(9e6 / 2 / 4.5e10)
    assert clock.collective_seconds("all_to_all", 9e6, 2, v5e) == pytest.approx(9e6 / 2 / 4.5e10 / 4)
    assert clock.collective_seconds("broadcast", 9e6, 2, v5e) == clock.collective_seconds("all_reduce", 9e6, 2, v5e)
    # send/recv: one hop between 2 chips, T_min + V / one-way link bandwidth [SB-shard], [SB-tpus]
    assert clock.collective_seconds("send", 9e6, 2, v5e) == pytest.approx(1e-6 + 9e6 / v5e.ici_link_bw_oneway)
    assert clock.p2p_seconds(9e6, 4, v5e, None, 0, 3) == pytest.approx(3e-6 + 9e6 / v5e.ici_link_bw_oneway)
    assert clock.collective_seconds("all_reduce", 8, 2, v5e) == pytest.approx(2e-6)  # latency floor, 1 us a hop
    assert clock.collective_seconds("all_reduce", 9e6, 1, v5e) == 0.0
    # a full v5e axis of 16 wraps: a bidirectional ring, V (n-1)/n / W_bidi per gather [SB-shard]
    assert clock.collective_seconds("all_gather", 9e9, 16, v5e) == pytest.approx(9e9 * 15 / 16 / 9e10)
    with pytest.raises(ValueError, match="unknown collective 'allreduce'; valid: all_reduce"):
        clock.collective_seconds("allreduce", 1, 2, v5e)


@pytest.fixture(scope="module", params=[2, 4], ids=["2 ranks", "4 ranks"])
def collectives(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    world = request.param
    codes, results = _run("collectives", tmp_path_factory.mktemp(f"collectives{world}"), world)
    assert codes == [0] * world
    return results


def test_every_collective_matches_gloo_on_cpu_bit_for_bit(collectives: list[dict[str, Any]]) -> None:
    results = collectives
    for rank, res in enumerate(results):
        assert res["pg"] == "TpuProcessGroup" and res["backend"] == "undefined"
        assert res["default map tpu"] == "tpu_dist"
        assert res["mesh group"][0] == "TpuProcessGroup" and res["mesh group"][1]
        compared = {k: v for k, v in res.items() if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], list)}
        assert len(compared) >= 40
        for name, (got, expected) in compared.items():
            assert len(got) == len(expected), name
            for g, e in zip(got, expected):
                assert g.dtype == e.dtype and g.shape == e.shape, f"rank {rank} {name}: {g.dtype}{g.shape}"
                assert torch.equal(g, e), f"rank {rank} {name}:\n{g}\n!=\n{e}"
    for name in ("all_reduce torch.int64 RedOpType.BXOR", "all_reduce torch.float32 RedOpType.AVG",
                 "all_to_all_single uneven", "all_to_all_single empty 1-d sender", "all_to_all uneven",
                 "batch_isend_irecv ring (irecv first)",
                 "all_gather_into_tensor coalesced", "reduce_scatter_tensor coalesced", "send/recv"):
        assert name in results[0], name


def test_a_collective_advances_every_rank_to_the_slowest_start_plus_its_ici_time(
        collectives: list[dict[str, Any]]) -> None:
    results = collectives
    r0, others = results[0], results[1:]
    assert all(r0["clock before"] > r["clock before"] for r in others)  # rank 0 ran matmuls first
    for res in results:
        rec = res["record"]
        assert rec["op"] == "all_reduce" and rec["bound"] == "ici"
        assert rec["seconds"] == pytest.approx(res["formula"])
        assert rec["start"] >= r0["clock before"]
        assert res["clock after"] == rec["end"]
    for r in others:
        assert r["record"]["start"] == r0["record"]["start"] and r["clock after"] == r0["clock after"]
        assert r["dist stats"]["all_reduce"]["wait_seconds"] > r0["dist stats"]["all_reduce"]["wait_seconds"]
    assert r0["dist stats"]["all_reduce"]["ici_seconds"] >= r0["formula"]
    # ranks on one line of v5e chips (no wraparound below 16): 2 x V (n-1)/n / 4.5e10 B/s [SB-shard], [SB-tpus]
    n = len(results)
    assert r0["formula"] == pytest.approx(2 * (1 << 20) * (n - 1) / n / 4.5e10)


def test_ddp_five_steps_on_two_ranks_equal_one_chip(tmp_path: Path) -> None:
    codes, results = _run("ddp", tmp_path)
    assert codes == [0, 0]
    for res in results:
        for p, q in zip(res["params"], res["single"]):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
        assert res["dist stats"]["all_reduce"]["count"] >= 5  # one gradient bucket per step
    assert results[0]["losses"] != results[1]["losses"]  # each rank trained on its own shard
    assert results[0]["params"][0].ne(_untrained_weight()).any()


def _untrained_weight() -> torch.Tensor:
    sys.path.insert(0, str(HERE))
    import dist_train_workers

    return dist_train_workers._model()[0].weight.detach()


def test_bad_input_raises_the_same_clear_error_on_every_rank(tmp_path: Path) -> None:
    codes, results = _run("bad", tmp_path)
    assert codes == [0, 0]
    for res in results:
        kind, msg, seconds = res["cpu tensor"]
        assert kind == "ValueError" and "cpu tensor" in msg and "'tpu_dist' alone" in msg
        kind, msg, _ = res["shape mismatch"]
        assert kind == "ValueError" and "float32[4]" in msg and "float32[5]" in msg and "do not match" in msg
        kind, msg, _ = res["dtype mismatch"]
        assert kind == "ValueError" and "int32[4]" in msg and "float32[4]" in msg
        kind, msg, _ = res["gather list length"]
        assert kind == "ValueError" and "rank 1" in msg and "3 tensors, the group has 2 ranks" in msg
        kind, msg, _ = res["a2a splits"]
        assert kind == "ValueError" and "split sizes" in msg
        assert all(v[2] < 5 for k, v in res.items() if k != "after")  # errors, not timeouts
        assert res["after"].tolist() == [3.0, 3.0]
    assert results[0]["recv mismatch"][0] == "no error"
    kind, msg, _ = results[1]["recv mismatch"]
    assert kind == "ValueError" and "sender sent float32[3]" in msg and "float32[4]" in msg


def test_a_dead_rank_gives_the_others_an_error_naming_the_collective_and_the_rank(tmp_path: Path) -> None:
    codes, results = _run("dead", tmp_path)
    assert codes == [0, 3]
    kind, msg = results[0]["error"]
    assert kind == "DistBackendError"
    assert "all_reduce #2" in msg and "rank 1 did not reach it" in msg
    assert results[0]["seconds"] < 15


def test_a_stuck_rank_times_out_with_an_error_instead_of_a_hang(tmp_path: Path) -> None:
    codes, results = _run("stuck", tmp_path)
    assert codes == [0, 0]
    kind, msg = results[0]["error"]
    assert kind == "DistBackendError" and "broadcast #1" in msg and "rank 1 did not reach it" in msg
    assert "Timed out" in msg
    assert results[0]["seconds"] < 20  # 5 s group timeout + 5 s waiting for the others' reports
