"""torchtpu.distributed: the c10d backend "tpu_dist" (one process per simulated chip) and its statistics.

`import torch` registers the backend (torchtpu's autoload), so `dist.init_process_group()` picks "tpu_dist" for
"tpu" tensors (`Backend.default_device_backend_map["tpu"]`) and the same group sends cpu tensors through gloo.
docs/distributed.md says what works, how to run it and what each collective charges.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["BACKEND_NAME", "register_backend", "reset_stats", "stats", "waits"]

BACKEND_NAME = "tpu_dist"


def stats() -> dict[str, dict[str, float]]:
    """Per collective kind on this rank: count, ici_seconds, wait_seconds, bytes, host_wall_seconds (clock.py)."""
    from torchtpu.distributed.clock import stats as _stats

    return _stats()


def waits() -> dict[str, Any]:
    """Simulated seconds this rank's collectives waited for a later rank, in all and per straggler (clock.py)."""
    from torchtpu.distributed.clock import waits as _waits

    return _waits()


def reset_stats() -> None:
    from torchtpu.distributed.clock import reset_stats as _reset

    _reset()


def __getattr__(name: str) -> Any:
    if name == "TpuProcessGroup":
        from torchtpu.distributed.process_group import TpuProcessGroup

        return TpuProcessGroup
    raise AttributeError(f"module 'torchtpu.distributed' has no attribute {name!r}")


def register_backend() -> bool:
    """Register "tpu_dist" for device "tpu" with c10d (idempotent); False when torch.distributed is missing."""
    import torch.distributed as dist

    if not dist.is_available():
        return False
    if BACKEND_NAME.upper() in dist.Backend._plugins:
        return True
    from torchtpu.distributed.process_group import create

    dist.Backend.register_backend(BACKEND_NAME, create, devices=["tpu"])
    return True


def _register_on_load() -> None:
    """Called when torchtpu loads: a failure warns (the device still works) instead of breaking `import torch`."""
    try:
        register_backend()
    except Exception as exc:  # noqa: BLE001 - reported; the device itself is usable without distributed
        warnings.warn(f"torchtpu could not register the c10d backend {BACKEND_NAME!r} ({type(exc).__name__}: "
                      f"{exc}); torch.distributed will not pick it for 'tpu' tensors", RuntimeWarning, stacklevel=2)
