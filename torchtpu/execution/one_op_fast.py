"""The short way of a repeated cached one-op region on a whole-storage driver (pjrt in DEFER_NEVER): each op is
a region of its own, and `deferred._launch_one` runs it through `one_op_cache` (`one_key`: the replay key and
slots from the call's storage layout; `run_one`: a StorageRef per slot, then the driver's general `execute`).

Once a (C++ launch token, storage layout) has run that way, `learn` keeps, for that pair, the replay key, its
Built and the driver's prepared launch of it (`driver.one_op_runner`, drivers/pjrt/one_op.py: what `execute`
checks for the region worked out once); `run` then launches the next call with that pair from its storage
addresses alone. It runs exactly what the long way would (the Built `_one_ops` holds for the key, checked to be
the same object each call, on the same driver) and declines (None, nothing written) whatever the prepared launch
cannot take, for the long way to run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchtpu import runtime
from torchtpu.execution.one_op_cache import _one_ops
from torchtpu.execution.region_ir import Built

# (token id, storage layout) -> (replay key, Built, driver, prepared launch)
_plans: dict[tuple, tuple] = {}
_MAX = 1 << 14
_drain: Any = None  # the native drain of freed storages (bound on first use)
launches = 0  # ops this module launched (tests read it)
enabled = True  # False: `learn` prepares nothing (benchmarks compare the long way in the same process)


def clear() -> None:
    """Forgets every prepared launch."""
    _plans.clear()


def learn(token: tuple, layout: bytes, found: tuple, device: int) -> None:
    """Prepares the launch of the one-op region `one_key` answered `found` for (token, layout), after it ran."""
    key, _, slot_types, written = found
    built = _one_ops.get(key)
    drv = runtime._driver
    make = getattr(drv, "one_op_runner", None)
    if not enabled or built is None or make is None or built.exe is None or not built.output_set.issuperset(written):
        return
    go = make(built.exe, built.input_slots, built.output_slots, slot_types, device)
    if go is not None:
        if len(_plans) >= _MAX:
            _plans.clear()
        _plans[(token[5], layout)] = (key, built, drv, go, device)


def run(token: tuple, scalars: Sequence[Any], layout: bytes, addresses: tuple, device: int) -> Built | None:
    """Launches the op of `token` on storages `addresses` (its scalar buffers: `scalars`) by the prepared launch
    of its (token, layout); its Built when it ran, None when the long way must run it."""
    plan = _plans.get((token[5], layout))
    if plan is None:
        return None
    key, built, drv, go, on = plan
    if drv is not runtime._driver or on != device or _one_ops.get(key) is not built:
        return None
    global _drain, launches
    if _drain is None:
        _drain = runtime.native().drain_freed
    for freed in _drain():  # a freed storage's address may already belong to one of these: drop it first
        drv.free_storage(freed)
    if not go(addresses, scalars):
        return None
    _one_ops.move_to_end(key)
    launches += 1
    return built
