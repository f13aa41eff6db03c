"""An out= tensor on another device than the call's tpu inputs is refused as CUDA does, naming both devices, for
lowered out= kernels, the CPU fallback (nonzero.out) and decompositions; the out tensor is left as it was."""

from __future__ import annotations

import pytest
import torch

aten = torch.ops.aten


@pytest.mark.parametrize("call", [
    lambda x, out: torch.nonzero(x > 0, out=out),  # CPU fallback
    lambda x, out: torch.add(x, 1, out=out),  # lowered (TensorIterator)
    lambda x, out: aten.replication_pad2d.out(x, [1, 1, 1, 1], out=out),  # lowered (structured)
    lambda x, out: torch.neg(x, out=out),
], ids=["nonzero", "add", "replication_pad2d", "neg"])
def test_cpu_out_for_tpu_input_is_refused(call):
    x = torch.randn(1, 2, 4, 4, device="tpu")
    dtype = torch.int64 if call.__code__.co_names[-1:] == ("nonzero",) else torch.float32
    for _ in range(3):  # also after the launch cache holds the tpu-out call
        call(x, torch.empty(0, dtype=dtype, device="tpu"))
    out = torch.full((3,), 7, dtype=dtype)
    with pytest.raises(RuntimeError, match=r"Expected out tensor to have device tpu:0, but got cpu instead"):
        call(x, out)
    assert out.tolist() == [7, 7, 7]


def test_decomposition_out_refuses_cross_device():
    x = torch.randn(3, 3, device="tpu")
    with pytest.raises(RuntimeError, match="tpu:0 to device cpu"):
        torch.tril(x, out=torch.empty(0))


def test_same_device_and_factories_still_work():
    x = torch.tensor([0.0, 1.0, 0.0, 2.0], device="tpu")
    out = torch.empty(0, dtype=torch.int64, device="tpu")
    torch.nonzero(x, out=out)
    assert out.cpu().tolist() == [[1], [3]]
    assert torch.arange(3, out=torch.empty(0, device="tpu")).cpu().tolist() == [0, 1, 2]
