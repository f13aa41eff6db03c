"""A storage that gets a new block (resize_ growing a tensor, storage.resize_) while a deferred region still has
writes for it: the region runs first, so the values land in the new block and nothing writes freed memory
(DEFER_AND_FUSE read back garbage and corrupted the heap: `malloc(): unaligned tcache chunk detected`)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES


@pytest.mark.parametrize("mode", MODES)
def test_resize_that_grows_keeps_pending_values(mode: str) -> None:
    with torch.tpu.eager_mode(mode):
        for _ in range(20):
            g = torch.full((2,), 5.0, dtype=torch.float64, device="tpu")
            g.mul_(2)
            g.resize_((3,))
            assert g[:2].cpu().tolist() == [10.0, 10.0]


@pytest.mark.parametrize("mode", MODES)
def test_storage_resize_keeps_pending_values(mode: str) -> None:
    with torch.tpu.eager_mode(mode):
        h = torch.full((4,), 2.0, device="tpu")
        h.add_(1)
        h.untyped_storage().resize_(32)
        assert h.cpu().tolist() == [3.0] * 4


@pytest.mark.parametrize("mode", MODES)
def test_out_resized_from_empty_gets_the_result(mode: str) -> None:
    with torch.tpu.eager_mode(mode):
        a = torch.arange(6.0, device="tpu").reshape(2, 3)
        out = torch.empty(0, device="tpu")
        torch.mul(a, 2, out=out)
        out.add_(1)
        assert out.cpu().tolist() == (torch.arange(6.0).reshape(2, 3) * 2 + 1).tolist()


def test_a_failing_region_raises_at_the_resize_and_poisons_its_outputs() -> None:
    with torch.tpu.eager_mode("DEFER_AND_FUSE"):
        x = torch.ones(3, device="tpu")
        bad = x.index_select(0, torch.tensor([5], device="tpu"))
        g = torch.full((2,), 1.0, device="tpu")
        with pytest.raises(IndexError, match="out of range"):
            g.resize_((5,))
        for pending in (bad, g):
            with pytest.raises(RuntimeError, match="has no value.*out of range"):
                pending.cpu()
        assert g.shape == (2,)
        assert x.cpu().tolist() == [1.0] * 3
