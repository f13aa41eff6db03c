"""tpu_dist collectives on the PJRT driver (CPU client) across 2 processes: XLA collectives, the sim's results.

Each scenario of tests/pjrt_coll_workers.py runs under torchrun on 2 ranks (127.0.0.1, under a timeout): RANK,
WORLD_SIZE and MASTER_PORT are set before torchtpu loads, so the pjrt driver joins JAX's distributed runtime
(TORCHTPU_PJRT_DISTRIBUTED auto) and tpu_dist runs all_reduce / all_gather / reduce_scatter / broadcast /
all_to_all as compiled XLA collectives over JAX's gloo CPU collectives (drivers/pjrt/collectives.py). The same
scenario on the sim moves host copies through gloo; every result must be equal bit for bit. `xla_path` proves the
XLA path ran (its counters) without host transfers (the driver's read/write counters); `dead_peer` that a rank
that dies gives the survivor an error within the group's timeout, not a hang.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("jax")

HERE = Path(__file__).resolve().parent
LAUNCH_TIMEOUT_S = 300


def _free_port() -> int:
    """A port p with p + 1 free too (MASTER_PORT and JAX's coordinator at MASTER_PORT + 1)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two adjacent free ports on 127.0.0.1")


def _launch(scenario: str, tmp_path: Path, driver: str, world: int = 2, timeout_s: float = LAUNCH_TIMEOUT_S,
            worker: str = "pjrt_coll_workers.py") -> tuple[list[dict[str, Any] | None], str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TORCHTPU_NUM_DEVICES": "1", "TORCHTPU_DRIVER": driver, "TORCHTPU_PJRT_PLATFORM": "cpu",
           "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(world), "--master-addr",
           "127.0.0.1", "--master-port", str(_free_port()), str(HERE / worker), scenario,
           str(tmp_path)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
    results = [torch.load(p, weights_only=False) if (p := tmp_path / f"rank{r}.pt").exists() else None
               for r in range(world)]
    return results, done.stderr[-3000:]


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    sim, err_sim = _launch("collectives", tmp_path_factory.mktemp("sim"), "sim")
    pjrt, err_pjrt = _launch("collectives", tmp_path_factory.mktemp("pjrt"), "pjrt")
    for res, err in [(r, err_sim) for r in sim] + [(r, err_pjrt) for r in pjrt]:
        assert res is not None and "crash" not in res, (res and res.get("crash")) or err
    return sim, pjrt


def test_pjrt_collectives_equal_the_sim_bit_for_bit(both: tuple[list, list]) -> None:
    sim, pjrt = both
    for r in range(2):
        keys = [k for k in sim[r] if k not in ("all_reduce.charged", "xla")]
        assert len(keys) == 2 * 11 + 10 + 1 and sorted(keys) == sorted(
            k for k in pjrt[r] if k not in ("all_reduce.charged", "xla"))
        for k in keys:
            a, b = sim[r][k], pjrt[r][k]
            assert a.dtype == b.dtype and a.shape == b.shape, k
            assert torch.equal(a.view(torch.uint8) if a.dtype != torch.int32 else a,
                               b.view(torch.uint8) if b.dtype != torch.int32 else b), (k, a, b)
        assert sim[r]["all_reduce.charged"] == pjrt[r]["all_reduce.charged"] == 12  # 11 + PRODUCT on both
        assert sim[r]["xla"] is None
        # every collective of the scenario ran as XLA's (fp32, bf16 and int32 are XLA dtypes); the barrier did not
        assert pjrt[r]["xla"] == {"all_reduce": 12, "all_gather": 6, "reduce_scatter": 9, "broadcast": 3,
                                  "all_to_all": 3}, pjrt[r]["xla"]


def test_pjrt_collectives_take_the_xla_path_without_host_transfers(tmp_path: Path) -> None:
    res, err = _launch("xla_path", tmp_path, "pjrt")
    for r, out in enumerate(res):
        assert out is not None and "crash" not in out, (out and out.get("crash")) or err
        assert out["process"] == (r, 2)  # joined JAX's distributed runtime as process RANK of WORLD_SIZE
        reads, writes, counts = out["before"]
        assert out["after"] == (reads, writes, {k: counts.get(k, 0) + 1 for k in
                                                ("all_reduce", "all_gather", "reduce_scatter", "broadcast")})
        # int64 (JAX runs without x64) takes the host path: counted by no XLA collective, still correct
        assert out["after_int64"] == out["after"][2]
        assert torch.equal(out["int64"], torch.arange(6) * 2 + 1)


def test_a_dead_peer_gives_the_survivor_an_error_not_a_hang(tmp_path: Path) -> None:
    res, err = _launch("dead_peer", tmp_path, "pjrt", timeout_s=120)
    assert res[1] is None  # rank 1 died (os._exit) before writing
    out = res[0]
    assert out is not None and "crash" not in out, (out and out.get("crash")) or err
    assert out["error"] is not None and "1" in out["error"], out
    assert out["seconds"] < 60, out
