"""Tensor parallel and distributed checkpoint on tpu_dist (2 ranks), PyTorch's own stack unmodified.

A 2-layer transformer (hidden 32) parallelized with `parallelize_module` (Colwise/Rowwise, and TorchTitan's
sequence-parallel plan) trains 10 SGD steps at HIGHEST equal to the same model on one chip within fp32 tolerance;
`torch.compile(backend="tpu")` of the TP model trains the same; DCP saves the sharded model and optimizer and
loads them into the same plan, into an unsharded model and into another sharding, bit for bit.
The rank programs are tests/tp_workers.py, run by tests/dist_workers.py under a timeout (no hang).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from test_distributed import _run


@pytest.fixture(scope="module")
def tp(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    codes, results = _run("tp_workers:tp", tmp_path_factory.mktemp("tp"), 2)
    assert codes == [0, 0]
    return results


@pytest.mark.parametrize("plan", ["tp", "tp+sp"])
def test_tp_training_ten_steps_equals_one_chip(tp: list[dict[str, Any]], plan: str) -> None:
    for res in tp:
        assert any("Shard(dim=0)" in p for p in res[f"{plan} placements"])
        assert any("Shard(dim=1)" in p for p in res[f"{plan} placements"])
        torch.testing.assert_close(res[f"{plan} losses"], res["single losses"], rtol=1e-5, atol=1e-5)
        for p, q in zip(res[f"{plan} params"], res["single"]):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=2e-6)
        assert any(not torch.equal(q, u) for q, u in zip(res["single"], res["untrained"]))
    assert tp[0][f"{plan} params"][0].equal(tp[1][f"{plan} params"][0])
    stats = tp[0]["dist stats"]
    assert stats["all_reduce"]["count"] > 0 and stats["all_gather"]["count"] > 0  # Rowwise sums, SP gathers


def test_compiled_tp_model_trains_like_eager(tp: list[dict[str, Any]]) -> None:
    for res in tp:
        assert "compiled error" not in res, res.get("compiled error")
        torch.testing.assert_close(res["compiled losses"], res["single losses"], rtol=1e-5, atol=1e-5)
        for p, q in zip(res["compiled params"], res["single"]):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=2e-6)
        assert res["unique graphs"] >= 1
        # DTensor's collectives sit inside the ATen graphs: the pieces between them compile, none runs op by op
        assert res["compile stats"]["eager_graphs"] == 0, res["compile stats"]


def test_dcp_round_trip_and_reshard(tp: list[dict[str, Any]]) -> None:
    for res in tp:
        assert "dcp error" not in res, res.get("dcp error")
        assert len(res["dcp saved keys"]) > 20
        for part in ("dcp same plan", "dcp same plan momenta", "dcp unsharded"):
            assert res[part] and all(ok for _, ok in res[part]), (part, [k for k, ok in res[part] if not ok])
        assert len(res["dcp same plan momenta"]) == len(res["dcp saved keys"])
        resharded = res["dcp resharded"]
        assert any("Shard(dim=1)" in p for _, p, _ in resharded)
        assert all(ok for _, _, ok in resharded), [k for k, _, ok in resharded if not ok]
