"""Lowerings of embedding_bag (sum / mean / max bags, per-sample weights, padding_idx, include_last_offset) and
its backward ops. Bags are segments of a flat index list; each index finds its bag by counting offsets."""

from __future__ import annotations

import torch

from torchtpu.ops import backward_checks, operand_checks
from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _bags(indices: Sym, offsets: Sym, include_last_offset: bool) -> tuple[Sym, int]:
    """(bag id of each index position, number of bags)."""
    n = indices.shape[0]
    nb = offsets.shape[0] - (1 if include_last_offset else 0)
    if n == 0 or nb <= 0:
        return P.full(0, (n,), torch.int64), max(nb, 0)
    offs = P.convert(P.slice_dim(offsets, 0, 0, nb), torch.int64)
    pos = P.iota((n, nb), 0)
    started = P.compare("LE", P.broadcast_to(P.reshape(offs, (1, nb)), (n, nb)), pos)
    bag = P.reduce(P.convert(started, torch.int64), "sum", (1,)) - 1
    return P.emit1("maximum", [bag, P.zeros_like(bag)]), nb


def _valid(indices: Sym, padding_idx: int) -> Sym:
    return P.compare("NE", indices, padding_idx) if padding_idx >= 0 else P.full(True, indices.shape, torch.bool)


def _acc(x: Sym) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _offsets_checked(offsets: Sym, n: int, include_last_offset: bool) -> Sym:
    """check_arguments' data checks (its shape and type checks: ops/cpu_raise_checks3.py): offsets[0] is 0 and
    offsets[-1] at most the number of indices; a 0-d int64 zero to tie the results to. With include_last_offset,
    then, offsets[-1] must be the number of indices (fail closed): below it, the indices past it are in no bag by
    the documented rule, and CPU follows no single one (sum stops the last bag at offsets[-1], mean divides that
    sum by the count to the end, max takes the bag to the end; its backward reads grad past its end for them)."""
    k = offsets.shape[0]
    if k == 0:
        return P.const(0, torch.int64)
    off = P.convert(offsets, torch.int64)
    first = P.check_index(P.slice_dim(off, 0, 0, 1), 1, "offsets[0] has to be 0, i.e., the first sequence in the "
                          "mini-batch has to start from position 0. However, got {}", error="RuntimeError")
    last = P.emit1("maximum", [P.slice_dim(off, 0, k - 1, k), P.full(0, (1,), torch.int64)])  # only > n fails
    last = P.check_index(last, n + 1, f"offsets[-1] can not be greater than input's length {n} but got "
                         f"offsets[-1] of {{}}", error="RuntimeError")
    if include_last_offset and k > 1:  # no bags (offsets [0]): an empty result whatever offsets[-1] is
        short = P.emit1("maximum", [P.full(n, (1,), torch.int64) - last, P.full(0, (1,), torch.int64)])
        short = P.check_index(short, 1, f"_embedding_bag: include_last_offset=True needs offsets[-1] equal to the "
                              f"number of indices ({n}); it is {{}} less, leaving the last indices in no bag, where "
                              "CPU's sum, mean and max modes disagree (and its backward reads past grad), so tpu "
                              "refuses it: make offsets[-1] the number of indices, or drop the indices past it",
                              error="RuntimeError")
        last = last + short
    return P.reshape((first + last) * 0, ())


def _embedding_bag(weight: Sym, indices: Sym, offsets: Sym, scale_grad_by_freq: bool = False, mode: int = 0,
                   sparse: bool = False, per_sample_weights: Sym | None = None, include_last_offset: bool = False,
                   padding_idx: int = -1) -> tuple[Sym, Sym, Sym, Sym]:
    if indices.ndim == 2:  # fail closed (fuzz seed 61): no consistent rule to match
        raise NotImplementedError("_embedding_bag: 2-D indices are refused on the tpu: CPU's kernel checks offsets "
                                  "against their first dim but reads their elements flat (F.embedding_bag flattens "
                                  "2-D input itself); pass 1-D indices with offsets")
    zero = _offsets_checked(offsets, indices.shape[0], include_last_offset)
    out, bag, count, max_idx = _embedding_bag_unchecked(weight, indices, offsets, mode, per_sample_weights,
                                                        include_last_offset, padding_idx)
    ok = P.broadcast_to(P.compare("EQ", zero, 0), out.shape)
    return (P.where(ok, out, out), operand_checks.tie(bag, zero), operand_checks.tie(count, zero),
            operand_checks.tie(max_idx, zero))


