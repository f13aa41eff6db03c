"""DEFER_AND_FUSE region programs: dead ops dropped (execution/region_dce.py), each view read once, slots that
hold the storage itself (region_ir.Slot): results bit-identical to DEFER_NEVER, checks still raised."""

from __future__ import annotations

import gc

import pytest
import torch
from torchtpu.drivers.ir import Op, TensorType, Value

import torchtpu
from torchtpu.execution import deferred, poison, region_dce


def _ops(names_of: str) -> list[str]:
    return [op.name for op in deferred.stats.last_program.ops if op.name == names_of]


def test_dropped_results_are_not_computed():
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    ta, tb = a.to("tpu"), b.to("tpu")
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        torch.tpu.synchronize()
        for _ in range(5):
            y = torch.add(ta, tb)
            z = torch.mm(ta, tb)
        w = y * 2
        torch.tpu.synchronize()
        assert len(_ops("add")) == 1 and len(_ops("dot_general")) == 1 and len(_ops("multiply")) == 1
        # the two input reads are shared by every op of the region
        assert len([op for op in deferred.stats.last_program.ops if op.name == "reshape"
                    and op.inputs[0] in deferred.stats.last_program.inputs]) == 2
    assert torch.equal(y.cpu(), a + b) and torch.equal(w.cpu(), (a + b) * 2)
    with torchtpu.eager_mode("DEFER_NEVER"):
        assert torch.equal(z.cpu(), torch.mm(ta, tb).cpu())


def test_a_result_kept_only_through_a_view_is_written():
    a = torch.randn(4, 4)
    ta = a.to("tpu")
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        torch.tpu.synchronize()
        y = ta + 1
        v = y[1]
        del y
        u = ta * 3  # noqa: F841 - a second op: a region, not the one-op path
        torch.tpu.synchronize()
    assert torch.equal(v.cpu(), (a + 1)[1])


def test_a_result_kept_only_by_autograd_is_written():
    w = torch.randn(4, 4)
    grads = []
    for mode in ("DEFER_NEVER", "DEFER_AND_FUSE"):
        tw = w.to("tpu").requires_grad_()
        with torchtpu.eager_mode(mode):
            loss = (tw.exp() * 2).sum()  # exp's result is saved for backward only
            loss.backward()
            grads.append(tw.grad.cpu())
    assert torch.equal(grads[0], grads[1])


def test_a_dropped_integer_division_by_zero_still_raises():
    x = torch.tensor([4, 6], device="tpu")
    zero = torch.zeros(2, dtype=torch.int64, device="tpu")
    with torchtpu.eager_mode("DEFER_NEVER"), pytest.raises(Exception) as never:
        torch.div(x, zero, rounding_mode="floor")
    with pytest.raises(Exception) as fused:  # noqa: PT012 - the error surfaces at the flush
        with torchtpu.eager_mode("DEFER_AND_FUSE"):
            for _ in range(2):
                q = torch.div(x, zero, rounding_mode="floor")  # noqa: F841 - the first result is dropped
            del q
            y = x + 1
            torch.tpu.synchronize()
    assert type(fused.value) is type(never.value)
    assert "division by zero" in str(fused.value)
    assert y is not None
    del y, fused  # the failed region's results: once nobody holds them, a flush sweeps them and the cache serves again
    gc.collect()  # the error's traceback holds frames in a cycle: collected now, not whenever the collector runs
    torch.tpu.synchronize()
    assert not poison.active


def _op(name: str, dtype: str) -> Op:
    t = TensorType((2,), dtype)
    return Op(name, (Value(1, t), Value(2, t)), (), (Value(3, t),))


def test_removable_ops():
    assert region_dce.removable(_op("add", "int64"))
    assert region_dce.removable(_op("divide", "float32"))
    assert not region_dce.removable(_op("divide", "int64"))
    assert not region_dce.removable(_op("remainder", "int32"))
    assert not region_dce.removable(_op("check_index", "int64"))
    assert not region_dce.removable(_op("gather_axis", "float32"))


def test_zero_size_tensors_are_recorded_without_a_flush():
    k = torch.randn(2, 3, 4)
    results = []
    for mode in ("DEFER_NEVER", "DEFER_AND_FUSE"):
        tk = k.to("tpu")
        with torchtpu.eager_mode(mode):
            torch.tpu.synchronize()
            flushes = deferred.stats.flushes
            y = tk * 2
            for _ in range(2):  # the second call is a C++ launch-cache hit
                cache = torch.empty(0, device="tpu")  # a model's empty KV cache
                out = torch.cat([cache, y], dim=-2) + 1
                empty = torch.empty(0, 4, device="tpu").zero_()
            if mode == "DEFER_AND_FUSE":
                assert deferred.pending() and deferred.stats.flushes == flushes
            results.append((out.cpu(), empty.cpu()))
    assert torch.equal(results[0][0], results[1][0]) and results[1][1].shape == (0, 4)
