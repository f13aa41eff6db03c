"""Flash attention, forward and backward, as Pallas kernels (online softmax; nothing of size S x S in HBM).

`flash_attention(q, k, v, causal, block_q, block_k)`: q, k, v are (B, H, S, D). Forward: grid (B*H, S/block_q,
S/block_k), the running max, sum and output of each query block in VMEM scratch, the log-sum-exp saved for the
backward. Backward (FlashAttention-2's): one kernel accumulates dK and dV per key block over the query blocks,
another dQ per query block over the key blocks, recomputing the probabilities from the saved log-sum-exp.
With `causal`, blocks wholly above the diagonal are skipped (their DMAs still happen: the cost model charges
them, as the pipeline fetches them).
"""

from __future__ import annotations

import functools
import math

import torch

from torchtpu.kernels import interpret_params, jax_op

NEG_INF = -1e30  # a finite "minus infinity": exp(NEG_INF - m) is 0 and never NaN


def _scores(q, k, scale, causal, row0, col0):  # noqa: ANN001, ANN202
    import jax
    import jax.numpy as jnp

    s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32) * scale
    if causal:
        rows = row0 + jax.lax.broadcasted_iota(jnp.int32, s.shape, 0)
        cols = col0 + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
        s = jnp.where(cols <= rows, s, NEG_INF)
    return s


def _fwd_kernel(q_ref, k_ref, v_ref, o_ref, lse_ref, m_s, l_s, acc_s, *, scale, causal, bq, bk):  # noqa: ANN001, ANN202
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    i, j = pl.program_id(1), pl.program_id(2)

    @pl.when(j == 0)
    def _init():  # noqa: ANN202
        m_s[...] = jnp.full(m_s.shape, NEG_INF, jnp.float32)
        l_s[...] = jnp.zeros(l_s.shape, jnp.float32)
        acc_s[...] = jnp.zeros(acc_s.shape, jnp.float32)

    def _step():  # noqa: ANN202
        s = _scores(q_ref[0].astype(jnp.float32), k_ref[0].astype(jnp.float32), scale, causal, i * bq, j * bk)
        m_prev = m_s[...]
        m_new = jnp.maximum(m_prev, s.max(axis=-1, keepdims=True))
        p = jnp.exp(s - m_new)
        alpha = jnp.exp(m_prev - m_new)
        l_s[...] = alpha * l_s[...] + p.sum(axis=-1, keepdims=True)
        acc_s[...] = alpha * acc_s[...] + jnp.dot(p, v_ref[0].astype(jnp.float32),
                                                  preferred_element_type=jnp.float32)
        m_s[...] = m_new

    if causal:
        pl.when(j * bk <= i * bq + bq - 1)(_step)
    else:
        _step()

    @pl.when(j == pl.num_programs(2) - 1)
    def _finish():  # noqa: ANN202
        o_ref[0] = (acc_s[...] / l_s[...]).astype(o_ref.dtype)
        lse_ref[0] = m_s[...] + jnp.log(l_s[...])


def _dkv_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, d_ref, dk_ref, dv_ref, dk_s, dv_s, *, scale, causal, bq,  # noqa: ANN001, ANN202
                bk):
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    j, i = pl.program_id(1), pl.program_id(2)

    @pl.when(i == 0)
    def _init():  # noqa: ANN202
        dk_s[...] = jnp.zeros(dk_s.shape, jnp.float32)
        dv_s[...] = jnp.zeros(dv_s.shape, jnp.float32)

    def _step():  # noqa: ANN202
        q, k = q_ref[0].astype(jnp.float32), k_ref[0].astype(jnp.float32)
        v, do = v_ref[0].astype(jnp.float32), do_ref[0].astype(jnp.float32)
        p = jnp.exp(_scores(q, k, scale, causal, i * bq, j * bk) - lse_ref[0])
        tn = (((0,), (0,)), ((), ()))
        dv_s[...] += jax.lax.dot_general(p, do, tn, preferred_element_type=jnp.float32)
        dp = jax.lax.dot_general(do, v, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)
        ds = p * (dp - d_ref[0])
        dk_s[...] += jax.lax.dot_general(ds, q, tn, preferred_element_type=jnp.float32) * scale

    if causal:
        pl.when(j * bk <= i * bq + bq - 1)(_step)
    else:
        _step()

    @pl.when(i == pl.num_programs(2) - 1)
    def _finish():  # noqa: ANN202
        dk_ref[0] = dk_s[...].astype(dk_ref.dtype)
        dv_ref[0] = dv_s[...].astype(dv_ref.dtype)


def _dq_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, d_ref, dq_ref, dq_s, *, scale, causal, bq, bk):  # noqa: ANN001, ANN202
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    i, j = pl.program_id(1), pl.program_id(2)

    @pl.when(j == 0)
    def _init():  # noqa: ANN202
        dq_s[...] = jnp.zeros(dq_s.shape, jnp.float32)

    def _step():  # noqa: ANN202
        q, k = q_ref[0].astype(jnp.float32), k_ref[0].astype(jnp.float32)
        v, do = v_ref[0].astype(jnp.float32), do_ref[0].astype(jnp.float32)
        p = jnp.exp(_scores(q, k, scale, causal, i * bq, j * bk) - lse_ref[0])
        dp = jax.lax.dot_general(do, v, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)
        dq_s[...] += jnp.dot(p * (dp - d_ref[0]), k, preferred_element_type=jnp.float32) * scale

    if causal:
        pl.when(j * bk <= i * bq + bq - 1)(_step)
    else:
        _step()

    @pl.when(j == pl.num_programs(2) - 1)
    def _finish():  # noqa: ANN202
        dq_ref[0] = dq_s[...].astype(dq_ref.dtype)


