"""The direct-write decision over buffer byte ranges (drivers/sim/direct_outputs.py `DirectPlan._decide`), which
runs on every launch whose buffers are new (a training step's gradients and fresh outputs; its sorted-interval
search is what a faster version must still equal), against a pairwise reference of the rule in the module
docstring, over random views of one shared buffer: overlapping, identical, empty, reversed and strided buffers."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers.sim.direct_outputs import DirectPlan

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # numpy < 2
    byte_bounds = np.byte_bounds


def _reference(checks: dict, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> bool:
    for k, (_, _, shape, dtype) in checks.items():
        if outputs[k].shape != shape or outputs[k].dtype != dtype:
            return False

    def overlap(a: np.ndarray, b: np.ndarray) -> bool:
        (alo, ahi), (blo, bhi) = byte_bounds(a), byte_bounds(b)
        return a.size > 0 and b.size > 0 and alo < bhi and blo < ahi

    for k, o in enumerate(outputs):
        if any(overlap(o, p) for p in outputs[k + 1:]):
            return False
    for i, a in enumerate(inputs):
        for k, o in enumerate(outputs):
            check = checks.get(k)
            if check is not None and overlap(a, o) and (check[1] or i in check[0]):
                return False
    return True


def _view(rng: np.random.Generator, memory: np.ndarray) -> np.ndarray:
    """A random float32 view of `memory`: 1-d or 2-d, possibly empty, reversed or strided."""
    start = int(rng.integers(0, memory.size))
    room = memory.size - start
    kind = rng.integers(0, 5)
    if kind == 0:
        return memory[start:start]  # empty
    if kind == 1 and room >= 8:
        rows = int(rng.integers(1, room // 4 + 1))
        return memory[start:start + 4 * rows].reshape(rows, 4).T  # transposed
    if kind == 2:
        return memory[start:start + int(rng.integers(1, min(room, 16) + 1))][::-1]  # negative stride
    if kind == 3:
        return memory[start::int(rng.integers(2, 4))][:8]  # strided
    return memory[start:start + int(rng.integers(1, min(room, 16) + 1))]


@pytest.mark.parametrize("seed", range(6))
def test_decision_matches_the_pairwise_rule(seed):
    rng = np.random.default_rng(seed)
    memory = np.zeros(96, np.float32)
    agree = {True: 0, False: 0}
    for _ in range(400):
        n_in, n_out = int(rng.integers(1, 7)), int(rng.integers(1, 6))
        inputs = [_view(rng, memory) for _ in range(n_in)]
        outputs = [_view(rng, memory) for _ in range(n_out)]
        if rng.random() < 0.5:  # outputs in separate memory, some updating an input in place
            outputs = [inputs[int(rng.integers(0, n_in))] if rng.random() < 0.4 else np.zeros(o.shape, np.float32)
                       for o in outputs]
        checks = {}
        for k in range(n_out):
            if rng.random() < 0.7:
                after = frozenset(int(i) for i in rng.choice(n_in, int(rng.integers(0, n_in + 1)), replace=False))
                shape = outputs[k].shape if rng.random() < 0.9 else (3,)
                checks[k] = (after, bool(rng.random() < 0.2), shape, np.dtype(np.float32))
        plan = DirectPlan({}, [], checks)
        expected = _reference(checks, inputs, outputs)
        assert plan._decide(inputs, outputs) == expected, (seed, [byte_bounds(a) for a in inputs],
                                                           [byte_bounds(o) for o in outputs], checks)
        agree[expected] += 1
    assert agree[True] > 20 and agree[False] > 20  # both answers were exercised

