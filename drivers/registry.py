"""The driver registry: every driver by name, and "auto", so that a new driver is one `register` call.

A driver registers a name and a factory that imports its module on first use (a driver whose dependencies are
missing costs nothing until it is asked for). `make(name)` builds one; an unknown name raises a ValueError that
lists the valid ones. "auto" is not a driver: it resolves to the first registered driver whose `present()` says
its hardware is there (pjrt on a TPU host), else to the simulator. TORCHTPU_DRIVER's valid values come from here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

AUTO = "auto"


@dataclass(frozen=True)
class Entry:
    name: str
    factory: Callable[..., Any]  # (**options) -> Driver
    present: Callable[[], bool]  # whether "auto" picks it (its hardware is here)
    summary: str


_ENTRIES: dict[str, Entry] = {}


def register(name: str, factory: Callable[..., Any], present: Callable[[], bool] = lambda: False,
             summary: str = "") -> None:
    """Adds driver `name` (lower case, not "auto"); a second registration of a name is an error."""
    if name != name.strip().lower() or not name or name == AUTO:
        raise ValueError(f"driver name {name!r} must be lower case, non-empty and not {AUTO!r}")
    if name in _ENTRIES:
        raise ValueError(f"driver {name!r} is already registered")
    _ENTRIES[name] = Entry(name, factory, present, summary)


def names() -> tuple[str, ...]:
    """The valid driver names: every registered driver, then "auto"."""
    return (*_ENTRIES, AUTO)


def resolve(name: str) -> str:
    """`name` checked against the registry, with "auto" resolved (a present hardware driver, else sim)."""
    key = name.strip().lower()
    if key == AUTO:
        return next((e.name for e in _ENTRIES.values() if e.present()), "sim")
    if key not in _ENTRIES:
        raise ValueError(f"unknown driver {name!r}; valid drivers: {', '.join(names())}")
    return key


def make(name: str, **options: Any) -> Any:
    """A new driver of registered kind `name` ("auto" resolved), built with `options`."""
    return _ENTRIES[resolve(name)].factory(**options)


def _sim(**options: Any) -> Any:
    from torchtpu.drivers.sim.driver import SimDriver

    return SimDriver(**options)


def _pjrt(**options: Any) -> Any:
    from torchtpu.drivers.pjrt.driver import PjrtDriver

    return PjrtDriver(**options)


def _tpu_present() -> bool:
    return os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0")


register("sim", _sim, summary="the TPU simulator: host memory, simulated time (torchtpu.sim)")
register("pjrt", _pjrt, _tpu_present, summary="XLA through a PJRT client (libtpu; JAX's CPU client for tests)")
