"""Session 52's cuts to the C++ recording hit (csrc/record_native.cpp, record_native_keep.cpp): StorageKeep is a
plain CPython type the cycle collector does not track and that counts its storage's references as before; an
event's origin is memoized by (code, instruction, op), so ops issued at one instruction keep their own op names;
the region's walks read Event and Slot fields in place and give what their Python definitions give."""

from __future__ import annotations

import gc

import pytest
import torch

import torchtpu
from torchtpu._native import native
from torchtpu.execution import deferred, flush_walks

pytestmark = pytest.mark.usefixtures("launch_cache_live", "one_op_regions_kept")


def test_storage_keep_is_untracked_and_counts_references(tpu):
    t = torch.arange(8.0).to(tpu)
    keep = native().StorageKeep(t)
    assert not gc.is_tracked(keep)
    before = keep.references()
    view = t[2:]
    assert keep.references() == before + 1
    del view
    assert keep.references() == before
    flat = keep.flat(torch.float32, 8)
    assert flat.cpu().equal(torch.arange(8.0))
    with pytest.raises(TypeError):
        native().StorageKeep(3)


def test_ops_at_one_instruction_keep_their_own_origin(tpu):
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(8, 8, generator=gen).to(tpu), torch.randn(8, 8, generator=gen).to(tpu)
    ops = (torch.add, torch.sub, torch.mul, torch.add)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for _ in range(3):  # (the first rounds store the entries and plans; later ones are recorded in C++)
            keep = [a * 1]
            start = native().fast_record_count()
            for op in ops:
                keep.append(op(a, b))  # one instruction issues every op
            recorded = native().fast_record_count() - start
            origins = [e.origin for e in deferred._region.events[-len(ops):]]
            torch.tpu.synchronize()
        assert [o[0] for o in origins] == ["aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor",
                                           "aten.add.Tensor"]
        assert len({o[1] for o in origins}) == 1 and "test_record_native_memo.py:" in origins[0][1]
        want = [a.cpu() + b.cpu(), a.cpu() - b.cpu(), a.cpu() * b.cpu(), a.cpu() + b.cpu()]
    assert recorded == len(ops) - 1  # the last round: all but the first (which records the kept one-op region)
    assert all(x.cpu().equal(w) for x, w in zip(keep[1:], want))


def test_walks_read_fields_as_attributes(tpu):
    a = torch.ones(4, 4).to(tpu)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        for _ in range(3):
            kept = [a + 1, a * 2]
            a + 3  # noqa: B018 - dropped
            region = deferred._region
            want_live = [i for i, s in enumerate(region.slots) if s.written and s.referenced_elsewhere()]
            want_key = (tuple(e.key for e in region.events),
                        tuple(v for s in region.slots for v in (s.dtype, s.nbytes)))
            assert flush_walks.live(region) == want_live
            assert flush_walks.replay_key(region) == want_key
            torch.tpu.synchronize()
    assert kept[0].cpu().equal(torch.full((4, 4), 2.0)) and kept[1].cpu().equal(torch.full((4, 4), 2.0))
