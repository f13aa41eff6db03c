"""Eager modes: how an op reaches the driver.

DEFER_NEVER launches each op asynchronously in simulated time (host issue and device execution overlap);
LAUNCH_BLOCKING synchronises after each launch; DEFER_AND_FUSE appends ops to a pending region that is fused,
cached and launched once at a flush (see deferred.py). Leaving an `eager_mode` block restores the previous
mode even when the flush at its end fails.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager

from torchtpu import config


class EagerMode(enum.Enum):
    DEFER_NEVER = "DEFER_NEVER"
    LAUNCH_BLOCKING = "LAUNCH_BLOCKING"
    DEFER_AND_FUSE = "DEFER_AND_FUSE"


def _parse(value: EagerMode | str) -> EagerMode:
    if isinstance(value, EagerMode):
        return value
    try:
        return EagerMode[str(value).strip().upper()]
    except KeyError:
        raise ValueError(f"unknown eager mode {value!r}; valid: {', '.join(m.name for m in EagerMode)}") from None


_mode = _parse(config.get("TORCHTPU_EAGER_MODE"))
# Process-wide, not thread-local: autograd runs backward ops on its own device threads, and they must
# see the setting of the code that called backward().
_stack: list = []
on_change: list = []  # callables run after the eager mode changes (the C++ launch cache runs in DEFER_NEVER only)


def _changed() -> None:
    for fn in on_change:
        fn()


def get_eager_mode() -> EagerMode:
    return _stack[-1] if _stack else _mode


def _flush_pending() -> None:
    from torchtpu.execution import deferred

    deferred.flush()


def set_eager_mode(mode: EagerMode | str) -> None:
    """Sets the process-wide eager mode (the Python call wins over TORCHTPU_EAGER_MODE)."""
    global _mode
    new = _parse(mode)
    _flush_pending()
    _mode = new
    _changed()


@contextmanager
def eager_mode(mode: EagerMode | str) -> Iterator[EagerMode]:
    m = _parse(mode)
    _flush_pending()
    _stack.append(m)
    _changed()
    try:
        yield m
    finally:
        try:
            _flush_pending()  # a region that fails here raises after the mode is restored
        finally:
            _stack.pop()
            _changed()
