"""ATen's input/output memory-overlap checks (ATen/MemoryOverlap.cpp) for the eager in-place and out= calls.

ATen refuses a call whose written tensor *partially* overlaps one of its inputs (TensorIterator's
assert_no_partial_overlap: same storage, overlapping byte ranges, not the very same view), and, for the indexing
writes (index_add_, index_copy_, put_, scatter_...), any overlap at all (assert_no_overlap) between the written
tensor and its index or source. A partial overlap has no defined result: on tpu the program reads its inputs
before it writes, so such a call would silently differ from CPU's; it raises CPU's RuntimeError instead. This
holds for every in-place and out= call, also those of the ops whose CPU kernel does not check (reductions, mm,
matmul with a partially overlapping out=): CPU then returns what its loop order happened to leave, which tpu cannot
reproduce, so tpu refuses rather than return different values. The C++
launch cache (csrc/fast_launch.cpp) never serves a call whose written tensor shares memory with an input, so
these checks see every such call.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import Any

import numpy as np
import torch

from torchtpu.execution import out_layout
from torchtpu.execution.eager import overlaps_itself

OVERLAP_MESSAGE = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                   "single memory location. Please clone() the tensor before performing the operation.")


class Overlap(Enum):
    """ATen's MemOverlapStatus."""
    NO = 0
    FULL = 1
    PARTIAL = 2
    TOO_HARD = 3


# the ops ATen checks with assert_no_overlap (any overlap, not only a partial one) between the written tensor and
# its other tensor arguments (by base name: "index_add" for aten::index_add_ / index_add.out)
NO_OVERLAP_OPS = frozenset({"index_add", "index_copy", "index_fill", "put", "index_put", "_index_put_impl",
                            "masked_fill", "masked_scatter", "scatter", "scatter_add", "scatter_reduce",
                            "index_reduce"})


def _dense(t: torch.Tensor) -> bool:
    """c10's is_non_overlapping_and_dense."""
    return t.is_contiguous() or out_layout.dense(t.shape, t.stride())


def overlap_status(a: torch.Tensor, b: torch.Tensor) -> Overlap:
    """ATen's get_overlap_status(a, b)."""
    if a is b:
        return Overlap.FULL
    if a.numel() == 0 or b.numel() == 0:
        return Overlap.NO
    if not _dense(a) or not _dense(b):
        return Overlap.TOO_HARD
    if a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return Overlap.NO
    a_begin, b_begin = a.data_ptr(), b.data_ptr()
    a_end, b_end = a_begin + a.numel() * a.element_size(), b_begin + b.numel() * b.element_size()
    if a_begin == b_begin and a_end == b_end:
        return Overlap.FULL if a.stride() == b.stride() else Overlap.PARTIAL
    if a_begin < b_end and b_begin < a_end:
        return Overlap.PARTIAL
    return Overlap.NO


def self_overlapping(shape: Sequence[int], strides: Sequence[int], exact_limit: int = 1 << 22) -> bool:
    """Whether two elements of a view with these sizes and strides share a memory location (an `as_strided`
    window, an expanded dim). With the dims sorted by stride, each stride past the span of the smaller ones proves
    there is none; where that proof fails the element offsets are counted, up to `exact_limit` elements (beyond
    it the answer is True: unknown counts as overlapping)."""
    dims = sorted((abs(s), n) for s, n in zip(strides, shape) if n != 1)
    if 0 in shape or not dims:
        return False
    span = 0
    for s, n in dims:
        if s <= span:
            break
        span += s * (n - 1)
    else:
        return False
    numel = int(np.prod([n for _, n in dims]))
    if numel > exact_limit or any(s == 0 for s, _ in dims):
        return True
    offsets = np.zeros(1, np.int64)
    for s, n in dims:
        offsets = (offsets[:, None] + s * np.arange(n, dtype=np.int64)).reshape(-1)
    return np.unique(offsets).size < numel


# the in-place ops whose every write through an overlapping view stores one value (any order gives CPU's result)
_ORDER_FREE_WRITES = frozenset({"fill", "zero"})
LOOP_ORDER_MESSAGE = ("{op}: the written-to tensor is a view whose elements overlap in memory (strides {strides} "
                      "for sizes {sizes}); CPU writes it element by element, so its result depends on CPU's loop "
                      "order, which tpu does not reproduce. Please clone() the tensor before performing the "
                      "operation.")


def refuse_loop_order_overlap(op_name: str, written: Sequence[torch.Tensor]) -> None:
    """Raises where a written tensor overlaps itself in a way ATen's has_internal_overlap does not detect (no
    stride-0 dim: its TOO_HARD, which CPU lets through and writes in loop order): tpu computes every value before
    writing any, so its result there would differ from CPU's without a word. fill_ and zero_ store one value and
    are let through; an expanded (stride-0) view keeps ATen's own checks and handling."""
    if base_name(op_name) in _ORDER_FREE_WRITES:
        return
    for t in written:
        if t.is_contiguous() or any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride())):
            continue
        if self_overlapping(t.shape, t.stride()):
            raise RuntimeError(LOOP_ORDER_MESSAGE.format(op=op_name, strides=list(t.stride()), sizes=list(t.shape)))


def _tensors(values: Iterable[Any]) -> list[torch.Tensor]:
    found = []
    for v in values:
        if isinstance(v, torch.Tensor):
            found.append(v)
        elif isinstance(v, list | tuple):
            found.extend(x for x in v if isinstance(x, torch.Tensor))
    return found


def base_name(op_name: str) -> str:
    """"index_add" for "aten::index_add_", "aten.index_add.out", "index_add_"."""
    name = op_name.split("::")[-1]
    parts = name.split(".")
    return parts[min(1, len(parts) - 1)].rstrip("_") if name.startswith("aten.") else parts[0].rstrip("_")


# the in-place ops ATen lets write an expanded view, with a deprecation warning (what the warning's example names)
_EXPANDED_WARNINGS = {"index_fill": ("index_fill_", "tensor[mask] = scalar"),
                      "masked_fill": ("masked_fill_", "tensor[mask] = scalar"),
                      "index_put": ("index_put_", "tensor[indices] = tensor"),
                      "_index_put_impl": ("index_put_", "tensor[indices] = tensor")}


def refuse_overlap(op_name: str, written: Sequence[torch.Tensor], args: Sequence[Any], kwargs: dict[str, Any],
                   in_place: bool) -> None:
    """Raises CPU's RuntimeError where ATen would for `op_name` writing `written` while reading `args`/`kwargs`:
    a partial overlap always; any overlap for NO_OVERLAP_OPS. `in_place`: `written` is the first argument's
    tensors (not compared with themselves at their own position)."""
    name = base_name(op_name)
    refuse_loop_order_overlap(op_name, written)
    if in_place and name in _EXPANDED_WARNINGS and written and overlaps_itself(written[0]):
        op, example = _EXPANDED_WARNINGS[name]
        warnings.warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor before performing "
                      f"this operation. This also applies to advanced indexing e.g. {example}", UserWarning,
                      stacklevel=2)
    inputs = _tensors((*args, *kwargs.values()))
    if not inputs:
        return
    strict = name in NO_OVERLAP_OPS
    for j, out in enumerate(written):
        for i, t in enumerate(inputs):
            if in_place and i == j and t is out:
                continue
            status = overlap_status(out, t)
            if status is Overlap.PARTIAL or (strict and status is Overlap.FULL):
                raise RuntimeError(OVERLAP_MESSAGE)
