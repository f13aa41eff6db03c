"""FSDP2 x tensor parallel on a 2-D mesh (4 ranks of a 2x2 slice), and torch.compile of FSDP2 models.

`init_device_mesh("tpu", (2, 2), mesh_dim_names=("dp", "tp"))`, `parallelize_module` (Colwise/Rowwise) on "tp",
then `fully_shard` on "dp": 10 steps equal one chip at HIGHEST, eager and under `torch.compile(backend="tpu")`.
FSDP2 alone on a 1-D mesh (2 ranks) under torch.compile equals its eager run and one chip. The rank programs
are tests/fsdp_tp_workers.py, run through tests/dist_workers.py under a timeout (test_fsdp._run). The compiled
runs record Dynamo's graph and graph-break counters and the ATen graphs the tpu backend compiled.
Also the backend fix the compiled FSDP2 x TP run needed: a graph that returns one of its non-tensor arguments.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from test_fsdp import _run

import torchtpu  # noqa: F401  (registers the device and the backend)
from torchtpu.compile.backend import CompiledGraph

RTOL, ATOL = 1e-5, 2e-6  # fp32 at HIGHEST after 10 momentum-SGD steps (lr 0.5): measured max 2.4e-7


def _close(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert got.keys() == want.keys()
    for name, value in got.items():
        torch.testing.assert_close(value, want[name], rtol=RTOL, atol=ATOL, msg=name)


@pytest.fixture(scope="module")
def fsdp_tp(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return _run("fsdp_tp_workers:fsdp_tp", tmp_path_factory.mktemp("fsdp_tp"), world=4, topology="2x2")


def test_fsdp2_over_tp_on_a_2d_mesh_ten_steps_equal_one_chip(fsdp_tp: list[dict[str, Any]]) -> None:
    assert [(res["dp"], res["tp"]) for res in fsdp_tp] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for res in fsdp_tp:
        placements = res["placements"]
        # TP's Colwise weights are further sharded by FSDP on dp: two mesh dims; the norms are FSDP's alone
        assert "Shard(dim=0)" in placements["layers.0.attention.wq.weight"] and \
            placements["layers.0.attention.wq.weight"].count(",") >= 1
        assert placements["layers.0.attention.wo.weight"] == "(Shard(dim=0), Shard(dim=1))"
        assert placements["layers.0.ffn_norm.weight"] == "(Shard(dim=0),)"
        _close(res["full"], res["single"])
        assert any(not torch.equal(res["single"][k], v) for k, v in res["untrained"].items())
        stats = res["dist stats"]
        assert stats["all_gather"]["count"] > 0 and stats["reduce_scatter"]["count"] > 0  # FSDP on dp
        assert stats["all_reduce"]["count"] > 0  # Rowwise partial sums on tp
    # the two tp ranks of one dp rank see the same data; the dp ranks' mean loss is one chip's loss
    assert fsdp_tp[0]["losses"] == fsdp_tp[1]["losses"] and fsdp_tp[2]["losses"] == fsdp_tp[3]["losses"]
    mean = [(a + b) / 2 for a, b in zip(fsdp_tp[0]["losses"], fsdp_tp[2]["losses"])]
    assert mean == pytest.approx(fsdp_tp[0]["single losses"], rel=1e-5)


def test_compiled_fsdp2_over_tp_trains_like_eager(fsdp_tp: list[dict[str, Any]]) -> None:
    for res in fsdp_tp:
        compiled = res["compiled"]
        assert "error" not in compiled, compiled.get("traceback")
        _close(res["compiled full"], res["single"])
        assert res["compiled losses"] == pytest.approx(res["losses"], rel=1e-5)
        assert compiled["graph breaks"] == {}
        assert compiled["unique graphs"] >= 1 and compiled["aten graphs"]
        assert [g for g in compiled["aten graphs"] if g["eager"]] == []  # graphs with collectives split, compiled


@pytest.fixture(scope="module")
def fsdp_compiled(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    # 2 ranks (one chip each): the 4-rank run (TORCHTPU_TOPOLOGY=2x2, same figures) takes 4 minutes here
    return _run("fsdp_tp_workers:fsdp_compiled", tmp_path_factory.mktemp("fsdp_compiled"), world=2)


def test_compiled_fsdp2_equals_eager_and_one_chip(fsdp_compiled: list[dict[str, Any]]) -> None:
    for res in fsdp_compiled:
        compiled = res["compiled"]
        assert "error" not in compiled, compiled.get("traceback")
        torch.testing.assert_close(res["eager"], res["single"], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(res["compiled full"], res["eager"], rtol=1e-5, atol=1e-6)
        assert res["compiled losses"] == pytest.approx(res["eager losses"], rel=1e-6)
        assert compiled["graph breaks"] == {}
        assert compiled["unique graphs"] >= 1 and compiled["aten graphs"]
    assert fsdp_compiled[0]["eager losses"] != fsdp_compiled[1]["eager losses"]  # each rank its own half


def _graph(outputs: Any) -> torch.fx.GraphModule:
    g = torch.fx.Graph()
    x, m = g.placeholder("x"), g.placeholder("m")
    y = g.call_function(torch.ops.aten.mul.Tensor, (x, 2.0))
    g.output(outputs(y, m))
    return torch.fx.GraphModule(torch.nn.Module(), g)


def test_a_compiled_graph_returns_its_non_tensor_argument_as_is() -> None:
    """AOTAutograd's graph of a TP input hook returns the DeviceMesh it was given: the backend raised
    `TypeError: int() argument must be ... not 'DeviceMesh'` (it took every non-tensor output for a SymInt)."""
    marker = object()  # stands for the DeviceMesh
    x = torch.arange(4.0, device="tpu")
    graph = CompiledGraph(_graph(lambda y, m: (y, m)), [x, marker])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # compiled, not the eager fallback
        y, m = graph(x, marker)
    assert m is marker and graph.eager_reason is None
    assert torch.equal(y.cpu(), torch.tensor([0.0, 2.0, 4.0, 6.0]))


def test_a_graph_output_of_another_type_falls_back_to_eager_instead_of_int() -> None:
    """A float output used to become int(value) (0.5 -> 0, silently); now the graph runs eagerly, exactly."""
    x = torch.arange(4.0, device="tpu")
    graph = CompiledGraph(_graph(lambda y, m: (y, 0.5)), [x, 3])
    with pytest.warns(RuntimeWarning, match="graph output of type float"):
        y, half = graph(x, 3)
    assert half == 0.5 and isinstance(half, float)
    assert "graph output of type float" in graph.eager_reason
    assert torch.equal(y.cpu(), torch.tensor([0.0, 2.0, 4.0, 6.0]))