def _specs(bq: int, bk: int, d: int, q_major: bool):  # noqa: ANN202
    """BlockSpecs of (q-like, kv-like, row-stat) operands for a grid (bh, outer, inner)."""
    from jax.experimental import pallas as pl

    if q_major:  # grid (bh, i, j)
        qs = pl.BlockSpec((1, bq, d), lambda b, i, j: (b, i, 0))
        ks = pl.BlockSpec((1, bk, d), lambda b, i, j: (b, j, 0))
        rs = pl.BlockSpec((1, bq, 1), lambda b, i, j: (b, i, 0))
    else:  # grid (bh, j, i)
        qs = pl.BlockSpec((1, bq, d), lambda b, j, i: (b, i, 0))
        ks = pl.BlockSpec((1, bk, d), lambda b, j, i: (b, j, 0))
        rs = pl.BlockSpec((1, bq, 1), lambda b, j, i: (b, i, 0))
    return qs, ks, rs


def _check(s: int, bq: int, bk: int) -> None:
    if s % bq or s % bk:
        raise ValueError(f"flash_attention: sequence length {s} must divide into block_q={bq} and block_k={bk}")


def _forward(q, k, v, causal: bool, bq: int, bk: int):  # noqa: ANN001, ANN202
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    bh, s, d = q.shape
    _check(s, bq, bk)
    qs, ks, rs = _specs(bq, bk, d, True)
    kern = functools.partial(_fwd_kernel, scale=1.0 / math.sqrt(d), causal=causal, bq=bq, bk=bk)
    return pl.pallas_call(
        kern, grid=(bh, s // bq, s // bk), in_specs=[qs, ks, ks], out_specs=[qs, rs],
        out_shape=[jax.ShapeDtypeStruct(q.shape, q.dtype), jax.ShapeDtypeStruct((bh, s, 1), jnp.float32)],
        scratch_shapes=[pltpu.VMEM((bq, 1), jnp.float32), pltpu.VMEM((bq, 1), jnp.float32),
                        pltpu.VMEM((bq, d), jnp.float32)],
        interpret=interpret_params(), name="flash_attention_fwd")(q, k, v)


def _backward(q, k, v, o, lse, do, causal: bool, bq: int, bk: int):  # noqa: ANN001, ANN202
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    bh, s, d = q.shape
    scale = 1.0 / math.sqrt(d)
    delta = jnp.sum(do.astype(jnp.float32) * o.astype(jnp.float32), axis=-1, keepdims=True)
    qs, ks, rs = _specs(bq, bk, d, False)
    dk, dv = pl.pallas_call(
        functools.partial(_dkv_kernel, scale=scale, causal=causal, bq=bq, bk=bk), grid=(bh, s // bk, s // bq),
        in_specs=[qs, ks, ks, qs, rs, rs], out_specs=[ks, ks],
        out_shape=[jax.ShapeDtypeStruct(k.shape, k.dtype), jax.ShapeDtypeStruct(v.shape, v.dtype)],
        scratch_shapes=[pltpu.VMEM((bk, d), jnp.float32), pltpu.VMEM((bk, d), jnp.float32)],
        interpret=interpret_params(), name="flash_attention_dkv")(q, k, v, do, lse, delta)
    qs, ks, rs = _specs(bq, bk, d, True)
    dq = pl.pallas_call(
        functools.partial(_dq_kernel, scale=scale, causal=causal, bq=bq, bk=bk), grid=(bh, s // bq, s // bk),
        in_specs=[qs, ks, ks, qs, rs, rs], out_specs=qs, out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        scratch_shapes=[pltpu.VMEM((bq, d), jnp.float32)],
        interpret=interpret_params(), name="flash_attention_dq")(q, k, v, do, lse, delta)
    return dq, dk, dv


def flash_attention_fn(q, k, v, causal: bool = False, block_q: int = 128, block_k: int = 128):  # noqa: ANN001, ANN201
    """The JAX function: (B, H, S, D) attention through the forward kernel, the backward kernels for its VJP."""
    import jax

    b, h, s, d = q.shape
    bq, bk = min(block_q, s), min(block_k, s)

    @jax.custom_vjp
    def attend(q3, k3, v3):  # noqa: ANN001, ANN202
        return _forward(q3, k3, v3, causal, bq, bk)[0]

    def fwd(q3, k3, v3):  # noqa: ANN001, ANN202
        o, lse = _forward(q3, k3, v3, causal, bq, bk)
        return o, (q3, k3, v3, o, lse)

    def bwd(res, do):  # noqa: ANN001, ANN202
        return _backward(*res, do, causal, bq, bk)

    attend.defvjp(fwd, bwd)
    flat = [t.reshape(b * h, s, d) for t in (q, k, v)]
    return attend(*flat).reshape(b, h, s, d)


flash_attention = jax_op("torchtpu_examples::flash_attention", flash_attention_fn, static_argnums=(3, 4, 5))


def attention_eager(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """The same computation as torch ops: softmax(q k^T / sqrt(d)) v, materialising the S x S scores."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v
