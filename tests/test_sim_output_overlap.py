"""The sim driver's check of which results may share memory with a launch's outputs (drivers/sim/output_overlap.py,
csrc/array_overlap.cpp): the shim's answer for all results at once equals numpy's may_share_memory pair by pair,
on random strided, reversed, transposed and empty views of caller memory; a launch whose result views memory an
earlier output write overwrites still gets the result as it was."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torchtpu.drivers.sim import output_overlap

import torchtpu

_N = 64


def native_shared(results: list, outputs: list) -> list[int]:
    torch.zeros(1, device="tpu")  # the driver exists: the runtime handed the shim's check over
    assert output_overlap._shared is not output_overlap._pairwise
    return output_overlap._shared(results, outputs)


def _caller_memory() -> np.ndarray:
    return np.frombuffer(bytearray(_N * 8), np.float64)  # not owned by numpy: as a storage's buffer


@st.composite
def _view(draw: st.DrawFn, space: np.ndarray) -> np.ndarray:
    start = draw(st.integers(0, _N))
    stop = draw(st.integers(start, _N))
    step = draw(st.sampled_from([1, 1, 2, 3, -1]))
    v = space[start:stop:step] if step > 0 else space[start:stop][::-1]
    if v.size and v.size % 2 == 0 and draw(st.booleans()):
        v = v.reshape(2, -1).T
    return v


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_shim_answers_as_numpy_pair_by_pair(data):
    space = _caller_memory()
    results = data.draw(st.lists(_view(space), max_size=8))
    owned = data.draw(st.lists(st.integers(0, 4), max_size=3))
    results += [np.arange(float(n)) for n in owned] + [np.float32(1.0)]
    outputs = data.draw(st.lists(_view(space), min_size=1, max_size=6))
    assert native_shared(results, outputs) == output_overlap._pairwise(results, outputs)


def test_a_result_viewing_an_earlier_output_is_copied_first():
    space = _caller_memory()
    space[:] = np.arange(_N)
    results = [np.zeros(8), space[0:8]]  # the second result reads what the first output write replaces
    out = output_overlap.unshared(results, [space[0:8], space[8:16]])
    assert out[1] is not results[1] and np.array_equal(out[1], np.arange(8.0))
    assert out[0] is results[0]
    for result, target in zip(out, [space[0:8], space[8:16]]):
        np.copyto(target, result)
    assert np.array_equal(space[8:16], np.arange(8.0))


def test_one_output_needs_no_copy():
    space = _caller_memory()
    results = [space[0:8]]
    assert output_overlap.unshared(results, [space[4:12]]) is results


def test_a_region_writing_a_slot_with_another_slots_old_value_swaps_them():
    a, b = torch.arange(6.0), torch.arange(6.0, 12.0)
    ta, tb = a.to("tpu"), b.to("tpu")
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        torch.tpu.synchronize()
        tmp = ta.clone()
        ta.copy_(tb)
        tb.copy_(tmp)
        del tmp
        torch.tpu.synchronize()
    assert torch.equal(ta.cpu(), b) and torch.equal(tb.cpu(), a)
