"""DTensor on a "tpu" DeviceMesh over tpu_dist (2 ranks): placements, redistribute, full_tensor and the sharding
propagation of matmul, elementwise, sum, softmax and embedding, each equal to the unsharded op on CPU (integers bit
for bit, fp32 at HIGHEST within fp32 tolerance); tensors that differ across ranks raise on every rank.

The rank programs are tests/dtensor_workers.py, run by tests/dist_workers.py under a timeout (no hang).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from test_distributed import _run


@pytest.fixture(scope="module")
def dtensor(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    codes, results = _run("dtensor_workers:dtensor", tmp_path_factory.mktemp("dtensor"), 2)
    assert codes == [0, 0]
    return results


def _compared(res: dict[str, Any]) -> dict[str, tuple[torch.Tensor, torch.Tensor, list[str]]]:
    return {k: v for k, v in res.items() if isinstance(v, tuple) and len(v) == 3 and isinstance(v[0], torch.Tensor)}


def test_placements_redistribute_and_ops_equal_the_unsharded_result(dtensor: list[dict[str, Any]]) -> None:
    for rank, res in enumerate(dtensor):
        assert res["mesh"] == ("tpu", (2,))
        assert res["local shape S(0)"] == (4, 12) and res["local shape S(1)"] == (8, 6)
        compared = _compared(res)
        assert len(compared) >= 25
        for name, (got, expected, _) in compared.items():
            assert got.dtype == expected.dtype and got.shape == expected.shape, f"rank {rank} {name}"
            moved = name.startswith(("distribute", "redistribute", "embedding", "after"))
            if got.is_floating_point() and not moved:  # fp32 arithmetic at HIGHEST: fp32 tolerance
                torch.testing.assert_close(got, expected, rtol=1.3e-6, atol=1e-5)
            else:  # data movement and integer arithmetic: bit for bit
                assert torch.equal(got, expected), f"rank {rank} {name}:\n{got}\n!=\n{expected}"


def test_sharding_propagation_picks_the_expected_placements(dtensor: list[dict[str, Any]]) -> None:
    res = dtensor[0]
    assert res["matmul Shard(0) @ Replicate"][2] == ["S(0)"]
    assert res["matmul Shard(1) @ Shard(0) (Partial)"][2] == ["P(sum)"]
    assert res["int64 Partial full_tensor"][2] == ["P(sum)"]
    assert res["softmax dim 1 of Shard(1)"][2] == ["R"]  # softmax over the sharded dim gathers first
    assert res["embedding colwise Shard(1)"][2] == ["S(2)"]
    assert res["embedding rowwise Shard(0)"][2][0].startswith("MaskP(sum")


def test_tensors_that_differ_across_ranks_raise_on_every_rank(dtensor: list[dict[str, Any]]) -> None:
    for res in dtensor:
        kind, msg, seconds = res["distribute shapes differ"]
        assert kind == "ValueError" and "float32[4, 3]" in msg and "float32[5, 3]" in msg and seconds < 5
        kind, msg, seconds = res["distribute dtypes differ"]
        assert kind == "ValueError" and "int32[2, 3]" in msg and "float32[2, 3]" in msg and seconds < 5
        kind, msg, seconds = res["from_local run_check shapes differ"]
        assert kind == "ValueError" and "Inconsistent tensor metadata" in msg and seconds < 5
        got, expected, _ = res["after errors"]
        assert torch.equal(got, expected)  # the mesh still works afterwards
