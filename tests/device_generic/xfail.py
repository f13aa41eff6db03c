"""Expected failures of the device-generic tests on "tpu", each with its cause: applied as
`unittest.expectedFailure`, so a fixed bug makes its test fail (unexpected success) until the entry is removed."""

from __future__ import annotations

import unittest
from typing import Any

# "GenericClass.test_name" (the tpu instance: test_name + "_tpu") -> cause
TPU_XFAIL: dict[str, str] = {}


def apply_expected_failures(scope: dict[str, Any]) -> None:
    """Marks the tpu instances of TPU_XFAIL's tests in `scope` (the instantiated classes, named
    <Generic>PRIVATEUSE1 or <Generic>TPU: PyTorch renames the device type after its first instantiation)."""
    for key, cause in TPU_XFAIL.items():
        generic, test = key.split(".", 1)
        marked = 0
        for suffix in ("PRIVATEUSE1", "TPU"):
            cls = scope.get(generic + suffix)
            for name in [n for n in dir(cls) if n == f"{test}_tpu" or n.startswith(f"{test}_tpu_")] if cls else []:
                setattr(cls, name, unittest.expectedFailure(getattr(cls, name)))
                marked += 1
        if not marked:
            raise KeyError(f"xfail entry {key!r} names no tpu test ({cause})")
