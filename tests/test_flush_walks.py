"""A flush's walks in C++ (execution/flush_walks.py, csrc/region_flush.cpp) give what their Python definitions
give on a real pending region: the written slots referenced elsewhere (a held result, a view of one, a slot whose
flat holder was made; not a dropped result nor a slot only read) and the replay key."""

from __future__ import annotations

import torch

import torchtpu
from torchtpu.execution import deferred, flush_walks


def test_walks_match_their_python_definitions(tpu):
    a = torch.arange(16.0).reshape(4, 4).to(tpu)
    w = torch.ones(4).to(tpu)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        kept = a * 2
        view = (a + 1)[1:]  # the storage held through a view only
        a * 3  # dropped: referenced by the region alone
        w.add_(1)  # an existing tensor written in place
        held_by_holder = a - 1
        region = deferred._region
        slots = region.slots
        slot_of_holder = next(i for i, s in enumerate(slots) if s.written and s.key == held_by_holder.data_ptr())
        slots[slot_of_holder].holder  # noqa: B018 - makes the flat holder the slot then also holds
        del held_by_holder
        want_live = [i for i, s in enumerate(slots) if s.written and s.referenced_elsewhere()]
        want_key = (tuple(e.key for e in region.events), tuple(v for s in slots for v in (s.dtype, s.nbytes)))
        live = flush_walks.live(region)
        key = flush_walks.replay_key(region)
        torch.tpu.synchronize()
    assert live == want_live
    assert len(live) == 3 and slot_of_holder not in live  # kept, view's storage, w
    assert key == want_key and len(key[0]) == len(region.events) == 5
    assert kept.cpu().equal(torch.arange(16.0).reshape(4, 4) * 2)
    assert view.cpu().equal(torch.arange(4.0, 16).reshape(3, 4) + 1)
    assert w.cpu().equal(torch.full((4,), 2.0))
