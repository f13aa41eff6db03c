"""A launch's results before they are written to its outputs: a result that views memory the caller passed in may
view memory an earlier output write overwrites, so each such result that may share memory with an output is
copied first. The C++ shim answers for all results at once (csrc/array_overlap.cpp, handed over by
torchtpu.runtime); without it, numpy's may_share_memory pair by pair gives the same answer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def _external(value: np.ndarray) -> bool:
    """Whether `value` may be memory the caller passed in (an input buffer or a view of one): arrays a kernel
    made during the launch, and views of them, own their root memory and cannot overlap an output."""
    root = value
    while isinstance(root.base, np.ndarray):
        root = root.base
    return not root.flags.owndata


def _pairwise(results: Sequence[Any], outputs: Sequence[np.ndarray]) -> list[int]:
    return [i for i, r in enumerate(results)
            if isinstance(r, np.ndarray) and _external(r) and any(np.may_share_memory(r, o) for o in outputs)]


_shared: Callable[[list, list], list[int]] = _pairwise  # the shim's, once torchtpu's runtime hands it over


def use(shared_with_outputs: Callable[[list, list], list[int]]) -> None:
    """Answers with `shared_with_outputs` (csrc/array_overlap.cpp) from now on: torchtpu.runtime, when it makes
    a driver (this layer does not import torch)."""
    global _shared
    _shared = shared_with_outputs


def unshared(results: list[Any], outputs: Sequence[np.ndarray]) -> list[Any]:
    """`results` with a copy in place of each that may share memory with one of `outputs` (more than one output:
    a single result written to a single output is copied by numpy's overlap handling)."""
    if len(outputs) < 2:
        return results
    shared = _shared(results, list(outputs))
    if shared:
        results = list(results)
        for i in shared:
            results[i] = results[i].copy()
    return results
