"""DEFER_AND_FUSE and Python's cycle collector: a recorded op leaves no object the collector tracks (a pending
region held four per op, which made full collections a third of a long loop's time), and a storage the user
holds only as a torch.UntypedStorage still counts as referenced when the region decides what to write."""

from __future__ import annotations

import gc

import pytest
import torch

import torchtpu


def test_recorded_ops_leave_no_tracked_objects():
    a = torch.randn(8, 8).to("tpu")

    def record(n: int) -> None:
        for _ in range(n):
            torch.add(a, a)

    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        record(200)  # warm: the op's plan, views and user line cached
        torch.tpu.synchronize()
        record(200)  # a pending region that the counted calls add to
        gc.collect()
        before = len(gc.get_objects())
        record(2000)
        gc.collect()
        grown = len(gc.get_objects()) - before
        torch.tpu.synchronize()
    # before: Event, its __dict__, Slot and a torch.UntypedStorage per op (6,671 on the code before); the margin
    # is for other threads' objects (pytest-xdist's channel), far below one per op
    assert grown < 500, f"{grown} more tracked objects after recording 2,000 ops"


@pytest.mark.parametrize("repeats", [1, 3])
def test_a_storage_held_only_as_an_untyped_storage_is_written(repeats):
    a_cpu = torch.arange(16.0).reshape(4, 4)
    a = a_cpu.to("tpu")
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for _ in range(repeats):  # the later calls record through the cached path
            y = a * 3 + 1
            storage = y.untyped_storage()
            del y
            torch.tpu.synchronize()
            t = torch.empty(0, device="tpu").set_(storage, 0, (4, 4), (4, 1))
            # before: the region counted the storage's Python object as its own and left the result unwritten
            assert torch.equal(t.cpu(), a_cpu * 3 + 1)
