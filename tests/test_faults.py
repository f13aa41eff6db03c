"""Faults at scale on tpu_dist: a rank killed mid-step (DDP under real torchrun, FSDP2 on spawned ranks), and a
straggler on the simulated clock.

The killed-rank test runs the DDP job of tests/fault_workers.py on two torchrun nodes of one rank each: rank 1
SIGKILLs itself in a backward pass; rank 0 must get, within 10 s (no hang), a DistBackendError naming
the all-reduce, its sequence number, the group and the dead rank. The job is then rerun under one torchrun with
`--max-restarts 1`, where rank 1 dies once more and torchrun's elastic agent restarts both ranks: they resume
from the last DCP checkpoint and must end bit-identical to an uninterrupted run of the same job.
The straggler test runs the "straggler" scenario of fault_workers.py on 2 spawned ranks (dist_workers.py). The
FSDP2 test kills one of 3 spawned `fully_shard` ranks mid-backward (fsdp_fault_workers.py): the other two must get
the same kind of error, naming the collective and the dead rank, within the same bound.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import fault_workers
import fsdp_fault_workers
import pytest
import torch
from test_distributed import _free_port, _run

HERE = Path(__file__).resolve().parent
TORCHRUN_TIMEOUT_S = 480  # two starts of two ranks on a shared 2-core machine


def test_a_straggler_makes_the_others_wait_in_simulated_time_and_a_host_sleep_does_not(tmp_path: Path) -> None:
    codes, results = _run("fault_workers:straggler", tmp_path)
    assert codes == [0, 0]
    fast, slow = results
    extra = fast["extra work"], slow["extra work"]
    # the slow rank's extra simulated work: the records of the 3 matmuls only it ran
    slow_mm = [r for r in extra[1]["records"] if r["op"] != "all_reduce"]
    fast_mm = [r for r in extra[0]["records"] if r["op"] != "all_reduce"]
    assert len(slow_mm) == len(fast_mm) + 3
    extra_s = sum(r["seconds"] for r in slow_mm[len(fast_mm):])
    # each matmul (~31 us) outlasts the host's 5 us launch: the device is the bottleneck, so the slow rank arrives
    # exactly 3 matmuls later
    assert extra_s == pytest.approx(3 * slow_mm[-1]["seconds"]) and slow_mm[-1]["seconds"] > 5e-6
    w_fast, w_slow = extra[0]["waits"], extra[1]["waits"]
    assert w_fast["collective_wait_seconds"] == pytest.approx(extra_s, rel=1e-9)
    assert w_fast["by_rank"] == {1: pytest.approx(extra_s, rel=1e-9)}
    assert extra[0]["stats"]["all_reduce"]["wait_seconds"] == w_fast["collective_wait_seconds"]
    assert w_slow == {"collective_wait_seconds": 0.0, "by_rank": {}}
    # a receive waits for its late sender, and the wait is put down to the sending rank
    late = [res["late send"] for res in results]
    assert late[0]["waits"] == {"collective_wait_seconds": pytest.approx(extra_s, rel=1e-9),
                                "by_rank": {1: pytest.approx(extra_s, rel=1e-9)}}
    assert late[0]["stats"]["recv"]["wait_seconds"] == pytest.approx(extra_s, rel=1e-9)
    assert late[1]["waits"] == {"collective_wait_seconds": 0.0, "by_rank": {}}
    ar_fast, ar_slow = extra[0]["records"][-1], extra[1]["records"][-1]
    assert ar_fast["op"] == ar_slow["op"] == "all_reduce" and ar_fast["start"] == ar_slow["start"]
    # a host sleep (rank 0, 1 s) without extra device work: no rank waits, simulated time is that of no sleep
    for res in results:
        sleep, plain = res["host sleep"], res["plain"]
        assert sleep["waits"]["collective_wait_seconds"] == 0.0 == plain["waits"]["collective_wait_seconds"]
        assert sleep["t1"] - sleep["t0"] == pytest.approx(plain["t1"] - plain["t0"], rel=1e-9, abs=1e-15)
        assert sleep["stats"]["all_reduce"]["host_wall_seconds"] >= 0


def _torchrun(outdir: Path, kill_step: int, tag: str, *node_args: str) -> subprocess.Popen:
    env = {**os.environ, "TORCHTPU_NUM_DEVICES": "1", "GLOO_SOCKET_IFNAME": "lo"}
    cmd = [sys.executable, "-m", "torch.distributed.run", *node_args, str(HERE / "fault_workers.py"), str(outdir),
           str(kill_step), tag]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _finish(procs: list[subprocess.Popen], timeout_s: float) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout_s
    out = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        out.append((p.returncode, err))
    return out


def test_a_rank_killed_mid_step_errors_the_survivor_and_torchrun_resumes_from_dcp_bit_identical(
        tmp_path: Path) -> None:
    # 1. two torchrun nodes of one rank each (static rendezvous on 127.0.0.1), no restarts: rank 1 dies in the
    # backward of step 1; node 0's agent does not see it, its rank gets tpu_dist's error
    port = str(_free_port())
    nodes = [_torchrun(tmp_path, 1, "a", "--nnodes", "2", "--nproc-per-node", "1", "--node-rank", str(n),
                       "--master-addr", "127.0.0.1", "--master-port", port, "--max-restarts", "0")
             for n in range(2)]
    results = _finish(nodes, TORCHRUN_TIMEOUT_S / 2)
    assert [rc for rc, _ in results] == [1, 1], [err[-3000:] for _, err in results]
    killed_at = float((tmp_path / "killed_a").read_text())
    err = torch.load(tmp_path / "error_a_rank0.pt", weights_only=False)
    kind, msg = err["error"]
    assert "DistBackendError" in kind + msg, msg
    assert "all_reduce #" in msg and "group '0' (2 ranks)" in msg and "rank 1 did not reach it" in msg, msg
    elapsed = err["at"] - killed_at
    assert 0 < elapsed < fault_workers.ERROR_BOUND_S, f"the survivor's error came {elapsed:.1f} s after the kill"
    assert not (tmp_path / "error_a_rank1.pt").exists()
    # 2. rerun as one torchrun with --max-restarts 1: it resumes from step 0's checkpoint; rank 1 dies again in
    # step 3; torchrun's agent restarts both ranks, which resume from step 2's checkpoint and finish
    elastic = _torchrun(tmp_path, 3, "b", "--nnodes", "1", "--nproc-per-node", "2", "--max-restarts", "1",
                        "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{_free_port()}")
    [(rc, stderr)] = _finish([elastic], TORCHRUN_TIMEOUT_S / 2)
    assert rc == 0, stderr[-4000:]
    assert (tmp_path / "killed_b").exists()
    for r in range(2):
        res = torch.load(tmp_path / f"final_b_rank{r}.pt", weights_only=False)
        assert res["attempt"] == 1 and res["first"] == 3  # resumed after the last complete step
        assert list(res["losses"]) == list(range(3, fault_workers.STEPS))
        for step, loss in res["losses"].items():
            assert loss == res["ref losses"][step], (r, step)
        for p, q in zip(res["params"], res["ref params"]):
            assert torch.equal(p, q)


def test_an_fsdp2_rank_killed_mid_backward_errors_every_survivor_within_bounded_time(tmp_path: Path) -> None:
    """fsdp_fault_workers.py "killed": 3 spawned ranks under fully_shard; rank 2 SIGKILLs itself in step 1's
    backward. Both survivors' step raises DistBackendError naming the collective (its sequence number on the
    group) and rank 2, within 10 s of the kill, and their next collective errors the same way (no hang)."""
    os.environ["TORCHTPU_TEST_OUTDIR"] = str(tmp_path)  # inherited by the spawned ranks (where to write "killed")
    try:
        codes, results = _run("fsdp_fault_workers:killed", tmp_path, world=3)
    finally:
        del os.environ["TORCHTPU_TEST_OUTDIR"]
    assert codes == [0, 0, -signal.SIGKILL] and results[2] is None
    killed_at = float((tmp_path / "killed").read_text())
    seqs = set()
    for r in (0, 1):
        res = results[r]
        kind, msg = res["error"]
        assert kind == "DistBackendError", msg
        assert res["step"] == fsdp_fault_workers.KILL_STEP and len(res["losses"]) == 1
        m = re.search(r"tpu_dist (reduce_scatter|all_gather) #(\d+) of group '0' \(3 ranks\) failed on rank (\d): "
                      r"rank 2 did not reach it", msg)
        assert m is not None and int(m.group(3)) == r, msg
        seqs.add(int(m.group(2)))
        assert 0 < res["at"] - killed_at < fault_workers.ERROR_BOUND_S, res["at"] - killed_at
        kind, msg, seconds = res["next collective"]
        assert kind == "DistBackendError" and "rank 2 did not reach it" in msg and seconds < 10, msg
    assert len(seqs) == 1  # both survivors failed in the same collective
