"""Ragged grouped matmul for mixture-of-experts: rows of `lhs` sorted by expert, each group times its own matrix.

`grouped_matmul(lhs, rhs, group_sizes, block_m, block_n)`: lhs (M, K) holds each expert's tokens contiguously,
group_sizes (E,) int32 says how many (summing to at most M; rows past the sum give zeros), rhs (E, K, N). Out
(M, N). Groups do not align with row tiles, so the kernel walks *work items*, (group, row tile) pairs in order,
at most M/block_m + E - 1 of them, computed on the device from group_sizes and handed to the kernel as scalar
prefetch (the index maps read them to fetch each item's row tile and expert matrix). Consecutive items on one
row tile keep its output block in VMEM and add their group's rows (masked); an empty expert costs nothing.
"""

from __future__ import annotations

import torch

from torchtpu.kernels import interpret_params, jax_op


def _metadata(group_sizes, m: int, bm: int):  # noqa: ANN001, ANN202
    """(group id, row tile, first visit of its tile, valid) per work item, and group starts/ends."""
    import jax.numpy as jnp

    sizes = group_sizes.astype(jnp.int32)
    e = sizes.shape[0]
    ends = jnp.cumsum(sizes)
    starts = ends - sizes
    tiles = m // bm
    items = tiles + e - 1
    first = starts // bm
    count = jnp.where(sizes > 0, (jnp.maximum(ends, 1) - 1) // bm - first + 1, 0)
    done = jnp.cumsum(count) - count
    gid = jnp.repeat(jnp.arange(e, dtype=jnp.int32), count, total_repeat_length=items)
    idx = jnp.arange(items, dtype=jnp.int32)
    valid = (idx < count.sum()).astype(jnp.int32)
    tid = jnp.where(valid == 1, first[gid] + idx - done[gid], tiles - 1).astype(jnp.int32)
    tid = jnp.minimum(tid, tiles - 1)
    prev = jnp.concatenate([jnp.full((1,), -1, jnp.int32), tid[:-1]])
    visit = (tid != prev).astype(jnp.int32)
    return gid, tid, visit, valid, starts.astype(jnp.int32), ends.astype(jnp.int32)


def _kernel(gid, tid, visit, valid, starts, ends, x_ref, w_ref, o_ref, acc, *, bm: int):  # noqa: ANN001, ANN202
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    i = pl.program_id(1)

    @pl.when(visit[i] == 1)
    def _zero():  # noqa: ANN202
        acc[...] = jnp.zeros(acc.shape, jnp.float32)

    @pl.when(valid[i] == 1)
    def _add():  # noqa: ANN202
        g = gid[i]
        rows = tid[i] * bm + jax.lax.broadcasted_iota(jnp.int32, (bm, 1), 0)
        mine = (rows >= starts[g]) & (rows < ends[g])
        prod = jnp.dot(x_ref[...], w_ref[0], preferred_element_type=jnp.float32)
        acc[...] += jnp.where(mine, prod, 0.0)

    o_ref[...] = acc[...].astype(o_ref.dtype)


def grouped_matmul_fn(lhs, rhs, group_sizes, block_m: int = 128, block_n: int = 128):  # noqa: ANN001, ANN201
    """The JAX function (module docstring). Backward: d(lhs) is the same kernel on rhs transposed; d(rhs) is
    jax.numpy (each expert's rows masked, one einsum)."""
    import jax
    import jax.numpy as jnp

    @jax.custom_vjp
    def gmm(x, w):  # noqa: ANN001, ANN202
        return _gmm(x, w, group_sizes, block_m, block_n)

    def fwd(x, w):  # noqa: ANN001, ANN202
        return gmm(x, w), (x, w)

    def bwd(res, dy):  # noqa: ANN001, ANN202
        x, w = res
        dx = _gmm(dy, jnp.swapaxes(w, 1, 2), group_sizes, block_m, block_n)
        ends = jnp.cumsum(group_sizes.astype(jnp.int32))
        rows = jnp.arange(x.shape[0], dtype=jnp.int32)
        masks = ((rows[None, :] >= (ends - group_sizes)[:, None]) & (rows[None, :] < ends[:, None]))
        dw = jnp.einsum("em,mk,mn->ekn", masks.astype(jnp.float32), x.astype(jnp.float32),
                        dy.astype(jnp.float32)).astype(w.dtype)
        return dx, dw

    gmm.defvjp(fwd, bwd)
    return gmm(lhs, rhs)


def _gmm(lhs, rhs, group_sizes, block_m: int, block_n: int):  # noqa: ANN001, ANN202
    import functools

    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    m, k = lhs.shape
    e, k2, n = rhs.shape
    bm, bn = min(block_m, m), min(block_n, n)
    if k2 != k or m % bm or n % bn or group_sizes.shape != (e,):
        raise ValueError(f"grouped_matmul: lhs {lhs.shape}, rhs {rhs.shape}, group_sizes {group_sizes.shape}; "
                         f"valid: lhs (M, K), rhs (E, K, N), group_sizes (E,), M divisible by block_m={bm} and N "
                         f"by block_n={bn}")
    meta = _metadata(group_sizes, m, bm)
    items = m // bm + e - 1
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=6, grid=(n // bn, items),
        in_specs=[pl.BlockSpec((bm, k), lambda j, i, gid, tid, *_: (tid[i], 0)),
                  pl.BlockSpec((1, k, bn), lambda j, i, gid, tid, *_: (gid[i], 0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda j, i, gid, tid, *_: (tid[i], j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)])
    return pl.pallas_call(functools.partial(_kernel, bm=bm), grid_spec=spec,
                          out_shape=jax.ShapeDtypeStruct((m, n), lhs.dtype), interpret=interpret_params(),
                          name="grouped_matmul")(*meta, lhs, rhs)


grouped_matmul = jax_op("torchtpu_examples::grouped_matmul", grouped_matmul_fn, static_argnums=(3, 4))


def grouped_matmul_eager(lhs: torch.Tensor, rhs: torch.Tensor, group_sizes: torch.Tensor) -> torch.Tensor:
    """The same computation as torch ops: one matmul per expert on its rows (reads the sizes on the host)."""
    out = torch.zeros(lhs.shape[0], rhs.shape[-1], dtype=lhs.dtype, device=lhs.device)
    start = 0
    for g, size in enumerate(group_sizes.tolist()):
        if size:
            out[start:start + size] = lhs[start:start + size] @ rhs[g]
        start += size
    return out
