"""A storage that gets a new block (resize_ growing a tensor, storage.resize_) while a deferred region still has
writes for it: the region runs first, so the values land in the new block and nothing writes freed memory
(DEFER_AND_FUSE read back garbage and corrupted the heap: `malloc(): unaligned tcache chunk detected`)."""

from __future__ import annotations

import gc

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu


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


def _poisoned(n: int) -> torch.Tensor:
    """A tensor of `n` floats that a failed DEFER_AND_FUSE region was to write (it has no value)."""
    x = torch.ones(3, device="tpu")
    with torch.tpu.eager_mode("DEFER_AND_FUSE"):
        x.index_select(0, torch.tensor([5], device="tpu"))
        w = torch.ones(n, device="tpu")
        w.mul_(3)
        with pytest.raises(IndexError):
            torch.tpu.synchronize()
    return w


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("grow", ["tensor", "storage"])
def test_a_poisoned_tensor_stays_poisoned_in_its_new_block(grow: str, mode: str) -> None:
    w = _poisoned(4)
    with torch.tpu.eager_mode(mode):
        if grow == "tensor":
            w.resize_(100)
        else:
            w.untyped_storage().resize_(400)
        for read in (lambda: w[:4].cpu(), lambda: (w[:4] + 1).cpu(), lambda: w.sum().item()):
            with pytest.raises(RuntimeError, match="has no value.*out of range"):
                read()
        torch.empty(0, device="tpu").set_(w.untyped_storage()).fill_(2.0)  # the whole storage written: valid
        assert w[:4].cpu().tolist() == [2.0] * 4


def test_a_poisoned_storage_resized_to_nothing_is_valid_and_others_are_unaffected() -> None:
    w = _poisoned(4)
    kept = _poisoned(2)
    w.untyped_storage().resize_(0)
    assert torch.empty(0, device="tpu").cpu().numel() == 0  # no poisoned "empty" storage
    w.untyped_storage().resize_(16)  # as FSDP2 brings a parameter back: fresh bytes, then written
    w.copy_(torch.arange(4.0))
    assert w.cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="has no value"):
        kept.cpu()



def test_failed_region_with_an_out_resized_from_empty_poisons_only_its_result() -> None:
    """The out= storage was met empty (its dtype's empty slot) and again grown: poisoning both holders keyed every
    empty int32 tensor as poisoned, and the two holders of one storage kept each other in the table forever
    (the C++ launch cache stayed off for the rest of the process)."""
    from torchtpu.execution import poison

    def case(d: str) -> torch.Tensor:
        out = torch.ones(0, dtype=torch.int32, device=d)  # written (nothing) by a recorded op
        torch.ops.aten.index_fill.int_Scalar_out(torch.ones((), dtype=torch.int32, device=d), -1,
                                                 torch.tensor([-2], device=d), -4.997, out=out)
        return out

    unrelated = torch.empty(0, dtype=torch.int32, device="tpu")
    assert_refused_as_cpu(case, "DEFER_AND_FUSE")
    assert (unrelated + 1).cpu().numel() == 0  # raised "has no value": every empty int32 tensor was poisoned
    gc.collect()  # the error's traceback holds the case's frame in a cycle
    torch.tpu.synchronize()
    poison.sweep()
    assert not poison.active
