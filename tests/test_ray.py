"""Ray on simulated chips, with a real local Ray cluster on 127.0.0.1 (torchtpu/distributed/ray_workers.py).

Actors that own one `TPU` chip each run a learning-rate sweep, bit-identical to the same runs in this process;
Ray Train's TorchTrainer runs DDP on "tpu_dist" over 2 workers, equal to one chip; an actor without a chip
gets our error inside Ray's. Each test starts its own cluster (2 CPUs, 2 chips) and shuts it down.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

import pytest
import torch

# read by ray when it is imported (ray_constants.ENABLE_RAY_CLUSTER): without them Ray listens on every address
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# Ray Train v2 (2.60's default) schedules TPU workers only as a whole TPU slice (ScalingConfig(use_tpu=True,
# topology=, accelerator_type=) and slice node labels); v1 places them by the "TPU" resource alone
os.environ.setdefault("RAY_TRAIN_V2_ENABLED", "0")
ray = pytest.importorskip("ray", reason="Ray is optional: pip install -c constraints.txt -e '.[ray]'")

import dist_train_workers  # noqa: E402 - the model, data and loop of the DDP tests

from torchtpu.distributed import ray_workers  # noqa: E402

TIMEOUT_S = 240  # a worker imports torch + torchtpu (~10-30 s on the shared 2-core machine)
LRS = (0.05, 0.2)
STEPS = 3

# each test starts a Ray cluster and worker processes: about a minute each on two quiet cores


@pytest.fixture
def cluster() -> Any:
    assert os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0", "Ray would listen beyond 127.0.0.1"
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.cloudpickle.register_pickle_by_value(dist_train_workers)
    ray.init(num_cpus=2, resources={"TPU": 2}, include_dashboard=False, _node_ip_address="127.0.0.1",
             runtime_env=ray_workers.runtime_env({"RAY_TRAIN_V2_ENABLED": "0"}), log_to_driver=False)
    yield ray
    ray.shutdown()


def _train(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, lr: float) -> list[float]:
    return dist_train_workers._train(model, x, y, lr, STEPS)


def _sweep_point(lr: float) -> dict[str, Any]:
    """One sweep point on the current process's "tpu" (an actor's, or this test's)."""
    import torchtpu

    torchtpu.set_precision("HIGHEST")
    x, y = dist_train_workers._data()
    gc.collect()  # earlier tests' unreachable tensors freed now, not during the sweep (it would read negative)
    base = torch.tpu.memory_allocated()  # this process may hold earlier tests' tensors
    model = dist_train_workers._model().to("tpu")
    torchtpu.reset_stats()
    losses = _train(model, x.to("tpu"), y.to("tpu"), lr)
    torch.tpu.synchronize()
    return {"losses": losses, "params": [p.detach().cpu() for p in model.parameters()],
            "device_seconds": torchtpu.stats().device_seconds, "hbm": torch.tpu.memory_allocated() - base}


class Trainer:
    """An actor owning one simulated chip."""

    def __init__(self) -> None:
        self.chip = ray_workers.chip()

    def info(self) -> dict[str, Any]:
        return {"device": str(self.chip.device), "ray_chip_id": self.chip.ray_chip_id, "name": self.chip.name,
                "hbm_bytes": self.chip.hbm_bytes, "pid": self.chip.pid, "available": torch.tpu.is_available(),
                "visible": os.environ.get("TPU_VISIBLE_CHIPS")}

    def run(self, lr: float) -> dict[str, Any]:
        return _sweep_point(lr)


