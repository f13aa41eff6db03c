"""Lowerings of fbgemm's jagged-tensor operators (the `fbgemm::` ops TorchRec's KeyedJaggedTensor and JaggedTensor
call): the offsets cumsums, jagged <-> padded dense, segment_sum_csr, and the sparse-feature permutes.

fbgemm_gpu defines these ops when it is imported, after torch: ops/late_ops.py registers their kernels by name
and makes each op's registry record on its first call. Each op's rule follows fbgemm's CPU kernel
(fbgemm_gpu/src/sparse_ops/sparse_ops_cpu.cpp, jagged_tensor_ops/jagged_tensor_ops_cpu.cpp); where that kernel
reads out of bounds on bad input (offsets past the values, a permute past the features, values shorter than the
lengths), the lowering checks the index when the program runs and raises, naming what was wrong and what is valid.
The permutes' output size depends on the lengths: without `permuted_lengths_sum` the kernel reads it back first
(one sync), as ops/dynamic.py does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu.execution import eager
from torchtpu.ops import late_ops
from torchtpu.ops import prims as P
from torchtpu.ops.sorting import sort_dim
from torchtpu.ops.tracing import Sym


def _fbgemm(name: str, *, how: str = "lowering", static: Sequence[str] = ()) -> Callable[..., Any]:
    return late_ops.late_op("fbgemm", name, how=how, static=static)


def _prod(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


# --- cumsums of lengths ------------------------------------------------------------------------------------------

def _scan(t: Sym) -> Sym:
    return P.emit1("cumulative", [t], kind="sum", dimension=t.ndim - 1)


def _zeros_col(t: Sym) -> Sym:
    return P.full(0, (*t.shape[:-1], 1), t.dtype)


@_fbgemm("asynchronous_complete_cumsum")
def complete_cumsum(t_in: Sym) -> Sym:
    if t_in.ndim not in (1, 2):
        raise RuntimeError(f"asynchronous_complete_cumsum: expected a 1-D or 2-D tensor, got a {t_in.ndim}-D one")
    return P.concat([_zeros_col(t_in), _scan(t_in)], t_in.ndim - 1)


def _flat_scan(t: Sym) -> Sym:
    """fbgemm's inclusive and exclusive cumsums run over the tensor flattened, keeping its shape."""
    return _scan(P.reshape(t, (t.numel(),)))


@_fbgemm("asynchronous_inclusive_cumsum")
def inclusive_cumsum(t_in: Sym) -> Sym:
    return P.reshape(_flat_scan(t_in), t_in.shape)


@_fbgemm("asynchronous_exclusive_cumsum")
def exclusive_cumsum(t_in: Sym) -> Sym:
    n = t_in.numel()
    if n == 0:
        return t_in
    flat = P.concat([P.full(0, (1,), t_in.dtype), P.slice_dim(_flat_scan(t_in), 0, 0, n - 1)], 0)
    return P.reshape(flat, t_in.shape)


# --- jagged <-> padded dense ---------------------------------------------------------------------------------------

def _gather1(x: Sym, index: Sym) -> Sym:
    return P.emit1("index_select", [x, index], dimension=0)


def _jagged_positions(offsets: Sequence[Sym], grid: Sequence[int], total_l: int, what: str) -> tuple[Sym, Sym]:
    """For each element of the dense grid (B, *max_lengths), flattened: its row in the jagged values and whether
    it is inside its sequence. Each level's lengths are checked to lie in [0, rows of the next level]."""
    n = _prod(grid)
    idx = P.reshape(P.iota(grid, 0), (n,))
    valid = P.full(True, (n,), torch.bool)
    for level, off in enumerate(offsets):
        off = P.convert(P.reshape(off, (off.numel(),)), torch.int64)
        m = off.shape[0]
        below = total_l if level == len(offsets) - 1 else offsets[level + 1].numel() - 1
        if m < 1:
            raise RuntimeError(f"{what}: offsets[{level}] is empty; it needs one entry more than its sequences")
        ends = P.slice_dim(off, 0, 1, m)
        starts = P.slice_dim(off, 0, 0, m - 1)
        P.check_index(ends, below + 1, f"{what}: offsets[{level}] holds {{}}, past the {below} rows it indexes",
                      error="RuntimeError")
        lengths = P.check_index(ends - starts, below + 1,
                                f"{what}: offsets[{level}] must be nondecreasing; it has a length of {{}}",
                                error="RuntimeError")
        safe = P.where(valid, idx, P.zeros_like(idx))
        if m - 1 == 0:
            return P.zeros_like(idx), P.full(False, (n,), torch.bool)
        j = P.reshape(P.iota(grid, level + 1), (n,))
        start = _gather1(P.slice_dim(off, 0, 0, m - 1), safe)
        valid = P.emit1("and", [valid, P.compare("LT", j, _gather1(lengths, safe))])
        idx = start + j
    return P.where(valid, idx, P.zeros_like(idx)), valid


