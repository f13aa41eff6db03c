"""The active driver and the mapping from tpu tensors to driver buffers.

`TORCHTPU_DRIVER=sim|pjrt|auto` picks the driver once, on first use (auto: pjrt when a TPU PJRT platform is
present, else sim). For the simulator a tensor's buffer is a numpy view of its host memory (zero-copy, strides
kept), so views and in-place writes on slices reach the base tensor's storage.
"""

from __future__ import annotations

import os
import threading

import ml_dtypes
import numpy as np
import torch

from torchtpu._native import native
from torchtpu.drivers.base import Driver

DRIVERS = ("sim", "pjrt", "auto")
_driver: Driver | None = None
_lock = threading.Lock()


def _tpu_present() -> bool:
    return os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0")


def driver_name_from_env() -> str:
    name = os.environ.get("TORCHTPU_DRIVER", "auto").strip().lower()
    if name not in DRIVERS:
        raise ValueError(f"TORCHTPU_DRIVER={name!r} is not a known driver; valid values: {', '.join(DRIVERS)}")
    if name == "auto":
        return "pjrt" if _tpu_present() else "sim"
    return name


def make_driver(name: str) -> Driver:
    if name == "sim":
        from torchtpu.drivers.sim.driver import SimDriver

        return SimDriver()
    raise RuntimeError(
        "TORCHTPU_DRIVER=pjrt is not available yet in this build of torchtpu: the PJRT driver (libtpu, or "
        "JAX's CPU client for testing) lands with its own issue. Use TORCHTPU_DRIVER=sim (the default).")


def driver() -> Driver:
    global _driver
    if _driver is None:
        with _lock:
            if _driver is None:
                _driver = make_driver(driver_name_from_env())
    return _driver


_BF16 = np.dtype(ml_dtypes.bfloat16)


def buffer(t: torch.Tensor) -> np.ndarray:
    """The simulator's buffer for a tpu tensor: a numpy view of its memory with its sizes and strides."""
    alias = native().cpu_alias(t)
    if t.dtype == torch.bfloat16:
        return alias.view(torch.int16).numpy().view(_BF16)
    return alias.numpy()


def scalar_buffer(value: object, dtype: str) -> np.ndarray:
    """A host scalar as a 0-d buffer of IR dtype `dtype` (hoisted constants of deferred regions)."""
    from torchtpu.drivers.sim.kernels import NP_DTYPES, store

    if dtype in ("bfloat16", "float16"):
        return store(np.asarray(value, np.float32), dtype)
    return np.asarray(value, NP_DTYPES[dtype])
