"""ATen's operand checks that torchtpu's lowerings skipped (issue 17, fuzzer seed 2): each silently accepted
input CPU refuses. Called from the lowerings while tracing (shapes, dtypes and static scalars), so every eager
mode and a compiled graph make them alike; `data_check` makes a check on values when the program runs.

Words and exception classes as ATen's: where_self_out (TensorCompare.cpp), fill_out / masked_fill__cpu
(Fill.cpp, TensorAdvancedIndexing.cpp), put_, histc_select_outer_bin_edges and histogramdd_check_inputs /
select_outer_bin_edges (Histogram.cpp), channel_shuffle (ChanShuffle.cpp), multinomial (Distributions.cpp),
segment_reduce's lengths checks and its CPU kernel's segment_length >= 0 (SegmentReduce.cpp, checked when the
program runs), _pdist_forward's contiguous input (a `prepare` step: the lowering sees no strides).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.tracing import Sym, aten_meta_name, aten_type_name


def _g(value: float) -> str:
    """A double as C++'s `<<` prints it (6 significant digits)."""
    return format(float(value), "g")


def check_where_condition(condition: Sym) -> None:
    """where: a bool condition (uint8 still accepted, with ATen's deprecation warning)."""
    if condition.dtype not in (torch.bool, torch.uint8):
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{aten_type_name(condition.dtype)}")


def check_fill_value(value: Any) -> None:
    """fill_ with a value tensor: 0-dim only."""
    if isinstance(value, Sym) and value.ndim != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                           "dimensions.")


def check_masked_fill_value(value: Any) -> None:
    """masked_fill_ with a value tensor: 0-dim only."""
    if isinstance(value, Sym) and value.ndim != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")


def check_masked_fill_mask(mask: Sym) -> None:
    """masked_fill_impl_cpu: a bool mask only (uint8 masks are refused since torch 2.2), before the iterator's
    shape check; in its TypeMeta name ("unsigned char")."""
    if mask.dtype != torch.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{aten_meta_name(mask.dtype)}")


def check_put(self: Sym, index: Sym, source: Sym) -> None:
    """put_: a long index, source of self's dtype, as many source elements as indices."""
    if index.dtype != torch.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {aten_type_name(index.dtype)}")
    if self.dtype != source.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{aten_type_name(self.dtype)} and source.dtype = {aten_type_name(source.dtype)}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")


def check_histc_range(lo: float, hi: float) -> None:
    """histc's given range (min == max takes the data's range, not checked here)."""
    if lo != hi:
        _histc_finite_ordered(lo, hi)


def _histc_finite_ordered(lo: float, hi: float) -> None:
    if any(v != v or v in (float("inf"), float("-inf")) for v in (lo, hi)):
        raise RuntimeError(f"torch.histc: range of [{_g(lo)}, {_g(hi)}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")


def _widened(dtype: torch.dtype, lo: float, hi: float) -> tuple[float, float]:
    """ATen's bins_edges_correction of an empty range: float and double take the farther of the next value of the
    type and -+1 (inf: the type's largest finite value), other types -+1."""
    if dtype not in (torch.float32, torch.float64):
        return lo - 1, hi + 1
    import numpy as np

    t = np.float32 if dtype == torch.float32 else np.float64
    with np.errstate(over="ignore"):
        below = float(np.nextafter(t(lo), t(np.finfo(t).min)))
        above = float(np.nextafter(t(hi), t(np.finfo(t).max)))
    return min(below, lo - 1), max(above, hi + 1)


def check_histc_edges(self: Sym, lo: float, hi: float) -> Sym:
    """histc's linspace of its outer edges into a tensor of the input's dtype (c10's checked conversion: a uint8
    input with min=-1 refuses), after check_histc_range; returns the zero to `tie` the result to. With min == max
    the edges are the data's own range, one value v widened to v - 1 and v + 1 (checked when the program runs);
    with no data, min - 1 and max + 1."""
    from torchtpu.dtypes import _C_NAMES, checked_scalar

    if lo == hi and self.numel() == 0:
        lo, hi = _widened(self.dtype, lo, hi)
        _histc_finite_ordered(lo, hi)
    if lo != hi:
        checked_scalar(lo, self.dtype)
        checked_scalar(hi, self.dtype)
    elif self.dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.float16):  # others: v +- 1 fits
        info = torch.finfo(self.dtype) if self.dtype.is_floating_point else torch.iinfo(self.dtype)
        x = P.convert(P.reshape(self, (-1,)), torch.float64)
        low, high = P.reduce(x, "min", (0,)), P.reduce(x, "max", (0,))
        bad = P.emit1("and", [P.compare("EQ", low, high), P.emit1("or", [P.compare("LT", low - 1.0, float(info.min)),
                                                                            P.compare("GT", high + 1.0,
                                                                                      float(info.max))])])
        return data_check(bad, f"value cannot be converted to type {_C_NAMES[self.dtype]} without overflow")
    return P.const(0, torch.int64)