def _embedding_bag_unchecked(weight: Sym, indices: Sym, offsets: Sym, mode: int, per_sample_weights: Sym | None,
                             include_last_offset: bool, padding_idx: int) -> tuple[Sym, Sym, Sym, Sym]:
    rows_in = weight.shape[0]
    idx = P.check_index(P.convert(indices, torch.int64), rows_in,
                        f"embedding_bag(): index {{}} is not in the valid range [0, {rows_in})", error="RuntimeError")
    n, d = idx.shape[0], weight.shape[1]
    bag, nb = _bags(idx, offsets, include_last_offset)
    valid = _valid(idx, padding_idx)
    acc = _acc(weight)
    count = P.emit1("index_add", [P.full(0, (nb,), torch.int64), bag, P.convert(valid, torch.int64)], dimension=0) \
        if n and nb else P.full(0, (nb,), torch.int64)
    if n == 0 or nb == 0:
        zero = P.full(0, (nb, d), weight.dtype)
        return zero, bag, count, P.full(0, (nb, d) if mode == 2 else (nb,), torch.int64)
    safe = P.where(valid, idx, P.zeros_like(idx))
    rows = P.convert(P.emit1("index_select", [weight, safe], dimension=0), acc)  # (n, d)
    keep = P.broadcast_to(P.reshape(valid, (n, 1)), (n, d))
    if mode == 2:  # max
        cand = P.where(keep, rows, P.full(float("-inf"), (n, d), acc))
        onehot = P.compare("EQ", P.broadcast_to(P.reshape(bag, (n, 1, 1)), (n, nb, d)), P.iota((n, nb, d), 1))
        table = P.where(onehot, P.broadcast_to(P.reshape(cand, (n, 1, d)), (n, nb, d)),
                        P.full(float("-inf"), (n, nb, d), acc))
        best = P.emit1("argreduce", [table], kind="max", dimension=0)  # (nb, d): which position
        out = P.reduce(table, "max", (0,))
        empty = P.broadcast_to(P.reshape(P.compare("EQ", count, 0), (nb, 1)), (nb, d))
        out = P.where(empty, P.zeros_like(out), out)
        which = P.emit1("index_select", [safe, P.reshape(best, (-1,))], dimension=0)
        max_idx = P.where(empty, P.full(-1, (nb, d), torch.int64), P.reshape(which, (nb, d)))
        return P.convert(out, weight.dtype), bag, count, max_idx
    if per_sample_weights is not None:
        rows = rows * P.broadcast_to(P.reshape(P.convert(per_sample_weights, acc), (n, 1)), (n, d))
    rows = P.where(keep, rows, P.zeros_like(rows))
    out = P.emit1("index_add", [P.full(0.0, (nb, d), acc), bag, rows], dimension=0)
    if mode == 1:
        denom = P.convert(P.emit1("maximum", [count, P.full(1, (nb,), torch.int64)]), acc)
        out = out / P.broadcast_to(P.reshape(denom, (nb, 1)), (nb, d))
    return P.convert(out, weight.dtype), bag, count, P.full(0, (nb,), torch.int64)


lower(aten._embedding_bag.default, aten._embedding_bag_forward_only.default)(_embedding_bag)


def _offset2bag(offsets: Sym, n: int) -> Sym:
    """_embedding_bag_backward's own offset2bag where it is given none (make_offset2bag): index_add_ of ones at the
    offsets into n + 1 zeros (an offset outside [0, n] raises there), minus 1 at 0, the cumulative sum, the first n:
    element i is the count of offsets <= i, minus 1, in any order of the offsets."""
    offs = P.check_index(P.convert(P.reshape(offsets, (-1,)), torch.int64), n + 1, "index out of range in self")
    m = offs.shape[0]
    at_or_before = P.compare("LE", P.broadcast_to(P.reshape(offs, (1, m)), (n, m)), P.iota((n, m), 0))
    return P.reduce(P.convert(at_or_before, torch.int64), "sum", (1,), False) - P.full(1, (n,), torch.int64)


