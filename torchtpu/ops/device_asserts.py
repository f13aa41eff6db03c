"""Device-side asserts: `torch._assert_async(cond[, msg])` checked where the program runs, as CUDA's device-side
assert is, instead of reading `cond` back to the host (which flushed a DEFER_AND_FUSE region and synchronized).

A zero (or False) `cond` raises RuntimeError: with `msg` (`_assert_async.msg`), or in CPU's words. Where the check
runs is where `check_index` runs: at the op in DEFER_NEVER, at the region's flush in DEFER_AND_FUSE (the region's
outputs poisoned, deferred.py), inside a compiled program; a pruned region keeps it (region_dce.py). What CPU
checks on the host (one element) is checked at the call. Ops whose CPU kernel checks values (binary_cross_entropy's
input and target range) assert through here.
"""

from __future__ import annotations

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten

_ZERO = "Expected Tensor with single nonzero value, but got zero"


def _one_value(cond: Sym) -> None:
    if cond.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if cond.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")


def assert_nonzero(cond: Sym, message: str) -> None:
    """Raises RuntimeError(`message`) when the program runs, if the one element of `cond` is zero (False)."""
    _one_value(cond)
    zero = P.convert(P.compare("EQ", P.reshape(cond, (1,)), 0), torch.int64)
    P.check_index(zero, 1, message.replace("{", "{{").replace("}", "}}"), error="RuntimeError")


@lower(aten._assert_async.default)
def assert_async(self: Sym) -> tuple[()]:
    assert_nonzero(self, _ZERO)
    return ()


@lower(aten._assert_async.msg)
def assert_async_msg(self: Sym, assert_msg: str) -> tuple[()]:
    assert_nonzero(self, assert_msg)
    return ()