def _histogramdd_rank(self: Sym) -> None:
    if self.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")


def _histogramdd_outer_edges(self: Sym, rng: Sequence[float] | None, bin_counts: Sequence[int]) -> None:
    """histogramdd_bin_edges_out: select_outer_bin_edges' given range (the data's own range is checked by a
    `prepare` step: it needs the values), then the bin counts' count, then linspace's steps (a count + 1)."""
    n = self.shape[-1]
    if rng is not None:
        if len(rng) != 2 * n:
            raise RuntimeError(f"torch.histogramdd: for a {n}-dimensional histogram range should have {2 * n} "
                               f"elements, but got {len(rng)}")
        for d in range(n):
            lo, hi = float(rng[2 * d]), float(rng[2 * d + 1])
            if any(v != v or v in (float("inf"), float("-inf")) for v in (lo, hi)):
                raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{_g(lo)}, {_g(hi)}] is not finite")
            if not lo <= hi:
                raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_g(lo)} max {_g(hi)} "
                                   f"for dimension {d}")
    if len(bin_counts) != n:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if any(ct + 1 < 0 for ct in bin_counts):
        raise RuntimeError("number of steps must be non-negative")


def _histogramdd_inputs(self: Sym, edges: Sequence[tuple[torch.dtype, int, int]], weight: Sym | None) -> None:
    """histogramdd_check_inputs after the rank: the bin edge tensors (dtype, rank, element count; `edges` as
    such triples), then the weight's dtype and shape."""
    n = self.shape[-1]
    if len(edges) != n:
        raise RuntimeError(f"torch.histogramdd: expected {n} sequences of bin edges for a {n}-dimensional histogram "
                           f"but got {len(edges)}")
    for d, (dtype, ndim, numel) in enumerate(edges):
        if dtype != self.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                               f"input with dtype {aten_meta_name(self.dtype)} and bins for dimension {d} with dtype "
                               f"{aten_meta_name(dtype)}")
        if ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {ndim} dimensions "
                               f"in the bins tensor for dimension {d}")
        if numel <= 0:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have at least 1 element, but got {numel} "
                               f"elements in the bins tensor for dimension {d}")
    if weight is None:
        return
    if weight.dtype != self.dtype:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                           f"have the same dtype, but got input({aten_meta_name(self.dtype)}), and "
                           f"weight({aten_meta_name(weight.dtype)})")
    if (list(weight.shape) or [1]) != list(self.shape[:-1]):  # a 0-d weight counts as [1] (fuzz seed 75)
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{list(self.shape)} and weight with shape {list(weight.shape)}")


def _histogramdd_bin_counts(counts: Sequence[int]) -> None:  # histogramdd_prepare_out
    for d, ct in enumerate(counts):
        if ct <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {ct} for dimension {d}")


def check_histogramdd_bin_edges(self: Sym, bin_counts: Sequence[int], rng: Sequence[float] | None) -> None:
    """_histogramdd_bin_edges: the rank, then histogramdd_bin_edges_out's checks (no weight, any bin count >= -1)."""
    _histogramdd_rank(self)
    _histogramdd_outer_edges(self, rng, bin_counts)


def check_histogramdd_bin_cts(self: Sym, bin_counts: Sequence[int], rng: Sequence[float] | None,
                              weight: Sym | None) -> None:
    """_histogramdd_from_bin_cts: the bin edges' checks, then histogramdd_check_inputs on the edges it made
    (count + 1 elements each) and the weight, then the bin counts."""
    check_histogramdd_bin_edges(self, bin_counts, rng)
    _histogramdd_inputs(self, [(self.dtype, 1, ct + 1) for ct in bin_counts], weight)
    _histogramdd_bin_counts(bin_counts)


