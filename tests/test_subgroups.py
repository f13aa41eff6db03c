"""tpu_dist subgroups (`new_group`, `split_group`, `new_subgroups`), object collectives through the cpu:gloo side,
and functional collectives (eager and under torch.compile), on 2 ranks, each against a plain gloo group on cpu.

The rank programs are tests/subgroup_workers.py, run by tests/dist_workers.py under a timeout (no hang).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from test_distributed import _run


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    codes, results = _run("subgroup_workers:groups", tmp_path_factory.mktemp("groups"), 2)
    assert codes == [0, 0]
    return results


def _equal(got: Any, expected: Any, what: str) -> None:
    if isinstance(expected, torch.Tensor):
        assert got.dtype == expected.dtype and got.shape == expected.shape, what
        assert torch.equal(got, expected), f"{what}:\n{got}\n!=\n{expected}"
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected), what
        for g, e in zip(got, expected):
            _equal(g, e, what)
    else:
        assert got == expected, what


def test_subgroup_and_split_collectives_equal_gloo_on_cpu(groups: list[dict[str, Any]]) -> None:
    for rank, res in enumerate(groups):
        assert res["new_group type"] == res["pair type"] == "TpuProcessGroup"
        for name in ("new_group all_reduce int64", "new_group all_reduce float32", "new_subgroups all_reduce int64"):
            _equal(*res[name], f"rank {rank} {name}")
    assert groups[0]["solo charged"] == 1 and groups[1]["solo charged"] == 0  # charged to members only


def test_object_collectives_equal_gloo_on_both_backend_configs(groups: list[dict[str, Any]]) -> None:
    for rank, res in enumerate(groups):
        keys = [k for k in res if k.startswith(("default ", "cpu:gloo,tpu:tpu_dist "))]
        assert len(keys) == 10
        for k in keys:
            got, expected = res[k]
            assert got == expected, f"rank {rank} {k}: {got} != {expected}"
        assert res["default all_gather_object"][0][1]["text"] == "x" * 8


def test_functional_collectives_eager_and_compiled_equal_gloo(groups: list[dict[str, Any]]) -> None:
    for rank, res in enumerate(groups):
        for name in ("functional eager", "_c10d_functional ops", "functional compiled"):
            _equal(*res[name], f"rank {rank} {name}")
        graphs, breaks, reasons = res["compile graph breaks"]
        assert graphs >= 1 and breaks == len(reasons)


def test_subgroup_bad_input_is_a_clear_error_never_a_hang(groups: list[dict[str, Any]]) -> None:
    for res in groups:
        for name in ("cpu tensor on tpu-only subgroup", "functional cpu tensor on tpu-only subgroup"):
            kind, msg, seconds = res[name]
            assert kind == "ValueError" and "cpu tensor" in msg and "'tpu_dist' alone" in msg, (name, msg)
            assert seconds < 10
        assert res["after"].tolist() == [3.0, 3.0]
    kind, msg, seconds = groups[1]["non-member call"]
    assert kind == "no error" and seconds < 5  # c10d's own rule: a warning and a no-op, as with gloo
    assert groups[1]["non-member tensor"].tolist() == [2.0, 2.0, 2.0]
    assert groups[1]["non-member rank"] == -1



def test_split_group_and_a_split_device_mesh_with_device_id(tmp_path: Path) -> None:
    codes, results = _run("subgroup_workers:split", tmp_path, 2)
    assert codes == [0, 0]
    for rank, res in enumerate(results):
        assert res["bound"] == "tpu:0" and res["backend"] == "tpu_dist"  # device_id picks tpu_dist alone
        assert res["split_group singletons type"] == ("TpuProcessGroup", 1, "tpu:0")
        assert res["split_group all type"] == ("TpuProcessGroup", 2, "tpu:0")
        for name in ("split_group singletons", "split_group all", "mesh all_reduce"):
            _equal(*res[name], f"rank {rank} {name}")
        got, expected = res["tpu-only all_gather_object"]  # objects through tpu tensors on a tpu-only group
        assert got == expected
        kind, msg, _ = res["split_group bad ranks"]
        assert kind == "ValueError" and "[0, 2] must be distinct ranks of the parent group (0..1)" in msg
