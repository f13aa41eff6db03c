"""How a DEFER_AND_FUSE region writes an op's output view into its storage's flat value (execution/region_ir.py):
a view that is all of its storage in some order of its dims (a fresh output laid out like a transposed input, as
ATen lays it out) is one transpose and reshape, not a scatter of the whole storage; any other partial view is
still scattered. Results bit-identical to DEFER_NEVER and to CPU."""

from __future__ import annotations

import pytest
import torch

import torchtpu
from torchtpu.execution import deferred, region_ir


def _op_names() -> list[str]:
    return [op.name for op in deferred.stats.last_program.ops]


@pytest.mark.parametrize(("sizes", "strides", "order"), [
    ((2, 3, 4), (12, 4, 1), [0, 1, 2]),
    ((2, 3, 4), (12, 1, 3), [0, 2, 1]),
    ((2, 4, 6, 8), (192, 8, 32, 1), [0, 2, 1, 3]),
    ((1, 3, 1, 4), (99, 1, 7, 3), [3, 1]),
    ((3, 4), (1, 3), [1, 0]),
])
def test_dense_order_names_the_dims_from_the_largest_stride(sizes, strides, order):
    numel = 1
    for s in sizes:
        numel *= s
    assert region_ir.dense_order((0, 0, sizes, strides), numel) == order
    assert region_ir.covers((0, 0, sizes, strides), numel)


@pytest.mark.parametrize(("offset", "sizes", "strides", "numel"), [
    (4, (2, 3), (3, 1), 10),  # a slice past the start
    (0, (2, 3), (3, 1), 12),  # part of the storage
    (0, (2, 2, 3), (12, 3, 1), 24),  # every other row
    (0, (2, 3), (0, 1), 6),  # an expanded dim
    (0, (2, 4), (2, 1), 8),  # overlapping rows
])
def test_a_view_that_is_not_all_of_its_storage_once_has_no_order(offset, sizes, strides, numel):
    assert region_ir.dense_order((0, offset, sizes, strides), numel) is None
    assert not region_ir.covers((0, offset, sizes, strides), numel)


def test_a_permuted_fresh_output_is_transposed_into_its_storage_not_scattered():
    torch.manual_seed(0)
    q = torch.randn(2, 6, 4, 8)  # (batch, tokens, heads, head dim), viewed as (batch, heads, tokens, head dim)
    tq = q.to("tpu")
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        torch.tpu.synchronize()
        x = tq.transpose(1, 2)
        y = x * 3.0  # ATen lays the fresh output out as x: strides of a transposed tensor
        z = y.neg()
        torch.tpu.synchronize()
        names = _op_names()
    assert "scatter_axis" not in names and "transpose" in names
    want = q.transpose(1, 2) * 3.0
    assert y.stride() == want.stride()
    assert torch.equal(y.cpu(), want) and torch.equal(z.cpu(), -want)
    with torchtpu.eager_mode("DEFER_NEVER"):
        assert torch.equal(y.cpu(), (tq.transpose(1, 2) * 3.0).cpu())


def test_writes_into_parts_of_a_storage_are_still_scattered():
    base = torch.zeros(4, 6)
    tb = base.to("tpu")
    src = torch.arange(12.).reshape(4, 3)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        torch.tpu.synchronize()
        tb[:, 1:4].copy_(src.to("tpu"))
        tb[:, ::5].add_(1)
        torch.tpu.synchronize()
        assert "scatter_axis" in _op_names()
    base[:, 1:4].copy_(src)
    base[:, ::5].add_(1)
    assert torch.equal(tb.cpu(), base)


def test_a_transposed_inplace_write_keeps_every_element():
    torch.manual_seed(1)
    a = torch.randn(5, 7)
    ta = a.to("tpu")
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        torch.tpu.synchronize()
        ta.t().mul_(2.0).add_(torch.arange(5.).to("tpu"))
        torch.tpu.synchronize()
        assert "scatter_axis" not in _op_names()
    a.t().mul_(2.0).add_(torch.arange(5.))
    assert torch.equal(ta.cpu(), a)