def check_histogramdd_bin_tensors(self: Sym, bins: Sequence[Sym], weight: Sym | None) -> None:
    """_histogramdd_from_bin_tensors: the rank, histogramdd_check_inputs, then the bin counts."""
    _histogramdd_rank(self)
    _histogramdd_inputs(self, [(b.dtype, b.ndim, b.numel()) for b in bins], weight)
    _histogramdd_bin_counts([b.numel() - 1 for b in bins])


def check_channel_shuffle(self: Sym, groups: int) -> None:
    """channel_shuffle: > 2 dims, groups > 0 dividing the channels."""
    if self.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(self.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if self.shape[1] % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {self.shape[1]} channels and "
                           f"{groups} groups.")


def pdist_contiguous(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """_pdist_forward's `prepare` step: CPU refuses a non-contiguous input (the lowering sees no strides)."""
    if not args[0].is_contiguous():
        raise RuntimeError("_pdist_forward requires contiguous input")
    return args, kwargs


def segment_lengths_check(lens: Sym, lengths_given: bool, unsafe: bool, axis_size: int) -> Sym:
    """segment_reduce's checks on the segment lengths (lengths, or offsets' differences) when the program runs:
    with lengths and not `unsafe`, segment_reduce_kernel's (no negative length, each row summing to the data's
    size along axis); then the CPU kernel's own segment_length >= 0. Returns the zero to `tie` the result to."""
    zero = P.const(0, torch.int64)
    if lens.numel() == 0:
        return zero
    negative = P.compare("LT", lens, P.broadcast_to(P.const(0, torch.int64), lens.shape))
    if lengths_given and not unsafe:
        zero = zero + data_check(negative, "lengths contains negative value!")
        sums = P.reduce(lens, "sum", (lens.ndim - 1,))
        zero = zero + data_check(P.compare("NE", sums, P.broadcast_to(P.const(axis_size, torch.int64), sums.shape)),
                                 "segment_reduce(): Expected all rows of lengths along axis to sum to "
                                 "data.size(lengths.dim()-1) when !unsafe.")
    return zero + data_check(negative, "Expected segment_length >= 0 to be true, but got false.  (Could this error "
                                       "message be improved?  If so, please report an enhancement request to "
                                       "PyTorch.)")


def data_check(bad: Sym, message: str) -> Sym:
    """A RuntimeError with `message` when the program runs and `bad` (bool, any shape) holds anywhere; returns
    a 0-d int64 zero that the caller adds to its result, so the check stays in the program before it."""
    flag = P.convert(bad, torch.int64)
    if flag.ndim:
        flag = P.reduce(flag, "max", tuple(range(flag.ndim)))
    checked = P.check_index(P.reshape(flag, (1,)), 1, message.replace("{", "{{").replace("}", "}}"),
                            error="RuntimeError")
    return P.reshape(checked, ())


def tie(result: Sym, zero: Sym) -> Sym:
    """`result` after the check that gave `zero` (0-d int64 zero): result + 0 in result's dtype."""
    return result + P.broadcast_to(P.convert(zero, result.dtype), result.shape)


def check_multinomial(probs: Sym, replacement: bool, num_samples: int) -> Sym:
    """multinomial's checks on the probabilities (2-D, float): the fast path's (no replacement, or one sample)
    or the kernel's per-entry ones; returns the zero to `tie` the samples to."""
    if probs.numel() == 0:
        return P.const(0, torch.int64)
    neg = P.emit1("not", [P.compare("GE", probs, 0.0)])  # also NaN
    inf = P.compare("EQ", P.emit1("abs", [probs]), float("inf"))
    rows = P.reduce(probs, "sum", (1,))
    if not replacement or num_samples == 1:
        zero = data_check(P.emit1("or", [neg, inf]), "probability tensor contains either `inf`, `nan` or element < 0")
        return zero + data_check(P.compare("EQ", rows, 0.0), "invalid multinomial distribution (sum of probabilities "
                                                             "<= 0)")
    nan = P.compare("NE", probs, probs)
    zero = data_check(P.emit1("and", [neg, P.emit1("not", [nan])]),
                      "invalid multinomial distribution (encountering probability entry < 0)")
    zero = zero + data_check(P.emit1("or", [inf, nan]),
                             "invalid multinomial distribution (encountering probability entry = infinity or NaN)")
    return zero + data_check(P.compare("LE", rows, 0.0),
                             "invalid multinomial distribution (sum of probabilities <= 0)")
