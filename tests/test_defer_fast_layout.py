"""DEFER_AND_FUSE's recording hits looked up by their storage layout (csrc/fast_launch.cpp storage_layout,
execution/record_plan.py, one_op_cache.one_key): calls of one cached op (same sizes and dtypes, so one C++
launch-cache entry) on storages laid out differently (an offset, a transpose, a bigger storage, an input aliasing
another, an in-place write) each get their own views, bit-identical to DEFER_NEVER, flushed alone (synced) and
recorded into a longer region (unsynced)."""

from __future__ import annotations

import pytest
import torch

import torchtpu
from torchtpu.execution import one_op_cache, record_plan

# the lookups are counted: other tests' poisoned storages (which turn the C++ launch cache off) set aside
pytestmark = pytest.mark.usefixtures("launch_cache_live", "one_op_regions_kept")


def _operands(tpu) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Pairs of 8x8 float32 operands (one C++ key for add and mm) on differently laid out storages."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(8, 8, generator=gen).to(tpu)
    b = torch.randn(8, 8, generator=gen).to(tpu)
    big = torch.randn(10, 8, generator=gen).to(tpu)  # a bigger storage: offset views of it
    wide = torch.randn(8, 16, generator=gen).to(tpu)  # strided column views
    return [(a, b), (b, a), (a, a), (big[1:9], b), (big[2:], big[:8]), (a.t(), b), (wide[:, ::2], wide[:, 1::2]),
            (a, b.t())]


def _run(tpu, mode: str, synced: bool) -> list[torch.Tensor]:
    pairs = _operands(tpu)
    acc = torch.zeros(8, 8).to(tpu)
    out = []
    with torchtpu.eager_mode(mode):
        for _ in range(3):  # the first round misses (Python kernels), the later ones hit the C++ path
            for x, y in pairs:
                out.append(torch.add(x, y))
                if synced:
                    torch.tpu.synchronize()
                out.append(torch.mm(x, y))
                if synced:
                    torch.tpu.synchronize()
                acc.add_(x)
                if synced:
                    torch.tpu.synchronize()
        torch.tpu.synchronize()
    return [t.cpu() for t in (*out, acc)]


def _same(xs: list[torch.Tensor], ys: list[torch.Tensor]) -> None:
    assert len(xs) == len(ys)
    for i, (x, y) in enumerate(zip(xs, ys)):
        assert x.view(torch.int32).equal(y.view(torch.int32)), i


@pytest.mark.filterwarnings("ignore:DEFER_AND_FUSE keeps recompiling")  # one small region per layout, on purpose
def test_layouts_of_one_cached_op_replay_bit_identical_synced(tpu):
    never = _run(tpu, "DEFER_NEVER", synced=True)
    one_op_cache._by_layout.clear()
    fused = _run(tpu, "DEFER_AND_FUSE", synced=True)
    _same(never, fused)
    assert len(one_op_cache._by_layout) >= 8  # each layout its own lookup


def test_layouts_of_one_cached_op_record_bit_identical_unsynced(tpu):
    never = _run(tpu, "DEFER_NEVER", synced=False)
    record_plan.clear()
    fused = _run(tpu, "DEFER_AND_FUSE", synced=False)
    _same(never, fused)
    assert len(record_plan._plans) >= 8 and record_plan._views