@_fbgemm("jagged_to_padded_dense_forward", static=("padding_value",))
def jagged_to_padded_dense(values: Sym, offsets: list[Sym], max_lengths: list[int],
                           padding_value: float = 0.0) -> Sym:
    what = "jagged_to_padded_dense"
    if len(max_lengths) != len(offsets):
        raise RuntimeError(f"{what}: {len(offsets)} offsets need as many max_lengths, got {len(max_lengths)}")
    batch = offsets[0].numel() - 1
    grid = (batch, *[int(m) for m in max_lengths])
    inner = values.shape[1:]
    d = _prod(inner)
    total_l = values.shape[0]
    pos, valid = _jagged_positions(offsets, grid, total_l, what)
    n = _prod(grid)
    pad = P.full(padding_value, (n, d), values.dtype)
    if total_l == 0 or n == 0:
        return P.reshape(pad, (*grid, *inner))
    rows = _gather1(P.reshape(values, (total_l, d)), pos)
    out = P.where(P.broadcast_to(P.reshape(valid, (n, 1)), (n, d)), rows, pad)
    return P.reshape(out, (*grid, *inner))


def _dense_to_jagged(dense: Sym, offsets: Sequence[Sym], total_l: int, what: str) -> Sym:
    k = len(offsets)
    grid, inner = dense.shape[:k + 1], dense.shape[k + 1:]
    n, d = _prod(grid), _prod(inner)
    pos, valid = _jagged_positions(offsets, grid, total_l, what)
    spill = P.where(valid, pos, P.full(total_l, pos.shape, torch.int64))
    out = P.full(0, (total_l + 1, d), dense.dtype)
    if n:
        out = P.emit1("index_add", [out, spill, P.reshape(dense, (n, d))], dimension=0)
    return P.reshape(P.slice_dim(out, 0, 0, total_l), (total_l, *inner))


@_fbgemm("jagged_to_padded_dense_backward", static=("total_L",))
def jagged_to_padded_dense_backward(grad_output: Sym, offsets: list[Sym], total_L: int) -> Sym:  # noqa: N803
    return _dense_to_jagged(grad_output, offsets, int(total_L), "jagged_to_padded_dense_backward")


# --- segment_sum_csr -----------------------------------------------------------------------------------------------

@_fbgemm("segment_sum_csr", static=("batch_size",))
def segment_sum_csr(batch_size: int, csr_seg: Sym, values: Sym) -> Sym:
    """out[i] = sum(values[csr_seg[i] * batch_size : csr_seg[i + 1] * batch_size])."""
    seg = P.convert(P.reshape(csr_seg, (csr_seg.numel(),)), torch.int64) * int(batch_size)
    s = seg.shape[0] - 1
    flat = P.reshape(values, (values.numel(),))
    n = flat.shape[0]
    if s <= 0:
        return P.full(0, (max(s, 0),), values.dtype)
    if n == 0:
        return P.full(0, (s,), values.dtype)
    ends = P.slice_dim(seg, 0, 1, s + 1)
    P.check_index(ends, n + 1, f"segment_sum_csr: csr_seg * batch_size reaches {{}}, past the {n} values",
                  error="RuntimeError")
    pos = P.iota((n, s), 0)
    which = P.reduce(P.convert(P.compare("LE", P.broadcast_to(P.reshape(ends, (1, s)), (n, s)), pos),
                               torch.int64), "sum", (1,))
    pos1 = P.iota((n,), 0)
    inside = P.emit1("and", [P.compare("LT", which, s), P.compare("GE", pos1, P.slice_dim(seg, 0, 0, 1))])
    which = P.where(inside, which, P.full(s, (n,), torch.int64))
    out = P.emit1("index_add", [P.full(0, (s + 1,), values.dtype), which, flat], dimension=0)
    return P.slice_dim(out, 0, 0, s)


