"""FSDP2 (`fully_shard`, unmodified) on 2 ranks of tpu_dist: 10 training steps equal one chip at HIGHEST (plain,
reshard_after_forward=False, MixedPrecisionPolicy(bf16, fp32)), the state_dict / full_tensor round trip, and the
overlap of its side-stream all-gathers with compute on the simulated timeline.

Each test runs one scenario of tests/fsdp_workers.py in a subprocess under a timeout (spawned ranks, gloo on
127.0.0.1) and asserts on what every rank wrote.
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

import torchtpu  # noqa: F401  (registers the device and the backend)

HERE = Path(__file__).resolve().parent
LAUNCH_TIMEOUT_S = 540  # a shared 2-core machine: two ranks start in ~40 s, 10 steps take a few minutes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(scenario: str, tmp_path: Path, world: int = 2, topology: str | None = None) -> list[dict[str, Any]]:
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "TORCHTPU_NUM_DEVICES": "1"}
    if topology is not None:  # the process sees the host's chips; rank r drives tpu:r
        del env["TORCHTPU_NUM_DEVICES"]
        env["TORCHTPU_TOPOLOGY"] = topology
    name = scenario if ":" in scenario else f"fsdp_workers:{scenario}"  # "module:scenario" of dist_workers.py
    done = subprocess.run([sys.executable, str(HERE / "dist_workers.py"), name, str(world), str(_free_port()),
                           str(tmp_path), str(LAUNCH_TIMEOUT_S - 30)], env=env, capture_output=True, text=True,
                          timeout=LAUNCH_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    codes = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    results = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(world)]
    for r, res in enumerate(results):
        assert "crash" not in res, f"rank {r} crashed:\n{res['crash']}"
    assert codes == [0] * world
    return results


def _check_training(results: list[dict[str, Any]], rtol: float = 1e-5, atol: float = 1e-6) -> None:
    world = len(results)
    for res in results:
        assert len(res["losses"]) == 10
        assert res["full"].keys() == res["single"].keys()
        for name, value in res["full"].items():
            torch.testing.assert_close(value, res["single"][name], rtol=rtol, atol=atol, msg=name)
            assert torch.equal(res["again"][name], value), f"state_dict round trip changed {name}"
        # every parameter is sharded along dim 0 (the embedding: 64 rows -> 64 / world per rank)
        assert res["local shapes"]["embed.weight"] == (64 // world, 32)
        assert res["dist stats"]["all_gather"]["count"] >= 10 and res["dist stats"]["reduce_scatter"]["count"] >= 10
    assert results[0]["losses"] != results[1]["losses"]  # each rank trained on its own half of the batch
    assert results[0]["losses"][-1] < results[0]["losses"][0]


@pytest.mark.parametrize("scenario", ["plain", "keep"],
                         ids=["reshard_after_forward=True", "reshard_after_forward=False"])
def test_fsdp2_ten_steps_on_two_ranks_equal_one_chip(scenario: str, tmp_path: Path) -> None:
    _check_training(_run(scenario, tmp_path))


def test_fsdp2_mixed_precision_bf16_params_fp32_reduce_equals_its_one_chip_arithmetic(tmp_path: Path) -> None:
    results = _run("mixed", tmp_path)
    _check_training(results)
    assert results[0]["losses"] == pytest.approx(results[0]["single losses"], rel=1e-6)


def test_fsdp2_all_gathers_on_side_streams_overlap_compute(tmp_path: Path) -> None:
    results = _run("overlap", tmp_path)
    for res in results:
        step, compute, comm = res["step"], res["compute"], res["collectives"]
        assert {"all_gather", "reduce_scatter"} <= set(res["kinds"])
        assert compute > 0 and comm > 0
        assert max(compute, comm) <= step * (1 + 1e-9)
        assert step < compute + comm  # overlapped: less than the two run one after the other


def test_fsdp2_on_four_ranks_of_a_2x2_slice_equals_one_chip(tmp_path: Path) -> None:
    """TORCHTPU_TOPOLOGY=2x2, rank r on tpu:r: fp32 with reshard_after_forward True and False, and
    MixedPrecisionPolicy(bf16, fp32) against its one-chip arithmetic, 10 steps each, in one 4-rank launch."""
    results = _run("four", tmp_path, world=4, topology="2x2")
    for config in ("plain", "keep", "mixed"):
        runs = [res[config] for res in results]
        assert [run["device"] for run in runs] == ["tpu:0", "tpu:1", "tpu:2", "tpu:3"]
        _check_training(runs)
        assert len({tuple(run["losses"]) for run in runs}) == 4
    assert results[0]["mixed"]["losses"] == pytest.approx(results[0]["mixed"]["single losses"], rel=1e-6)  # shard 0
    for res in results:
        # reshard_after_forward=False keeps the blocks' parameters for backward: no second all-gather
        assert res["keep"]["dist stats"]["all_gather"]["count"] < res["plain"]["dist stats"]["all_gather"]["count"]
