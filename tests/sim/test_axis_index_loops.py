"""drivers/sim/axis_index_loops.py: the compiled gather copies what `np.take_along_axis` gives, and the compiled
adding scatter gives `np.add.at`'s bits (the sim kernels' former computation) on every axis, with duplicate
indices, NaN payloads, infinities and signed zeros; both decline what they do not cover; and the IR ops reach
them in the eager and compiled paths alike."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_index_add_rows import _specials
from torchtpu.drivers.sim.axis_index_loops import gather, scatter_add

SHAPES = [((8, 6, 5), 2, 9), ((8, 6, 5), 0, 3), ((4, 7), 1, 20), ((33,), 0, 50), ((2, 3, 4, 5), 1, 4)]


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view({1: np.uint8, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("shape,dim,m", [s for s in SHAPES if len(s[0]) > 1])
def test_scatter_add_has_add_at_bits(dtype: type, shape: tuple[int, ...], dim: int, m: int) -> None:
    rng = np.random.default_rng(1)
    dtype = np.dtype(dtype)
    index_shape = shape[:dim] + (m,) + shape[dim + 1:]
    index = rng.integers(-shape[dim], shape[dim], index_shape)  # negatives wrap
    index.reshape(-1)[: index.size // 2] = index.reshape(-1)[0]  # many duplicates of one target
    if dtype.kind == "f":
        x, src = _specials(rng, shape, dtype), _specials(rng, index_shape, dtype)
    else:
        x = rng.integers(-(2**30), 2**30, shape).astype(dtype)
        src = rng.integers(-(2**30), 2**30, index_shape).astype(dtype)  # int32 sums wrap, as in np.add.at
    want = x.copy()
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    np.add.at(want, tuple(grids), src)
    got = scatter_add(x, index, src, dim)
    assert got is not None and got.flags.c_contiguous and not np.shares_memory(got, x)
    assert np.array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.int8])
@pytest.mark.parametrize("shape,dim,m", SHAPES)
def test_gather_copies_take_along_axis(dtype: type, shape: tuple[int, ...], dim: int, m: int) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dtype)
    index = rng.integers(-shape[dim], shape[dim], shape[:dim] + (m,) + shape[dim + 1:])  # negatives wrap
    got = gather(x, index, dim)
    assert got is not None and got.flags.c_contiguous
    assert np.array_equal(_bits(got), _bits(np.take_along_axis(x, np.where(index < 0, index + shape[dim], index),
                                                                  dim)))


def test_both_decline_what_they_do_not_cover() -> None:
    x, index = np.zeros((4, 3), np.float32), np.zeros((2, 3), np.int64)
    assert gather(x, index + 4, 0) is None and gather(x, index - 5, 0) is None  # out of range: numpy's error
    assert gather(x, np.zeros((2, 2), np.int64), 0) is None  # does not span the other axis
    assert gather(x.astype(np.float16), index, 0) is None
    assert scatter_add(x, index + 4, np.ones((2, 3), np.float32), 0) is None
    assert scatter_add(x, index, np.ones((2, 3), np.float64), 0) is None  # mixed dtypes
    assert scatter_add(x, index, np.ones((1, 3), np.float32), 0) is None  # src not of the index's shape
    assert scatter_add(x.astype(np.float16), index, np.ones((2, 3), np.float16), 0) is None
    assert scatter_add(np.zeros(4, np.float32), np.zeros(2, np.int64), np.ones(2, np.float32), 0) is None


def test_gather_and_its_backward_match_cpu_in_eager_and_compiled_runs(tpu) -> None:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 16, 8, generator=g)
    index = torch.randint(0, 8, (4, 16, 32), generator=g)

    def f(a: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return (torch.gather(a, 2, i) * torch.arange(32, dtype=a.dtype, device=a.device)).sum()

    xc = x.clone().requires_grad_()
    want = f(xc, index)
    want.backward()
    results = []
    for fn in (f, torch.compile(f, backend="tpu", fullgraph=True)):
        xt = x.to(tpu).requires_grad_()
        loss = fn(xt, index.to(tpu))
        loss.backward()
        results.append((loss.detach().cpu(), xt.grad.cpu()))
    for loss, grad in results:
        torch.testing.assert_close(loss, want.detach())
        assert torch.equal(grad, xc.grad)  # sums of small integers (the arange): exact in any order
    assert torch.equal(results[0][1], results[1][1])


def test_gather_reads_a_read_only_source() -> None:
    """A plan's folded constants and some views are read-only: the gather only reads its source."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    x.flags.writeable = False
    got = gather(x, np.array([[3, 0, 1]]), 0)
    assert got is not None and got.tolist() == [[9.0, 1.0, 5.0]]
