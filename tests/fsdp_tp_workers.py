"""Rank programs for tests/test_fsdp_tp.py ("fsdp_tp_workers:NAME" for tests/dist_workers.py): FSDP2 combined
with tensor parallel on a 2-D "tpu" mesh (4 ranks of a 2x2 slice), and torch.compile of FSDP2 models.

- `fsdp_tp`: `init_device_mesh("tpu", (2, 2), mesh_dim_names=("dp", "tp"))`; tests/tp_workers.py's transformer
  parallelized with `parallelize_module` (Colwise/Rowwise) on "tp", then `fully_shard` per block and at the root
  on "dp"; each dp rank trains on its half of the batch (the tp ranks of one dp rank on the same half) for STEPS
  momentum-SGD steps at HIGHEST, against the same model on one chip on the whole batch. Then the same again
  under `torch.compile(backend="tpu")`, with Dynamo's graph and graph-break counters.
- `fsdp_compiled`: tests/fsdp_workers.py's transformer under `fully_shard` on a 1-D mesh of the ranks, eager
  and `torch.compile(backend="tpu")`, against one chip; the graph and graph-break counters of the compiled run.
"""

from __future__ import annotations

import copy
import time
from typing import Any

TIMEOUT_S = 60


def _counted(fn: Any) -> tuple[Any, dict[str, Any]]:
    """fn() with Dynamo's counters cleared first; its value (or the error) and what compiling left: Dynamo's
    graph / graph-break / frame counters, and per ATen graph the tpu backend got (forward and backward, from
    AOTAutograd) its node count, its collectives and whether it fell back to eager (its reason)."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    import torchtpu.compile.backend as tpu_backend

    torch._dynamo.reset()
    counters.clear()
    graphs: list[Any] = []
    compiler, tpu_backend._backend = tpu_backend._compiler, None  # rebuilt around the spy at the first compile

    def spy(gm: Any, example_inputs: Any) -> Any:
        graphs.append(compiler(gm, example_inputs))
        return graphs[-1]

    tpu_backend._compiler = spy
    found: dict[str, Any] = {}
    try:
        value = fn()
    except Exception as exc:  # noqa: BLE001 - reported by the test
        import traceback

        value = None
        found["error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
        found["traceback"] = traceback.format_exc()[-6000:]
    finally:
        tpu_backend._compiler, tpu_backend._backend = compiler, None
    found["unique graphs"] = counters["stats"].get("unique_graphs", 0)
    found["graph breaks"] = {str(k): v for k, v in counters["graph_break"].items()}
    found["frames"] = dict(counters["frames"])
    found["aten graphs"] = [{"nodes": len(g.gm.graph.nodes), "eager": g.eager_reason, "collectives": [
        str(n.target) for n in g.gm.graph.nodes if n.op == "call_function" and "c10d" in str(n.target)],
        "modules": sorted({path for n in g.gm.graph.nodes for path, _ in n.meta.get("nn_module_stack", {}).values()
                           if path.count(".") <= 1})} for g in graphs]
    return value, found


def _full(model: Any) -> dict[str, Any]:
    from torch.distributed.tensor import DTensor

    return {k: (v.full_tensor() if isinstance(v, DTensor) else v).detach().cpu() for k, v in model.state_dict().items()}


def _fsdp_tp_model(mesh: Any) -> Any:
    import tp_workers
    from torch.distributed.fsdp import fully_shard

    model = tp_workers._plan(tp_workers._model().to("tpu"), mesh["tp"], False)
    for layer in model.layers:
        fully_shard(layer, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    return model


def fsdp_tp(rank: int, world: int) -> dict[str, Any]:
    import fsdp_workers
    import torch.distributed as dist
    import tp_workers
    from torch.distributed.device_mesh import init_device_mesh

    import torchtpu

    torchtpu.set_precision("HIGHEST")
    fsdp_workers._use_own_chip(rank)
    mesh = init_device_mesh("tpu", (2, 2), mesh_dim_names=("dp", "tp"))
    inputs, targets = tp_workers._data()  # STEPS x BATCH(2) x SEQ: dp rank d trains on sequence d of each step
    dp = mesh["dp"].get_local_rank()
    mine = slice(dp * inputs.shape[1] // 2, (dp + 1) * inputs.shape[1] // 2)
    single = tp_workers._model().to("tpu")
    out: dict[str, Any] = {"untrained": _full(single), "dp": dp, "tp": mesh["tp"].get_local_rank()}
    t0 = time.perf_counter()
    out["single losses"] = tp_workers._train(single, inputs, targets)
    out["single"] = _full(single)
    t1 = time.perf_counter()
    torchtpu.distributed.reset_stats()
    model = _fsdp_tp_model(mesh)
    out["placements"] = {k: str(v.placements) for k, v in model.state_dict().items()}
    out["losses"] = tp_workers._train(model, inputs[:, mine], targets[:, mine])
    out["full"] = _full(model)
    out["dist stats"] = torchtpu.distributed.stats()
    t2 = time.perf_counter()

    import torch

    compiled_model = _fsdp_tp_model(mesh)
    compiled = torch.compile(compiled_model, backend="tpu")
    out["compiled losses"], out["compiled"] = _counted(
        lambda: tp_workers._train(compiled_model, inputs[:, mine], targets[:, mine], compiled))
    if "error" not in out["compiled"]:
        out["compiled full"] = _full(compiled_model)
    out["seconds"] = (t1 - t0, t2 - t1, time.perf_counter() - t2)
    dist.destroy_process_group()
    return out


def fsdp_compiled(rank: int, world: int) -> dict[str, Any]:
    import fsdp_workers
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    import torchtpu

    torchtpu.set_precision("HIGHEST")
    fsdp_workers._use_own_chip(rank)
    mesh = init_device_mesh("tpu", (world,))
    x, y = fsdp_workers._data(world)
    n = x.shape[0] // world
    part = slice(rank * n, (rank + 1) * n)
    base = fsdp_workers._model().to("tpu")
    single = copy.deepcopy(base)
    twin = copy.deepcopy(base)
    out: dict[str, Any] = {"single losses": fsdp_workers._train(single, x.to("tpu"), y.to("tpu"), 1.0)}
    out["single"] = _full(single)
    from torch.distributed.fsdp import MixedPrecisionPolicy

    eager = fsdp_workers._shard(twin, mesh, True, MixedPrecisionPolicy())
    out["eager losses"] = fsdp_workers._train(eager, x[part].to("tpu"), y[part].to("tpu"), 1.0)
    out["eager"] = _full(eager)
    model = fsdp_workers._shard(base, mesh, True, MixedPrecisionPolicy())
    compiled = torch.compile(model, backend="tpu")
    out["compiled losses"], out["compiled"] = _counted(
        lambda: fsdp_workers._train(compiled, x[part].to("tpu"), y[part].to("tpu"), 1.0))
    if "error" not in out["compiled"]:
        out["compiled full"] = _full(model)
    dist.destroy_process_group()
    return out


SCENARIOS = {"fsdp_tp": (fsdp_tp, None, TIMEOUT_S), "fsdp_compiled": (fsdp_compiled, None, TIMEOUT_S)}
