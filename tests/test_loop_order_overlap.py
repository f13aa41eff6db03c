"""A write into a view whose elements overlap in memory without a stride-0 dim (an `as_strided` window): ATen's
has_internal_overlap calls it TOO_HARD and CPU writes it in its loop order; tpu computes every value before
writing any, so it refuses such a write (fill_/zero_ excepted), naming the strides and clone(), and leaves the
memory as it was (execution/overlap.py refuse_loop_order_overlap). Before, add_/mul_/index_put_/copy_/out= into
such a view returned other numbers than CPU with no error."""

from __future__ import annotations

import itertools

import pytest
import torch
from refusal_cases import MODES

from torchtpu.execution.overlap import self_overlapping

WRITES = {
    "add_": lambda v, d: v.add_(1),
    "mul_": lambda v, d: v.mul_(2),
    "index_put_": lambda v, d: v.index_put_((torch.tensor([0, 1], device=d),), torch.tensor([5.0, 7.0, 8.0], device=d)),
    "copy_": lambda v, d: v.copy_(torch.arange(9.0, device=d).reshape(3, 3)),
    "mul_out": lambda v, d: torch.mul(torch.arange(9.0, device=d).reshape(3, 3), 2, out=v),
    "clamp_": lambda v, d: v.clamp_(min=2.0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(WRITES))
@pytest.mark.parametrize("strides", [(1, 1), (1, 2)])
def test_overlapping_view_write_refused_memory_kept(name: str, strides: tuple[int, int], mode: str) -> None:
    cpu = torch.arange(16.0)
    WRITES[name](cpu.as_strided((3, 3), strides), "cpu")  # CPU computes (its loop order decides)
    base = torch.arange(16.0, device="tpu")
    with torch.tpu.eager_mode(mode):
        for _ in range(3):  # again, once a launch of the op is cached
            with pytest.raises(RuntimeError, match=r"overlap in memory \(strides \[1, \d\].*clone\(\)"):
                WRITES[name](base.as_strided((3, 3), strides), "tpu")
                torch.tpu.synchronize()
    assert torch.equal(base.cpu(), torch.arange(16.0))


COMPUTED = {  # fill_/zero_ store one value through every alias; the other views do not overlap
    "fill_overlapping": (lambda v: v.fill_(3.0), (3, 3), (1, 1)),
    "zero_overlapping": (lambda v: v.zero_(), (3, 3), (1, 2)),
    "add_gappy": (lambda v: v.add_(1), (3, 2), (2, 3)),
    "mul_self_transposed": (lambda v: v.mul_(v), (3, 3), (1, 3)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(COMPUTED))
def test_order_free_or_nonoverlapping_writes_equal_cpu(name: str, mode: str) -> None:
    write, shape, strides = COMPUTED[name]
    cpu = torch.arange(16.0)
    write(cpu.as_strided(shape, strides))
    tpu = torch.arange(16.0, device="tpu")
    with torch.tpu.eager_mode(mode):
        write(tpu.as_strided(shape, strides))
    assert torch.equal(tpu.cpu(), cpu)


def test_self_overlapping_exact_on_small_views() -> None:
    """Against the count of distinct offsets, every size/stride mix up to 3 dims of sizes 1-3 and strides 0-5."""
    for ndim in (1, 2, 3):
        for shape in itertools.product((1, 2, 3), repeat=ndim):
            for strides in itertools.product(range(6), repeat=ndim):
                offsets = {sum(i * s for i, s in zip(idx, strides)) for idx in itertools.product(*map(range, shape))}
                numel = 1
                for n in shape:
                    numel *= n
                assert self_overlapping(shape, strides) == (len(offsets) < numel), (shape, strides)


def test_self_overlapping_unknown_beyond_limit_counts_as_overlapping() -> None:
    assert self_overlapping((3, 2048), (2, 3), exact_limit=16)  # not proved free by strides, too many to count
    assert not self_overlapping((3, 2048), (2048, 1), exact_limit=16)  # proved without counting
    assert not self_overlapping((0, 5), (0, 0)) and not self_overlapping((1, 1), (0, 0))
