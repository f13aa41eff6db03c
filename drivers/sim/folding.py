"""Constant folding of the sim's plans (driver.py `build_steps`): an op whose inputs are all constants runs once,
at compile time, through its kernel; its results are kept read-only, or it is left to run time when it raises
(it raises again, with the op named, when the executable runs) or a result's memory is over the given limit."""

from __future__ import annotations

import numpy as np
from torchtpu.drivers.ir import Op
from torchtpu.drivers.sim.kernels import Kernel


def root_of(v: np.ndarray) -> np.ndarray:
    while isinstance(v.base, np.ndarray):
        v = v.base
    return v


def fold(kern: Kernel, op: Op, args: list[np.ndarray], limit: int) -> list[np.ndarray] | None:
    """The op's results made read-only, or None to leave it to run time (it raised, or a result's memory is over
    `limit` bytes)."""
    try:
        with np.errstate(all="ignore"):
            values = [np.asarray(v) for v in kern(op, args)]
    except Exception:  # noqa: BLE001 - it raises again, with the op named, when the executable runs
        return None
    for v in values:
        if root_of(v).nbytes > limit:
            return None
    for v in values:
        v.flags.writeable = False
    return values