# --- permutes of sparse features (data-dependent output size) ------------------------------------------------------

def _segment_permute(permute: Sym, totals: Sym, what: str) -> tuple[Sym, Sym, Sym]:
    """(checked permute, each source segment's start, the permuted segments' sizes) for segments of `totals`."""
    t = totals.shape[0]
    perm = P.check_index(P.convert(permute, torch.int64), t,
                         f"{what}: permute holds {{}}, not a feature in [0, {t})", error="RuntimeError")
    starts = P.concat([P.full(0, (1,), torch.int64), P.slice_dim(_scan(totals), 0, 0, t - 1)], 0) if t else totals
    return perm, starts, _gather1(totals, perm) if t else P.full(0, perm.shape, torch.int64)


def _permuted_rows(perm: Sym, starts: Sym, out_totals: Sym, size: int, rows: int, what: str) -> Sym:
    """The source row of each of the `size` output rows (segment p of the output is source segment perm[p])."""
    p = out_totals.shape[0]
    ends = _scan(out_totals)
    k = P.iota((size, p), 0)
    which = P.reduce(P.convert(P.compare("LE", P.broadcast_to(P.reshape(ends, (1, p)), (size, p)), k),
                               torch.int64), "sum", (1,))
    which = P.emit1("minimum", [which, P.full(p - 1, (size,), torch.int64)])
    out_start = _gather1(ends - out_totals, which)
    src = _gather1(_gather1(starts, perm), which) + (P.iota((size,), 0) - out_start)
    return P.check_index(src, rows, f"{what}: the lengths address value {{}}, but values has {rows} entries",
                         error="RuntimeError")


def _sum_check(out_totals: Sym, size: int, what: str, given: str = "permuted_lengths_sum") -> None:
    total = P.reduce(out_totals, "sum", (0,)) if out_totals.shape[0] else P.full(0, (), torch.int64)
    P.check_index(P.reshape(total - size, (1,)), 1,
                  f"{what}: {given}={size} differs from the sum of the permuted segments by {{}}", error="RuntimeError")


def _totals(lengths: Sym, two_d: bool) -> Sym:
    lens = P.convert(lengths, torch.int64)
    if two_d:
        return P.reduce(lens, "sum", (1,)) if lens.shape[1] else P.full(0, (lens.shape[0],), torch.int64)
    return lens


def _permute_count(permute: Sym, lengths: Sym, *, two_d: bool, what: str) -> Sym:
    _, _, out_totals = _segment_permute(permute, _totals(lengths, two_d), what)
    return P.reduce(out_totals, "sum", (0,)) if out_totals.shape[0] else P.full(0, (), torch.int64)


def _permute_rows(permute: Sym, lengths: Sym, values: Sym, weights: Sym | None = None, *, size: int, two_d: bool,
                  what: str) -> tuple[Sym, ...]:
    if two_d and lengths.ndim != 2:
        raise RuntimeError(f"{what}: lengths must be 2-D (features, batch), got {lengths.ndim}-D")
    perm, starts, out_totals = _segment_permute(permute, _totals(lengths, two_d), what)
    _sum_check(out_totals, size, what)
    out_lengths = _gather1(lengths, perm)
    outs = [out_lengths]
    if size == 0 or out_totals.shape[0] == 0:
        outs += [P.full(0, (0,), x.dtype) for x in (values, weights) if x is not None]
        return tuple(outs)
    for x in (values, weights):  # fbgemm's CPU kernel reads values and weights as flat buffers, whatever their shape
        if x is not None:
            flat = P.reshape(x, (x.numel(),))
            outs.append(_gather1(flat, _permuted_rows(perm, starts, out_totals, size, flat.shape[0], what)))
    return tuple(outs)


