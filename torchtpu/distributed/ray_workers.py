"""Ray workers on simulated chips: the `TPU` resource of a Ray node as this host's simulated chips.

A Ray node started with `resources={"TPU": n}` offers n chips; Ray gives an actor or task that asks for
`resources={"TPU": 1}` one chip id and sets `TPU_VISIBLE_CHIPS` for it (Ray's TPUAcceleratorManager), so the
worker's process sees its own chips only, as `tpu:0..k-1` (each a `SimChip` of that process: its own HBM, RNG
and simulated clock). `chip()` (called inside the actor) checks that and returns the device.

Ray Train: `TorchConfig(backend="tpu:tpu_dist,cpu:gloo")` makes its workers' process group tpu_dist (with gloo
for CPU objects). Ray 2.60's own TPU path (backend "tpu_dist", or its default for workers holding `TPU`) imports
another vendor's package by name (`ray/air/_internal/device_manager/tpu.py`); torchtpu does not pose as it.
`setup_worker`, run in every Ray worker through `runtime_env()`'s `worker_process_setup_hook`, imports torch
(torchtpu's autoload registers "tpu" and "tpu_dist") so a broken install fails at worker start, not mid-task.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

__all__ = ["ChipInfo", "chip", "chips", "runtime_env", "setup_worker", "RESOURCE"]

RESOURCE = "TPU"  # Ray's accelerator resource name for TPU chips (ray_constants.TPU)


@dataclass(frozen=True)
class ChipInfo:
    """The chip a Ray worker owns: its torch device, Ray's chip id, name, HBM bytes and process id."""

    device: Any
    ray_chip_id: str
    name: str
    hbm_bytes: int
    pid: int


def _ray_chip_ids() -> list[str]:
    import ray

    if not ray.is_initialized():
        raise RuntimeError("torchtpu.distributed.ray_workers.chip() runs inside a Ray actor or task "
                           "(ray is not initialized in this process)")
    return [str(i) for i in ray.get_runtime_context().get_accelerator_ids().get(RESOURCE, [])]


def chips() -> list[ChipInfo]:
    """The simulated chips Ray gave this actor or task (`resources={"TPU": k}`), as `tpu:0..k-1`.

    Raises ValueError when the worker holds no "TPU" resource, or holds more chips than its process simulates
    (TORCHTPU_NUM_DEVICES / TORCHTPU_TOPOLOGY of the worker's environment), naming both and what is valid."""
    import torch

    from torchtpu import config

    ids = _ray_chip_ids()
    if not ids:
        raise ValueError(f"this Ray worker holds no {RESOURCE!r} resource, so it owns no simulated chip; ask for "
                         f"one with @ray.remote(resources={{{RESOURCE!r}: 1}}) (valid: 1, 2, 4 or 8 chips, at most "
                         f"the node's resources={{{RESOURCE!r}: n}})")
    count = torch.tpu.device_count()
    if len(ids) > count:
        raise ValueError(
            f"this Ray worker holds {len(ids)} {RESOURCE!r} chips (ids {', '.join(ids)}), but its process "
            f"simulates {count} chip{'s' if count != 1 else ''} (TORCHTPU_NUM_DEVICES="
            f"{config.get('TORCHTPU_NUM_DEVICES')}); valid: at most {count} chips per worker, or set "
            f"TORCHTPU_NUM_DEVICES={len(ids)} in the worker's runtime_env env_vars")
    out = []
    for i, cid in enumerate(ids):
        dev = torch.device("tpu", i)
        props = torch.tpu.get_device_properties(i)
        out.append(ChipInfo(dev, cid, torch.tpu.get_device_name(i), int(props.total_memory), os.getpid()))
    return out


def chip() -> ChipInfo:
    """The one simulated chip of this Ray actor or task (`resources={"TPU": 1}`); it becomes the current device."""
    import torch

    held = chips()
    if len(held) != 1:
        raise ValueError(f"this Ray worker holds {len(held)} {RESOURCE!r} chips; chip() is for one "
                         f"(resources={{{RESOURCE!r}: 1}}): use chips() for several")
    torch.tpu.set_device(held[0].device)
    return held[0]


def setup_worker() -> None:
    """Ray's worker_process_setup_hook: load torch with torchtpu in every worker before it runs a task."""
    import torch  # noqa: F401 - torchtpu's autoload registers "tpu" and "tpu_dist"


def runtime_env(env_vars: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    """A Ray `runtime_env` whose workers run `setup_worker` first (pass it to `ray.init(runtime_env=...)`)."""
    env: dict[str, Any] = {"worker_process_setup_hook": "torchtpu.distributed.ray_workers.setup_worker", **extra}
    if env_vars:
        env["env_vars"] = dict(env_vars)
    return env
