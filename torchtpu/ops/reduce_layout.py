"""CPU's reduction iterator layout, where a result depends on it: ATen's sum_out sums a float16/bfloat16 result
from float32 without first casting each element to the result dtype (should_use_acc_buffer, pytorch#83149) when
its TensorIterator, after moving the reduced dims first (ordered by the input's strides) and coalescing, keeps two
reduced dims innermost. Which layouts do depends on the strides of the input the iterator sees (the input itself,
or `self.to(result dtype)` where the dtypes differ: dense strides in the input's order), so the lowering gets the
strides of a non-contiguous input (a static keyword argument; a contiguous one needs none)."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops.iterator_order import reorder_dimensions


def two_reduced_innermost(shape: tuple[int, ...], strides: tuple[int, ...], dims: tuple[int, ...]) -> bool:
    """Whether CPU's reduction iterator over an input of `shape` and `strides`, reducing `dims` into a fresh
    output, has two or more dims after coalescing and output stride 0 in its first two (should_use_acc_buffer's
    layout test)."""
    nd = len(shape)
    out, size = [0] * nd, 1
    for d in reversed(range(nd)):  # the output's contiguous strides, 0 in a reduced dim (review_reduce_result)
        out[d] = 0 if d in dims else size
        size *= 1 if d in dims else shape[d]
    ops = [out, list(strides)]
    perm = reorder_dimensions(shape, ops, reduction=True)
    sh = [shape[p] for p in perm]
    st = [[s[p] for p in perm] for s in ops]
    count = nd
    if nd > 1:  # TensorIteratorBase::coalesce_dimensions
        prev = 0
        for d in range(1, nd):
            if sh[prev] == 1 or sh[d] == 1 or all(sh[prev] * s[prev] == s[d] for s in st):
                if sh[prev] == 1:
                    for s in st:
                        s[prev] = s[d]
                sh[prev] *= sh[d]
            else:
                prev += 1
                if prev != d:
                    for s in st:
                        s[prev] = s[d]
                    sh[prev] = sh[d]
        count = prev + 1
    return count >= 2 and st[0][0] == 0 and st[0][1] == 0


def iterated_strides(shape: tuple[int, ...], strides: tuple[int, ...] | None, dtype: torch.dtype,
                     result: torch.dtype) -> tuple[int, ...]:
    """The strides of the input CPU's reduction iterates: `strides` (None: contiguous), or those of
    `self.to(result)` where the dtypes differ (preserve_format: dense strides in the input's order)."""
    if strides is None:
        dense, size = [], 1
        for n in reversed(shape):
            dense.insert(0, size)
            size *= max(n, 1)
        return tuple(dense)
    if dtype == result:
        return strides
    return torch.empty_strided(shape, strides, dtype=dtype, device="meta").to(result).stride()


def self_strides(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """A lowering's prepare step: `_strides` for a non-contiguous real self reduced over two or more dims of size
    > 1 (only then can the layout change the iterator's split); arguments unchanged otherwise."""
    x = args[0]
    if not isinstance(x, torch.Tensor) or x.is_complex() or x.is_contiguous():
        return args, kwargs
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    nd = x.dim()
    dims = range(nd) if not dim else [d % nd for d in ([dim] if isinstance(dim, int) else dim)] if nd else []
    if sum(1 for d in set(dims) if x.shape[d] > 1) < 2:
        return args, kwargs
    return args, {**kwargs, "_strides": tuple(int(s) for s in x.stride())}