@lower(aten._embedding_bag_backward.default)
def embedding_bag_backward(grad: Sym, indices: Sym, offsets: Sym | None, offset2bag: Sym, bag_size: Sym,
                           maximum_indices: Sym, num_weights: int, scale_grad_by_freq: bool, mode: int,
                           sparse: bool = False, per_sample_weights: Sym | None = None, padding_idx: int = -1
                           ) -> Sym:
    idx = P.convert(indices, torch.int64)
    n = idx.shape[0]
    nb, d = grad.shape
    acc = _acc(grad)
    g = P.convert(grad, acc)
    out = P.full(0.0, (num_weights, d), acc)
    if n == 0 or nb == 0:
        return P.convert(out, grad.dtype)
    # given no offset2bag, the op makes one (its offsets' range checked in every mode, max's included)
    made = _offset2bag(offsets, n) if offsets is not None and offset2bag.numel() == 0 else None
    if mode == 2:
        mi = P.reshape(P.convert(maximum_indices, torch.int64), (-1,))
        hit = P.compare("GE", mi, 0)
        rows = P.where(hit, mi, P.zeros_like(mi))
        cols = P.reshape(P.iota((nb, d), 1), (-1,))
        flat = rows * d + cols
        vals = P.where(hit, P.reshape(g, (-1,)), P.zeros_like(P.reshape(g, (-1,))))
        flat_out = P.emit1("scatter_axis", [P.reshape(out, (-1,)), flat, vals], dimension=0, reduce="add")
        return P.convert(P.reshape(flat_out, (num_weights, d)), grad.dtype)
    bag = P.convert(offset2bag, torch.int64) if made is None else P.check_index(
        made, nb, "_embedding_bag_backward: offsets whose first is not 0 put the first indices in bag {}: ATen's CPU "
        "kernel reads grad before its first row there (undefined), so tpu refuses it", error="RuntimeError")
    per = P.emit1("index_select", [g, bag], dimension=0)  # (n, d)
    if mode == 1:
        size = P.convert(P.emit1("index_select", [P.convert(bag_size, torch.int64), bag], dimension=0), acc)
        per = per / P.broadcast_to(P.reshape(P.emit1("maximum", [size, P.full(1.0, (n,), acc)]), (n, 1)), (n, d))
    if per_sample_weights is not None:
        per = per * P.broadcast_to(P.reshape(P.convert(per_sample_weights, acc), (n, 1)), (n, d))
    valid = _valid(idx, padding_idx)
    safe = P.where(valid, idx, P.zeros_like(idx))
    per = P.where(P.broadcast_to(P.reshape(valid, (n, 1)), (n, d)), per, P.zeros_like(per))
    if scale_grad_by_freq:
        freq = P.emit1("index_add", [P.full(0.0, (num_weights,), acc), safe, P.convert(valid, acc)], dimension=0)
        f = P.emit1("index_select", [freq, safe], dimension=0)
        per = per / P.broadcast_to(P.reshape(P.emit1("maximum", [f, P.full(1.0, (n,), acc)]), (n, 1)), (n, d))
    return P.convert(P.emit1("index_add", [out, safe, per], dimension=0), grad.dtype)


@lower(aten._embedding_bag_dense_backward.default)
def embedding_bag_dense_backward(grad: Sym, indices: Sym, offset2bag: Sym, bag_size: Sym, maximum_indices: Sym,
                                 num_weights: int, scale_grad_by_freq: bool, mode: int,
                                 per_sample_weights: Sym | None = None, padding_idx: int = -1) -> Sym:
    """_embedding_bag_backward's dense kernel, whose schema has neither offsets nor sparse."""
    return embedding_bag_backward(grad, indices, None, offset2bag, bag_size, maximum_indices, num_weights,
                                  scale_grad_by_freq, mode, False, per_sample_weights, padding_idx)


@lower(aten._embedding_bag_per_sample_weights_backward.default)
def per_sample_weights_backward(grad: Sym, weight: Sym, indices: Sym, offsets: Sym, offset2bag: Sym, mode: int,
                                padding_idx: int = -1) -> Sym:
    backward_checks.check_embedding_bag_per_sample_weights_backward(grad, weight, indices, mode, offset2bag)
    idx = P.convert(indices, torch.int64)
    n = idx.shape[0]
    acc = _acc(grad)
    if n == 0:
        return P.full(0, (0,), grad.dtype)
    valid = _valid(idx, padding_idx)
    safe = P.where(valid, idx, P.zeros_like(idx))
    rows = P.convert(P.emit1("index_select", [weight, safe], dimension=0), acc)
    g = P.emit1("index_select", [P.convert(grad, acc), P.convert(offset2bag, torch.int64)], dimension=0)
    dot = P.reduce(rows * g, "sum", (1,))
    return P.convert(P.where(valid, dot, P.zeros_like(dot)), grad.dtype)
