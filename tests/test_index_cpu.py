"""A CPU index (bool mask or integer) into a tpu tensor is copied to the device as CUDA does (getitem, setitem,
index_put_ with and without accumulate), compared with CPU; a CPU values tensor still raises the device-mix error."""

from __future__ import annotations

import pytest
import torch


def _both(fn):
    base = torch.arange(24.0).reshape(2, 3, 4)
    cpu, tpu = base.clone(), base.to("tpu")
    out_cpu, out_tpu = fn(cpu), fn(tpu)
    torch.testing.assert_close(tpu.cpu(), cpu, rtol=0, atol=0)
    if out_cpu is not None:
        torch.testing.assert_close(out_tpu.cpu(), out_cpu, rtol=0, atol=0)


MASK = torch.tensor([True, False, True, False])


@pytest.mark.parametrize("fn", [
    lambda t: t[..., MASK],
    lambda t: t[MASK.reshape(1, 1, 4).expand(2, 3, 4)],
    lambda t: t[torch.tensor([1, 0, 1])],
    lambda t: t[:, torch.tensor([[0, 2]]), torch.tensor([3])],
    lambda t: t[torch.tensor(1)],
    lambda t: t.__setitem__((..., MASK), -1.0),
    lambda t: t.__setitem__(torch.tensor([True, False]), 5.0),
    lambda t: t.index_put_((torch.tensor([0, 1, 1]), torch.tensor([2, 0, 0])),
                           torch.tensor(3.0, device=t.device), accumulate=True),
    lambda t: t.index_put_((torch.tensor([1]),), torch.full((1, 3, 4), 2.0, device=t.device)),
    lambda t: torch.index_put(t, (torch.tensor([0, 0]),), torch.ones(3, 4, device=t.device), accumulate=True),
], ids=["mask_get", "full_mask_get", "long_get", "broadcast_long_get", "0dim_get", "mask_set", "row_mask_set",
        "index_put_accumulate", "index_put", "index_put_functional"])
def test_cpu_index_matches_cpu(fn):
    _both(fn)


def test_cpu_values_still_refused():
    t = torch.zeros(2, 4, device="tpu")
    with pytest.raises(RuntimeError, match="found at least two devices"):
        t.index_put_((torch.tensor([0]),), torch.ones(1, 4))
    assert t.cpu().abs().sum().item() == 0
