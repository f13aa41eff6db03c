"""Lowerings of TorchRec's table-lookup ops (`torchrec::embedding_*lookup*`, `torchrec::permute_pooled_embs`):
what its UNFUSED_TPU compute kernel (torchrec/experimental/torch_tpu, chosen by the sharding planner for compute
device "tpu") calls for a sharded EmbeddingBagCollection / EmbeddingCollection, forward and backward.

TorchRec defines these ops (with CPU kernels and autograd formulas) when that kernel is first built, after torch:
ops/late_ops.py registers their PrivateUse1 kernels by name. Each follows TorchRec's CPU kernel
(torch_tpu/pallas/ops.py): gathers and index_adds in the order it makes them; an id outside the table raises the
IndexError that CPU indexing raises.
"""

from __future__ import annotations

from typing import Any

import torch

from torchtpu.ops import late_ops
from torchtpu.ops import prims as P
from torchtpu.ops.jagged import _permuted_rows, _segment_of_positions, _segment_permute, _sum_check
from torchtpu.ops.tracing import Sym


def _torchrec(name: str, static: tuple[str, ...] = ()) -> Any:
    return late_ops.late_op("torchrec", name, static=static)


def _rows(indices: Sym, rows: int) -> Sym:
    idx = P.convert(P.reshape(indices, (indices.numel(),)), torch.int64)
    return P.check_index(idx, rows, f"index {{}} is out of bounds for dimension 0 with size {rows}", negative=True)


def _wrap(idx: Sym, rows: int) -> Sym:
    """A negative id reads from the end, as CPU indexing does (check_index allowed [-rows, rows))."""
    return P.where(P.compare("LT", idx, 0), idx + rows, idx)


def _bags(offsets: Sym, n: int, what: str) -> Sym:
    """Each of the n ids' bag (TorchRec's repeat_interleave of the bag sizes: the sizes must total n)."""
    off = P.convert(P.reshape(offsets, (offsets.numel(),)), torch.int64)
    k = off.shape[0] - 1
    lengths = P.slice_dim(off, 0, 1, k + 1) - P.slice_dim(off, 0, 0, k)
    P.check_index(P.reshape(P.reduce(lengths, "sum", (0,)) - n, (1,)), 1,
                  f"{what}: the offsets' bags hold more or fewer ids than the {n} given, by {{}}",
                  error="RuntimeError")
    return _segment_of_positions(lengths, n)[0]


def _gather(x: Sym, index: Sym) -> Sym:
    return P.emit1("index_select", [x, index], dimension=0)


def _scatter_rows(rows: int, dim: int, index: Sym, src: Sym) -> Sym:
    return P.emit1("index_add", [P.full(0, (rows, dim), src.dtype), index, src], dimension=0)


@_torchrec("embedding_lookup", static=("emb_dim",))
def embedding_lookup(indices: Sym, weights: Sym, emb_dim: int) -> Sym:
    return _gather(weights, _wrap(_rows(indices, weights.shape[0]), weights.shape[0]))


@_torchrec("embedding_lookup_backward", static=("num_rows", "emb_dim"))
def embedding_lookup_backward(grad_out: Sym, indices: Sym, num_rows: int, emb_dim: int) -> Sym:
    idx = _wrap(_rows(indices, num_rows), num_rows)
    return _scatter_rows(num_rows, emb_dim, idx, grad_out)


