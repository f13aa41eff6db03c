"""The perfmodel's eager step model (perfmodel/eager.py) against the simulator's own sharded runs.

`test_two_ranks_...` runs benchmarks/scaling.py (2 spawned ranks under tpu_dist, TORCHTPU_TOPOLOGY=1x2, a small
decoder, one warmup and one measured step) and checks the simulated step against `perfmodel.eager.predict_step`:
simulated time is deterministic, so this is a correctness check of the model (and of the simulator's charges),
not a timing test. The other tests check the model's rules on hand-derived cases.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from torchtpu.perfmodel.config import ModelConfig
from torchtpu.perfmodel.eager import DDP_BUCKET, DDP_FIRST_BUCKET, _ddp_buckets, predict_step, schedule

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import scaling_steps  # noqa: E402

BOUND = 0.05  # |simulated / predicted - 1| for the DDP step at this size (the benchmark's rows: docs/perfmodel.md)


def _cfg(d: int = 256, f: int = 640, v: int = 1024) -> ModelConfig:
    return ModelConfig(name="d", d_model=d, n_layers=2, n_heads=4, head_dim=d // 4, d_ff=f, vocab_size=v,
                       n_kv_heads=4, gated_mlp=True)


def test_ddp_buckets_follow_the_reducer_rule():
    # reverse registration order; the first bucket closes at 1 MiB, later ones at 25 MiB
    params = [("a", 6 << 20), ("b", 1 << 20), ("c", 7 << 20), ("d", 1 << 18)]  # elements; 2 bytes each
    got = _ddp_buckets(params, 2)
    assert [[n for n, _ in b] for b in got] == [["d", "c"], ["b", "a"]]
    assert 2 * (1 << 18) < DDP_FIRST_BUCKET <= 2 * ((1 << 18) + (7 << 20)) and DDP_BUCKET == 25 << 20


def test_schedule_runs_kernels_in_order_and_collectives_behind_their_inputs():
    # host launch 1; kernel A (10), all-reduce (20) of A's result, kernel B (5) independent, C waits for it
    items = [("k", "A", 10.0), ("c", "ar", 20.0, 1, False), ("k", "B", 5.0), ("w", 1), ("k", "C", 1.0)]
    out = schedule(items, 1.0)
    # A 1..11; all-reduce from max(host 2, A's end 11) to 31; B 11..16; C waits: 31..32
    assert out["step"] == pytest.approx(32.0)
    assert out["compute"] == pytest.approx(16.0) and out["ici"] == pytest.approx(20.0)
    assert out["exposed"] == pytest.approx(15.0)  # the all-reduce overlaps B only
    blocking = schedule([("k", "A", 10.0), ("c", "ar", 20.0, 1, True), ("k", "B", 5.0)], 1.0)
    assert blocking["step"] == pytest.approx(36.0)  # TP: B reads the all-reduced value


def test_one_chip_has_no_communication_and_layouts_differ_only_in_it():
    one = predict_step(_cfg(), "v5e", 1, "ddp", per_device_batch=4, seq_len=128)
    assert one.comm_seconds == 0 and one.exposed_seconds == 0
    ddp = predict_step(_cfg(), "v5e", 2, "ddp", per_device_batch=4, seq_len=128)
    fsdp = predict_step(_cfg(), "v5e", 2, "fsdp", per_device_batch=4, seq_len=128)
    assert ddp.step_seconds > one.step_seconds and ddp.comm_seconds > 0 and fsdp.comm_seconds > ddp.comm_seconds
    with pytest.raises(ValueError, match="unknown layout 'pp'; valid: ddp, fsdp, tp"):
        predict_step(_cfg(), "v5e", 2, "pp", per_device_batch=4, seq_len=128)


def test_two_ranks_ddp_step_matches_the_model(tmp_path):
    out = tmp_path / "rows.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTPU_") or k == "TORCHTPU_CACHE_DIR"}
    cmd = [sys.executable, str(ROOT / "benchmarks" / "scaling.py"), "--chips", "2", "--layouts", "ddp",
           "--hidden", "256", "--heads", "4", "--vocab", "1024", "--seq", "128", "--batch", "4", "--steps", "1",
           "--warmup", "1", "--timeout", "120", "--save", str(out)]
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    saved = json.loads(out.read_text())
    (row,) = saved["rows"]
    pred = scaling_steps.eager_prediction(2, "ddp", saved["args"])
    ratio = row["step"] / pred.step_seconds
    assert abs(ratio - 1) < BOUND, (row, pred)
    # the same collectives by the same formulas; the simulator also has DDP's two tiny per-step broadcasts
    assert row["ici"] == pytest.approx(pred.comm_seconds, rel=0.05)


def test_titan_step_model_issues_the_census_and_prices_dcn_across_hosts():
    from torchtpu.perfmodel.calibration import DEFAULT
    from torchtpu.perfmodel.eager import (
        TITAN_DP_ALL_REDUCES,
        TITAN_FSDP_KERNELS,
        TITAN_LAUNCHES_ONE_CHIP,
        predict_titan_step,
        titan_units,
    )
    from torchtpu.sim.chips import get_chip
    from torchtpu.sim.topology import Topology

    one = predict_titan_step("v5e")
    assert one.launches == TITAN_LAUNCHES_ONE_CHIP and one.comm_seconds == 0.0
    # launch-bound at the debug size: the step is the launches at 5 us each, to the last kernel's tail
    assert one.host_seconds == pytest.approx(TITAN_LAUNCHES_ONE_CHIP * get_chip("v5e").launch_overhead_s)
    assert one.host_seconds <= one.step_seconds < one.host_seconds * 1.01
    fsdp = predict_titan_step("v5e", shard=2, topology="1x2")
    units = len(titan_units())
    # + FSDP2's kernels + its collectives: an all-gather per unit forward, again in backward for all but the kept
    # [norm, lm_head], a reduce-scatter per unit, the data-parallel scalar reductions: the 2-chip trace's 1432
    assert fsdp.launches == TITAN_LAUNCHES_ONE_CHIP + TITAN_FSDP_KERNELS + 3 * units - 1 + TITAN_DP_ALL_REDUCES == 1432
    hsdp = predict_titan_step("v5e", replicate=2, shard=2, topology="1x2", hosts=2)
    topo = Topology.of("v5e", (1, 2), 2)
    # HSDP's replicate all-reduce of each unit's fp32 shard crosses the hosts over DCN: ranks 0 and 2
    dcn = sum(topo.collective_seconds("all_reduce", 4 * c / 2, [0, 2], DEFAULT.ici_hop_latency_s,
                                      DEFAULT.dcn_hop_latency_s) for _, c in titan_units())
    assert hsdp.breakdown["ici:hsdp_all_reduce"] == pytest.approx(dcn)
    assert dcn > 1e-3 and hsdp.step_seconds > fsdp.step_seconds
    with pytest.raises(ValueError, match="shard must be >= 1"):
        predict_titan_step("v5e", shard=0)
    with pytest.raises(ValueError, match="do not split into 3 hosts"):
        predict_titan_step("v5e", shard=4, hosts=3)
