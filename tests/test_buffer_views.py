"""`runtime.buffers` (csrc/buffer_views.cpp) gives each launch operand the view `runtime.buffer` caches for it:
the same object for a cached tensor (contiguous, transposed, offset, 0-d, empty), a new view made and cached by
`buffer` on a miss, and a TypeError naming what it takes for anything else."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchtpu import runtime


def _tensors() -> list[torch.Tensor]:
    base = torch.arange(24.0, device="tpu").reshape(4, 6)
    return [base, base.t(), base[1:, 2:], base[2, 3], torch.empty(0, 3, device="tpu"),
            torch.ones(5, dtype=torch.int32, device="tpu"), torch.zeros(2, 2, dtype=torch.bfloat16, device="tpu")]


def test_a_cached_view_is_the_same_object_as_buffer_gives() -> None:
    tensors = _tensors()
    expected = [runtime.buffer(t) for t in tensors]
    got = runtime.buffers(tensors)
    for t, e, g in zip(tensors, expected, got, strict=True):
        if t.numel():
            assert g is e
        assert g.shape == tuple(t.shape)


def test_a_miss_is_made_and_cached_by_buffer() -> None:
    t = torch.arange(6.0, device="tpu").reshape(2, 3).t()
    runtime._views.clear()
    view = runtime.buffers((t,))[0]  # a tuple is taken as a list
    np.testing.assert_array_equal(view, t.cpu().numpy())
    assert runtime.buffer(t) is view
    assert runtime.buffers([t])[0] is view


def test_a_view_sees_the_tensors_memory() -> None:
    t = torch.zeros(3, 4, device="tpu")
    view = runtime.buffers([t[:, 1]])[0]
    t[:, 1] = torch.tensor([1.0, 2.0, 3.0], device="tpu")
    np.testing.assert_array_equal(view, [1.0, 2.0, 3.0])


def test_anything_but_a_tensor_is_refused() -> None:
    with pytest.raises(TypeError, match="list of tensors"):
        runtime.buffers([torch.ones(2, device="tpu"), 1.0])