def _permute_kernel(name: str, two_d: bool) -> Callable[..., Any]:
    what = f"{name}()"

    def run(permute: torch.Tensor, lengths: torch.Tensor, values: torch.Tensor, weights: torch.Tensor | None = None,
            permuted_lengths_sum: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        flags = {"two_d": two_d, "what": what}
        if permuted_lengths_sum is None:
            count = eager.run(f"fbgemm::{name}.count", _permute_count, (permute, lengths), flags)
            permuted_lengths_sum = int(count.item())
        args = (permute, lengths, values) if weights is None else (permute, lengths, values, weights)
        outs = eager.run(f"fbgemm::{name}", _permute_rows, args, {"size": int(permuted_lengths_sum), **flags})
        return outs[0], outs[1], outs[2] if weights is not None else None

    return run


_fbgemm("permute_2D_sparse_data", how="kernel")(_permute_kernel("permute_2D_sparse_data", True))
_fbgemm("permute_1D_sparse_data", how="kernel")(_permute_kernel("permute_1D_sparse_data", False))


@_fbgemm("invert_permute")
def invert_permute(permute: Sym) -> Sym:
    """inverse[permute[i]] = i (TorchRec's sequence all-to-all); fbgemm's CPU kernel writes wherever a value points,
    so a value outside [0, n) raises here instead."""
    n = permute.numel()
    if n == 0:
        return P.full(0, (0,), permute.dtype)
    checked = P.check_index(permute, n, f"invert_permute(): permute holds {{}}, not a position in [0, {n})",
                            error="RuntimeError")
    return P.emit1("scatter_axis", [P.full(0, (n,), permute.dtype), checked, P.iota((n,), 0, permute.dtype)],
                   dimension=0, reduce="replace")


@_fbgemm("permute_pooled_embs")
def permute_pooled_embs(pooled_embs: Sym, offset_dim_list: Sym, permute_list: Sym, inv_offset_dim_list: Sym,
                        inv_permute_list: Sym) -> Sym:
    """KeyedTensor.regroup's column permute: output segment i is input column segment permute_list[i]
    (segments by offset_dim_list); inv_* are its backward's lists (the same op with them)."""
    what = "permute_pooled_embs()"
    if pooled_embs.ndim != 2:
        raise RuntimeError(f"{what}: pooled_embs must be 2-D (batch, dims), got {pooled_embs.ndim}-D")
    off = P.convert(P.reshape(offset_dim_list, (offset_dim_list.numel(),)), torch.int64)
    k, width = off.shape[0] - 1, pooled_embs.shape[1]
    if k <= 0 or permute_list.numel() == 0 or width == 0:
        return pooled_embs
    dims = P.slice_dim(off, 0, 1, k + 1) - P.slice_dim(off, 0, 0, k)
    perm, _, out_dims = _segment_permute(P.reshape(permute_list, (permute_list.numel(),)), dims, what)
    _sum_check(out_dims, width, what, "the width of pooled_embs")
    cols = _permuted_rows(perm, P.slice_dim(off, 0, 0, k), out_dims, width, width, what)
    return P.emit1("index_select", [pooled_embs, cols], dimension=1)


# --- block_bucketize_sparse_features (row-wise sharding's input split) ----------------------------------------------

def _segment_of_positions(lengths: Sym, n: int) -> tuple[Sym, Sym]:
    """(each of the n positions' segment, each segment's start) for segments of `lengths`: a position's segment is
    the last one starting at or before it (one scatter of the starts and a cumulative sum, O(n + segments))."""
    lens = P.convert(lengths, torch.int64)
    s = lens.shape[0]
    starts = P.concat([P.full(0, (1,), torch.int64), P.slice_dim(_scan(lens), 0, 0, s - 1)], 0)
    marks = P.emit1("index_add", [P.full(0, (n + 1,), torch.int64), P.emit1("minimum", [starts, P.full(n, (s,),
                    torch.int64)]), P.full(1, (s,), torch.int64)], dimension=0)
    seg = _scan(P.slice_dim(marks, 0, 0, n)) - 1
    return P.emit1("maximum", [seg, P.zeros_like(seg)]), starts


def _bucketize(lengths: Sym, indices: Sym, block_sizes: Sym, weights: Sym | None = None, *, my_size: int,
               bucketize_pos: bool, sequence: bool, keep_orig_idx: bool) -> tuple[Sym, ...]:
    what = "block_bucketize_sparse_features()"
    lens = P.reshape(lengths, (lengths.numel(),))
    s, t, n = lens.shape[0], block_sizes.numel(), indices.numel()
    if t == 0 or s % t:
        raise RuntimeError(f"{what}: lengths has {s} entries, not a multiple of the {t} features' block_sizes")
    batch = s // t
    P.check_index(P.reshape(P.reduce(P.convert(lens, torch.int64), "sum", (0,)) - n, (1,)), 1,
                  f"{what}: the lengths' total differs from the {n} indices by {{}}", error="RuntimeError")
    new_lengths = P.full(0, (my_size * s,), torch.int64)
    if n == 0:
        outs = [P.convert(new_lengths, lengths.dtype), indices]
        outs += [weights] if weights is not None else []
        outs += [indices] * (int(bucketize_pos) + int(sequence))
        return tuple(outs)
    idx = P.convert(P.reshape(indices, (n,)), torch.int64)
    seg, starts = _segment_of_positions(lens, n)
    blk = P.emit1("index_select", [P.convert(P.reshape(block_sizes, (t,)), torch.int64),
                                   P.emit1("divide", [seg, P.full(batch, (n,), torch.int64)])], dimension=0)
    blk = P.emit1("maximum", [blk, P.full(1, (n,), torch.int64)])
    world = P.full(my_size, (n,), torch.int64)
    inside = P.compare("LT", idx, blk * my_size)
    bucket = P.where(inside, P.emit1("divide", [idx, blk]), P.emit1("remainder", [idx, world]))
    new_idx = idx if keep_orig_idx else P.where(inside, P.emit1("remainder", [idx, blk]),
                                                P.emit1("divide", [idx, world]))
    key = bucket * s + seg
    new_lengths = P.emit1("index_add", [new_lengths, key, P.full(1, (n,), torch.int64)], dimension=0)
    _, order = sort_dim(key, 0)  # stable: bucket-major, then segment, then the original order
    outs = [P.convert(new_lengths, lengths.dtype), P.convert(_gather1(new_idx, order), indices.dtype)]
    if weights is not None:
        outs.append(_gather1(P.reshape(weights, (n,)), order))
    if bucketize_pos:
        pos = P.iota((n,), 0) - _gather1(starts, seg)
        outs.append(P.convert(_gather1(pos, order), indices.dtype))
    if sequence:
        unbucketize = P.emit1("scatter_axis", [P.full(0, (n,), torch.int64), order, P.iota((n,), 0)], dimension=0,
                              reduce="replace")
        outs.append(P.convert(unbucketize, indices.dtype))
    return tuple(outs)


@_fbgemm("block_bucketize_sparse_features", how="kernel")
def block_bucketize_sparse_features(lengths: torch.Tensor, indices: torch.Tensor, bucketize_pos: bool,
                                    sequence: bool, block_sizes: torch.Tensor, my_size: int,
                                    weights: torch.Tensor | None = None,
                                    batch_size_per_feature: torch.Tensor | None = None, max_B: int = -1,  # noqa: N803
                                    block_bucketize_pos: list[torch.Tensor] | None = None,
                                    keep_orig_idx: bool = False, total_num_blocks: torch.Tensor | None = None,
                                    keep_orig_idx_per_feature: torch.Tensor | None = None) -> tuple[Any, ...]:
    """Row-wise sharding's split of each feature's ids into `my_size` buckets of block_sizes[f] rows (fbgemm's
    rule: an id past block * my_size goes to bucket id % my_size as id // my_size)."""
    unsupported = {"batch_size_per_feature": batch_size_per_feature, "block_bucketize_pos": block_bucketize_pos,
                   "total_num_blocks": total_num_blocks, "keep_orig_idx_per_feature": keep_orig_idx_per_feature}
    given = [name for name, value in unsupported.items() if value is not None]
    if given:
        raise NotImplementedError(f"block_bucketize_sparse_features on tpu: {', '.join(given)} not supported (the "
                                  "even split of fixed batches is: leave them None)")
    args = (lengths, indices, block_sizes) if weights is None else (lengths, indices, block_sizes, weights)
    outs = list(eager.run("fbgemm::block_bucketize_sparse_features", _bucketize, args,
                          {"my_size": int(my_size), "bucketize_pos": bool(bucketize_pos), "sequence": bool(sequence),
                           "keep_orig_idx": bool(keep_orig_idx)}))
    new_lengths, new_indices = outs[0], outs[1]
    rest = outs[2:]
    new_weights = rest.pop(0) if weights is not None else None
    pos = rest.pop(0) if bucketize_pos else None
    unbucketize = rest.pop(0) if sequence else None
    return new_lengths, new_indices, new_weights, pos, unbucketize


def register(kernel: Any) -> None:
    """Registers the PrivateUse1 kernels of the fbgemm ops above by name (registry.register_all calls this)."""
    late_ops.register("fbgemm")
