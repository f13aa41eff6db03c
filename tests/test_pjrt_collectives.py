"""tpu_dist collectives on the PJRT driver (CPU client): the same results as on the sim, bit for bit.

The collectives scenario of tests/pjrt_coll_workers.py runs on 2 spawned ranks under a timeout, once on the sim
driver and once on pjrt(cpu); on both, tpu_dist moves the data over gloo through host copies (XLA collectives
over JAX's distributed runtime are not built yet), so every result must be equal bit for bit. Before, every
collective on pjrt failed after moving the data, charging a simulated clock the pjrt driver does not have.
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
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(scenario: str, tmp_path: Path, driver: str, world: int = 2, **env: str) -> list[dict[str, Any] | None]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    full = {**os.environ, "MASTER_ADDR": "127.0.0.1", "TORCHTPU_NUM_DEVICES": "1", "TORCHTPU_DRIVER": driver,
            "TORCHTPU_PJRT_PLATFORM": "cpu", **env}
    done = subprocess.run([sys.executable, str(HERE / "dist_workers.py"), f"pjrt_coll_workers:{scenario}",
                           str(world), str(_free_port()), str(tmp_path), str(LAUNCH_TIMEOUT_S - 30)], env=full,
                          capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    return [torch.load(p, weights_only=False) if (p := tmp_path / f"rank{r}.pt").exists() else None
            for r in range(world)]


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    sim = _launch("collectives", tmp_path_factory.mktemp("sim"), "sim")
    pjrt = _launch("collectives", tmp_path_factory.mktemp("pjrt"), "pjrt")
    for res in sim + pjrt:
        assert res is not None and "crash" not in res, res and res.get("crash")
    return sim, pjrt


def test_pjrt_collectives_equal_the_sim_bit_for_bit(both: tuple[list, list]) -> None:
    sim, pjrt = both
    for r in range(2):
        keys = [k for k in sim[r] if k != "all_reduce.charged"]
        assert len(keys) == 3 * 10 + 1 and sorted(keys) == sorted(k for k in pjrt[r] if k != "all_reduce.charged")
        for k in keys:
            a, b = sim[r][k], pjrt[r][k]
            assert a.dtype == b.dtype and a.shape == b.shape, k
            assert torch.equal(a.view(torch.uint8) if a.dtype != torch.int32 else a,
                               b.view(torch.uint8) if b.dtype != torch.int32 else b), (k, a, b)
        assert sim[r]["all_reduce.charged"] == pjrt[r]["all_reduce.charged"] == 10  # 9 + PRODUCT, counted on both
