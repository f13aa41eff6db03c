"""copy_to_host_many (ops/copy.py) and its ScalarGather, the one-step copy-back of a compiled graph's pooled 0-d
outputs (compile/launch_layout.py): the same values and charges as one `dst.copy_(src)` per pair, the launch's
results seen, sources it does not cover read one by one, and on the simulator one gather per pooled set."""

from __future__ import annotations

import pytest
import torch

import torchtpu
from torchtpu import runtime
from torchtpu.ops.copy import ScalarGather, copy_to_host_many

DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.float16, torch.bfloat16,
          torch.uint64]


def _copies(device: int = 0) -> float:
    timelines = getattr(runtime.driver(), "timelines", None)
    return 0.0 if timelines is None else timelines[device].copies["count"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_many_equals_copy_each_with_and_without_gather(tpu, dtype):
    values = [torch.tensor(v).to(dtype) for v in (3, 0, 1, 7, 2)]
    srcs = [v.to(tpu) for v in values]
    if dtype not in (torch.bool, torch.uint64):
        srcs = [s * 1 for s in srcs]  # computed on the device (possibly deferred): the copy must see the results
    expected = [s.cpu() for s in srcs]
    gather = ScalarGather.of(srcs)
    numpy_native = dtype not in (torch.bfloat16, torch.uint64)
    assert (gather is not None) == (runtime.driver().strided_operands and numpy_native), (dtype, gather)
    for g in (None, gather):
        dsts = [torch.full((), 5).to(dtype) for _ in srcs]
        before = _copies()
        copy_to_host_many(list(zip(srcs, dsts)), g)
        assert all(torch.equal(d, e) and d.dtype == e.dtype for d, e in zip(dsts, expected)), (dsts, expected)
        if runtime.driver().strided_operands:
            assert _copies() - before == len(srcs), "one charged copy per pair, as copy_ makes"


@pytest.mark.parametrize("mode", ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"])
def test_gather_reads_new_values_each_time_and_ignores_other_sources(tpu, mode):
    srcs = [torch.zeros((), device=tpu) for _ in range(3)]
    gather = ScalarGather.of(srcs)
    dsts = [torch.zeros(()) for _ in srcs]
    with torchtpu.eager_mode(mode):
        for step in range(1, 4):
            for s in srcs:
                s.add_(1.0)  # on the device, deferred in DEFER_AND_FUSE: the copy-back must see it
            copy_to_host_many(list(zip(srcs, dsts)), gather)
            assert [d.item() for d in dsts] == [float(step)] * 3
    others = [torch.full((), 9.0, device=tpu) for _ in srcs]
    copy_to_host_many(list(zip(others, dsts)), gather)  # not the gather's sources: read one by one
    assert [d.item() for d in dsts] == [9.0] * 3


def test_no_gather_for_mixed_or_shaped_sources(tpu):
    assert ScalarGather.of([torch.zeros((), device=tpu), torch.zeros((), dtype=torch.int64, device=tpu)]) is None
    assert ScalarGather.of([torch.zeros(2, device=tpu)]) is None
    assert ScalarGather.of([]) is None


def test_compiled_adamw_copies_back_through_one_gather(tpu, monkeypatch):
    from torchtpu.compile.backend import CompiledGraph

    launched, real = [], CompiledGraph._launch

    def observed(self, traced, *args, **kwargs):
        launched.append(traced)
        return real(self, traced, *args, **kwargs)

    monkeypatch.setattr(CompiledGraph, "_launch", observed)
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)).to(tpu)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    step = torch.compile(opt.step, backend="tpu")
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(2, 8).to(tpu)).sum().backward()
        step()
    assert [float(opt.state[p]["step"]) for p in model.parameters()] == [3.0] * 4
    traced = max(launched, key=lambda t: len(t.program.inputs))
    pools = [pool for sets in traced.layout._free.values() for pool in sets]
    assert len(pools) == 1 and len(pools[0]) == 4, "one pooled set of the four step counts"
    gather = pools[0].gather
    if runtime.driver().strided_operands:
        assert gather is not None, "one gather for the pool"
        assert all(a is b for a, b in zip(gather.srcs, pools[0].values())), "the gather reads the pool's outputs"
    else:
        assert gather is None, "no gather where buffers are device memory"