def test_actors_each_own_a_chip_and_a_sweep_equals_the_same_runs_here(cluster: Any) -> None:
    actor = ray.remote(resources={"TPU": 1}, num_cpus=0)(Trainer)
    actors = [actor.remote() for _ in LRS]
    infos = ray.get([a.info.remote() for a in actors], timeout=TIMEOUT_S)
    assert sorted(i["ray_chip_id"] for i in infos) == ["0", "1"]
    assert len({i["pid"] for i in infos}) == 2 and os.getpid() not in {i["pid"] for i in infos}
    for i in infos:
        assert i["available"] and i["device"] == "tpu:0" and i["visible"] == i["ray_chip_id"]
        assert i["name"] == torch.tpu.get_device_name(0) and i["hbm_bytes"] == torch.tpu.get_device_properties(
            0).total_memory
    remote = ray.get([a.run.remote(lr) for a, lr in zip(actors, LRS)], timeout=TIMEOUT_S)
    for lr, got in zip(LRS, remote):
        here = _sweep_point(lr)
        assert got["losses"] == here["losses"], lr
        for p, q in zip(got["params"], here["params"]):
            assert torch.equal(p, q), lr
        assert got["device_seconds"] == here["device_seconds"] > 0  # its own simulated clock, the same charges
        assert got["hbm"] == here["hbm"] > 0
    assert remote[0]["losses"] != remote[1]["losses"]  # the two learning rates differ


def test_an_actor_without_a_chip_gets_our_error_inside_rays(cluster: Any) -> None:
    actor = ray.remote(num_cpus=0)(Trainer)  # no "TPU" resource
    a = actor.remote()
    with pytest.raises(ray.exceptions.RayActorError) as info:
        ray.get(a.info.remote(), timeout=TIMEOUT_S)
    msg = str(info.value)
    assert "holds no 'TPU' resource" in msg and "resources={'TPU': 1}" in msg
    two = ray.remote(resources={"TPU": 2}, num_cpus=0)(Trainer).remote()  # 2 chips, a 1-chip process
    with pytest.raises(ray.exceptions.RayActorError) as info:
        ray.get(two.info.remote(), timeout=TIMEOUT_S)
    msg = str(info.value)
    assert "holds 2 'TPU' chips (ids 0, 1)" in msg and "simulates 1 chip" in msg and "TORCHTPU_NUM_DEVICES=2" in msg


def _train_loop(config: dict[str, Any]) -> None:
    import ray.train
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    import torchtpu

    torchtpu.set_precision("HIGHEST")
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    x, y = dist_train_workers._data()
    model = DistributedDataParallel(dist_train_workers._model().to("tpu"))
    n = x.shape[0] // world
    shard = slice(rank * n, (rank + 1) * n)
    losses = _train(model, x[shard].to("tpu"), y[shard].to("tpu"), config["lr"])
    pg = dist.distributed_c10d._get_default_group()
    ray.train.report({"rank": rank, "losses": losses, "backend": str(dist.get_backend()),
                      "pg": type(pg).__name__,
                      "all_reduce": torchtpu.distributed.stats().get("all_reduce", {}).get("count", 0),
                      "params": [p.detach().cpu().tolist() for p in model.module.parameters()]})


def test_ray_train_torch_trainer_ddp_on_tpu_dist_equals_one_chip(cluster: Any, tmp_path: Any) -> None:
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    trainer = TorchTrainer(
        _train_loop, train_loop_config={"lr": 0.1},
        # the explicit pair keeps Ray off its own TPU path, which imports another vendor's package by name
        torch_config=TorchConfig(backend="tpu:tpu_dist,cpu:gloo", timeout_s=60),
        # no "TPU" in resources_per_worker: Ray then asks that same package for the devices; each worker process
        # simulates its own chip, tpu:0
        scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"CPU": 0.5}),
        run_config=RunConfig(storage_path=str(tmp_path), name="ddp"))
    result = trainer.fit()
    m = result.metrics
    assert m["rank"] == 0 and "tpu_dist" in m["backend"] and m["pg"] == "TpuProcessGroup"
    assert m["all_reduce"] >= STEPS  # one gradient bucket per step
    import torchtpu

    torchtpu.set_precision("HIGHEST")
    x, y = dist_train_workers._data()
    single = dist_train_workers._model().to("tpu")
    _train(single, x.to("tpu"), y.to("tpu"), 0.1)
    for p, q in zip(m["params"], single.parameters()):
        torch.testing.assert_close(torch.tensor(p), q.detach().cpu(), rtol=1e-5, atol=1e-6)