@_torchrec("embedding_pooled_lookup", static=("pool",))
def embedding_pooled_lookup(idx: Sym, table: Sym, pool: int) -> Sym:
    rows = _gather(table, _wrap(_rows(idx, table.shape[0]), table.shape[0]))
    d = table.shape[1]
    return P.reduce(P.reshape(rows, (rows.shape[0] // pool, pool, d)), "sum", (1,))


@_torchrec("embedding_pooled_lookup_backward", static=("pool", "num_rows", "emb_dim"))
def embedding_pooled_lookup_backward(grad_out: Sym, idx: Sym, pool: int, num_rows: int, emb_dim: int) -> Sym:
    b, d = grad_out.shape
    repeated = P.reshape(P.broadcast_to(P.reshape(grad_out, (b, 1, d)), (b, pool, d)), (b * pool, d))
    return _scatter_rows(num_rows, emb_dim, _wrap(_rows(idx, num_rows), num_rows), repeated)


def _pooled(indices: Sym, offsets: Sym, weights: Sym, emb_dim: int, row_offsets: Sym | None, what: str) -> Sym:
    n, bags = indices.numel(), offsets.numel() - 1
    if n == 0 or bags <= 0:
        return P.full(0, (max(bags, 0), emb_dim), weights.dtype)
    bag = _bags(offsets, n, what)
    idx = P.convert(P.reshape(indices, (n,)), torch.int64)
    if row_offsets is not None:
        idx = idx + _gather(P.convert(row_offsets, torch.int64), bag)
    idx = _wrap(_rows(idx, weights.shape[0]), weights.shape[0])
    return _scatter_rows(bags, emb_dim, bag, _gather(weights, idx))


def _pooled_backward(grad_out: Sym, indices: Sym, offsets: Sym, num_rows: int, emb_dim: int,
                     row_offsets: Sym | None, what: str) -> Sym:
    n = indices.numel()
    if n == 0 or offsets.numel() <= 1:
        return P.full(0, (num_rows, emb_dim), grad_out.dtype)
    bag = _bags(offsets, n, what)
    idx = P.convert(P.reshape(indices, (n,)), torch.int64)
    if row_offsets is not None:
        idx = idx + _gather(P.convert(row_offsets, torch.int64), bag)
    return _scatter_rows(num_rows, emb_dim, _wrap(_rows(idx, num_rows), num_rows), _gather(grad_out, bag))


@_torchrec("embedding_pooled_lookup_offset", static=("emb_dim",))
def embedding_pooled_lookup_offset(indices: Sym, offsets: Sym, weights: Sym, emb_dim: int) -> Sym:
    return _pooled(indices, offsets, weights, emb_dim, None, "embedding_pooled_lookup_offset")


@_torchrec("embedding_pooled_lookup_offset_backward", static=("num_rows", "emb_dim"))
def embedding_pooled_lookup_offset_backward(grad_out: Sym, indices: Sym, offsets: Sym, num_rows: int,
                                            emb_dim: int) -> Sym:
    return _pooled_backward(grad_out, indices, offsets, num_rows, emb_dim, None,
                            "embedding_pooled_lookup_offset_backward")


@_torchrec("embedding_pooled_batched_lookup_offset", static=("emb_dim",))
def embedding_pooled_batched_lookup_offset(indices: Sym, offsets: Sym, weights: Sym, row_offsets: Sym,
                                           emb_dim: int) -> Sym:
    return _pooled(indices, offsets, weights, emb_dim, row_offsets, "embedding_pooled_batched_lookup_offset")


@_torchrec("embedding_pooled_batched_lookup_offset_backward", static=("num_rows", "emb_dim"))
def embedding_pooled_batched_lookup_offset_backward(grad_out: Sym, indices: Sym, offsets: Sym, row_offsets: Sym,
                                                    num_rows: int, emb_dim: int) -> Sym:
    return _pooled_backward(grad_out, indices, offsets, num_rows, emb_dim, row_offsets,
                            "embedding_pooled_batched_lookup_offset_backward")


def _permuted_columns(offset_dim_list: Sym, permute_list: Sym, width: int, what: str) -> Sym:
    off = P.convert(P.reshape(offset_dim_list, (offset_dim_list.numel(),)), torch.int64)
    k = off.shape[0] - 1
    dims = P.slice_dim(off, 0, 1, k + 1) - P.slice_dim(off, 0, 0, k)
    perm, _, out_dims = _segment_permute(P.reshape(permute_list, (permute_list.numel(),)), dims, what)
    _sum_check(out_dims, width, what, "the width of pooled_embs")
    return _permuted_rows(perm, P.slice_dim(off, 0, 0, k), out_dims, width, width, what)


@_torchrec("permute_pooled_embs")
def permute_pooled_embs(pooled_embs: Sym, offset_dim_list: Sym, permute_list: Sym) -> Sym:
    if offset_dim_list.numel() <= 1 or permute_list.numel() == 0 or pooled_embs.shape[1] == 0:
        return pooled_embs
    cols = _permuted_columns(offset_dim_list, permute_list, pooled_embs.shape[1], "torchrec::permute_pooled_embs")
    return P.emit1("index_select", [pooled_embs, cols], dimension=1)


@_torchrec("permute_pooled_embs_backward")
def permute_pooled_embs_backward(grad_out: Sym, offset_dim_list: Sym, permute_list: Sym) -> Sym:
    if offset_dim_list.numel() <= 1 or permute_list.numel() == 0 or grad_out.shape[1] == 0:
        return grad_out
    cols = _permuted_columns(offset_dim_list, permute_list, grad_out.shape[1],
                             "torchrec::permute_pooled_embs_backward")
    return P.emit1("index_add", [P.zeros_like(grad_out), cols, grad_out], dimension=1)


def register(kernel: Any) -> None:
    """Registers the PrivateUse1 kernels of the torchrec ops above by name (registry.register_all calls this)."""
    late_ops.register("torchrec")
