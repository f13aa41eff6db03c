"""drivers/sim/host_memory.py: the address space as one byte array; views by address are the storage's memory."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchtpu.drivers.sim import host_memory

from torchtpu import runtime

pytestmark = pytest.mark.sim_only("the simulator's buffers are host memory")


def test_views_by_address_are_the_storage_memory(tpu):
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6).to(tpu)
    torch.tpu.synchronize()
    space, first = runtime.driver().host_memory
    assert space is host_memory.SPACE and first == host_memory.BASE
    flat = host_memory.flat(t.data_ptr(), t.nbytes).view(np.float32)
    assert flat.tolist() == list(range(24))
    view = np.ndarray((3, 3), np.float32, space, t.data_ptr() - first + 4 * 1, (4 * 6 * 1, 4 * 2))  # t[:3, 1::2]
    assert np.array_equal(view, t.cpu()[:3, 1::2].numpy())
    flat[0] = -1.0  # writable: the tensor sees it
    assert t.cpu()[0, 0].item() == -1.0
    key, nbytes, dtype, device = runtime.storage_of(t)
    buffer = runtime.driver().storage_buffer(key, nbytes, dtype, device)
    assert np.shares_memory(buffer, flat) and buffer.tolist() == flat.tolist()


def test_an_address_past_the_space_takes_ctypes(monkeypatch):
    data = np.arange(8, dtype=np.uint8)
    monkeypatch.setattr(host_memory, "SPACE", host_memory.SPACE[:16])
    got = host_memory.flat(data.ctypes.data, 8)
    assert got.tolist() == list(range(8)) and np.shares_memory(got, data)
