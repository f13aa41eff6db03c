"""DEFER_AND_FUSE's one-op streak: where a program synchronizes after every op (a loop of `op; .item()`), each
region holds one op, and recording it, keeping it as the one-op region (deferred.py `_single`) and running it at
the flush costs about three times DEFER_NEVER's launch of the same op. After `STREAK` regions in a row that held
one op each, the next cached op launches at once from the C++ launch path, as in DEFER_NEVER, by its launching
twin (fast_launch.store_record): the C++ side is granted a budget of one such launch, which each flush with
nothing pending (the synchronization after it) grants again. Anything recorded into a region first takes the
budget back; if the launch had been taken, two ops came without a synchronization between them, and the streak
ends (the next ops fuse again). So a launched op is one that DEFER_AND_FUSE would have run as a region of its own
unless a second op had come before the next synchronization: only the first op of such a region runs apart.

A twin launch computes exactly what the one-op region computes and charges the simulated device the same
(one_op_direct.py runs that region as DEFER_NEVER launches the op); its error raises at the op's call, as in
DEFER_NEVER. The budget is off while a profiler records or a storage is poisoned, and on any mode or precision
change (fast_launch.sync). `TORCHTPU_ONE_OP_STREAK=0` turns it off (valid values: 0, 1)."""

from __future__ import annotations

from typing import Any

from torchtpu import config, runtime
from torchtpu.execution import modes, poison
from torchtpu.profiler import events

STREAK = 2  # regions of one op in a row before the next op may launch at once
_ENV = "TORCHTPU_ONE_OP_STREAK"

_streak = 0
_granted = False  # the C++ side may hold a budget (take it back before recording)
_budget: Any = None  # the native fast_launch_budget, bound on first use
grants = 0  # budgets granted after a streak of one-op regions (tests read it)


def _set_budget(n: int) -> int:
    global _budget
    if _budget is None:
        from torchtpu._native import native

        _budget = native().fast_launch_budget
    return _budget(n)


def reset() -> None:
    """Forgets the streak and takes back any budget (fast_launch.sync: the C++ side dropped it already)."""
    global _streak, _granted
    if _granted:
        _set_budget(0)
    _streak = 0
    _granted = False


def take_back() -> None:
    """Before anything is recorded into the region: no launch may overtake it; a budget spent means an op
    launched and this one came before a synchronization, which ends the streak."""
    global _streak, _granted
    _granted = False
    if _set_budget(0) == 0:
        _streak = 0


def region_ran(n_ops: int) -> None:
    """A region of `n_ops` ops ran: more than one ends the streak; one grows it, and from `STREAK` on the next op
    may launch at once (in DEFER_AND_FUSE, on a driver whose operands are strided views: the twins' driver, with no
    profiler recording and no storage poisoned)."""
    global _streak, _granted, grants
    if n_ops != 1:
        _streak = 0
        return
    _streak += 1
    drv = runtime._driver
    if _streak >= STREAK and not events.ACTIVE and drv is not None and drv.strided_operands and not poison.active \
            and modes.get_eager_mode() is modes.EagerMode.DEFER_AND_FUSE and config.get(_ENV):
        _granted = True
        grants += 1
        _set_budget(1)


def synchronized() -> None:
    """A flush with nothing pending while a budget was granted: the op it launched (if any) was followed by a
    synchronization, so the next op may launch at once too."""
    _set_budget(1)
