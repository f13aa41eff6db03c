"""Matmul precision: DEFAULT, HIGH, HIGHEST = 1, 3, 6 bf16 MXU passes (XLA's BF16_BF16_F32, _X3, _X6).

`with torch.tpu.precision(...)` wins over the global setting; the default is DEFAULT (bf16 multiply, fp32
accumulate), which is what a TPU does for float32 matmuls unless asked otherwise.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager

from torchtpu import config


class Precision(enum.Enum):
    DEFAULT = 1
    HIGH = 3
    HIGHEST = 6

    @property
    def passes(self) -> int:
        return self.value


def _parse(value: Precision | str) -> Precision:
    if isinstance(value, Precision):
        return value
    try:
        return Precision[str(value).upper()]
    except KeyError:
        raise ValueError(f"unknown precision {value!r}; valid: {', '.join(p.name for p in Precision)}") from None


_global = _parse(config.get("TORCHTPU_PRECISION"))
# Process-wide, not thread-local: autograd runs backward ops on its own device threads, and they must
# see the setting of the code that called backward().
_stack: list = []
on_change: list = []  # callables run after the current precision changes (the C++ launch cache keys by it)


def _changed() -> None:
    for fn in on_change:
        fn()


def set_precision(value: Precision | str) -> None:
    """Sets the global matmul precision."""
    global _global
    _global = _parse(value)
    _changed()


def get_precision() -> Precision:
    return current_precision()


def current_precision() -> Precision:
    return _stack[-1] if _stack else _global


@contextmanager
def precision(value: Precision | str) -> Iterator[Precision]:
    """Uses `value` for matmuls issued inside the block (it wins over the global setting)."""
    p = _parse(value)
    _stack.append(p)
    _changed()
    try:
        yield p
    finally:
        _stack.pop()
        _changed()
