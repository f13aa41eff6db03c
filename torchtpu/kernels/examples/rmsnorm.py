"""Fused RMSNorm: one Pallas kernel reads each row block once and writes it once (eager runs four ops).

`rmsnorm(x, weight, eps, block_rows)`: x (..., D) is viewed as (rows, D); the grid walks row blocks of
`block_rows` rows (rows must divide); the weight's block index never changes, so it is fetched once. The
backward pass is jax.numpy (a custom_vjp), so training uses the kernel forward and XLA's backward.
"""

from __future__ import annotations

import functools

import torch

from torchtpu.kernels import interpret_params, jax_op


def _kernel(x_ref, w_ref, o_ref, *, eps: float):  # noqa: ANN001, ANN202 - Pallas refs
    import jax
    import jax.numpy as jnp

    x = x_ref[...].astype(jnp.float32)
    scale = jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps)
    o_ref[...] = (x * scale * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


def _forward(x, weight, eps: float, block_rows: int):  # noqa: ANN001, ANN202 - JAX arrays
    import jax
    from jax.experimental import pallas as pl

    d = x.shape[-1]
    rows = x.size // d
    if rows % block_rows:
        raise ValueError(f"rmsnorm: {rows} rows do not divide into blocks of {block_rows}; valid: a block_rows "
                         "that divides the number of rows")
    flat = x.reshape(rows, d)
    out = pl.pallas_call(
        functools.partial(_kernel, eps=eps), grid=(rows // block_rows,),
        in_specs=[pl.BlockSpec((block_rows, d), lambda i: (i, 0)), pl.BlockSpec((1, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block_rows, d), lambda i: (i, 0)),
        out_shape=jax.ShapeDtypeStruct(flat.shape, x.dtype), interpret=interpret_params(),
        name="rmsnorm")(flat, weight.reshape(1, d))
    return out.reshape(x.shape)


def _reference(x, weight, eps: float):  # noqa: ANN001, ANN202
    import jax
    import jax.numpy as jnp

    xf = x.astype(jnp.float32)
    scale = jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    return (xf * scale * weight.astype(jnp.float32)).astype(x.dtype)


def rmsnorm_fn(x, weight, eps: float = 1e-6, block_rows: int = 8):  # noqa: ANN001, ANN201
    """The JAX function: the Pallas kernel forward, the jax.numpy formula's gradient backward."""
    import jax

    @jax.custom_vjp
    def f(x, w):  # noqa: ANN001, ANN202
        return _forward(x, w, eps, block_rows)

    def fwd(x, w):  # noqa: ANN001, ANN202
        return f(x, w), (x, w)

    def bwd(res, g):  # noqa: ANN001, ANN202
        return jax.vjp(lambda a, b: _reference(a, b, eps), *res)[1](g)

    f.defvjp(fwd, bwd)
    return f(x, weight)


rmsnorm = jax_op("torchtpu_examples::rmsnorm", rmsnorm_fn, static_argnums=(2, 3))


def rmsnorm_eager(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """The same computation as torch ops (the baseline the kernel is tested and timed against)."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
