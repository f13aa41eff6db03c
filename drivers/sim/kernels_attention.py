"""The sim's value rule of IR op `ragged_paged_attention` (drivers/ir_ragged_attention.py): per request, its
queries against the K/V rows of its own pages, both products on the MXU model at the op's precision (as IR op
dot_general), scores and softmax in float32, the probabilities rounded to the operands' dtype for the PV product
(as the MXU takes them), the result stored in q's dtype."""

from __future__ import annotations

import numpy as np
from torchtpu.drivers.ir import Op
from torchtpu.drivers.ir_ragged_attention import first_key
from torchtpu.drivers.sim.kernels import kernel, store
from torchtpu.sim import mxu


@kernel("ragged_paged_attention")
def _ragged_paged_attention(op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    q, kv, pages = args
    t, h, d = q.shape
    kvh = kv.shape[1]
    g = h // kvh
    dtype = op.outputs[0].dtype
    pt, scale = op.attr("page_tokens"), np.float32(op.attr("scale"))
    precision = op.attr("precision")
    window, cap = op.attr("sliding_window", 0), np.float32(op.attr("soft_cap", 0.0))
    out = np.zeros((t, h, d), np.float32)
    start = 0
    for r, (ql, ctx) in enumerate(zip(op.attr("q_lens"), op.attr("ctx_lens"))):
        lo = first_key(ql, ctx, window)
        n_pages = -(-ctx // pt)
        if pages[r, :n_pages].min(initial=0) < 0 or pages[r, :n_pages].max(initial=0) >= kv.shape[0] // pt:
            raise IndexError(f"ragged_paged_attention: request {r}'s page table {pages[r, :n_pages].tolist()} "
                             f"points outside the cache's {kv.shape[0] // pt} pages")
        slots = (pages[r, :n_pages].astype(np.int64)[:, None] * pt + np.arange(pt)).reshape(-1)[lo:ctx]
        rows = kv[slots]  # [keys, KVH, 2D]
        k = np.ascontiguousarray(rows[..., :d].transpose(1, 2, 0))  # [KVH, D, keys]
        v = np.ascontiguousarray(rows[..., d:].transpose(1, 0, 2))  # [KVH, keys, D]
        qr = q[start:start + ql].reshape(ql, kvh, g, d).transpose(1, 2, 0, 3).reshape(kvh, g * ql, d)
        s = mxu.matmul(qr, k, precision=precision, out_dtype=np.float32) * scale  # [KVH, G*ql, keys]
        if cap:
            s = np.tanh(s / cap) * cap
        qpos = np.arange(ctx - ql, ctx)[:, None]
        kpos = np.arange(lo, ctx)[None, :]
        allowed = kpos <= qpos
        if window:
            allowed &= kpos > qpos - window
        s = np.where(np.tile(allowed, (g, 1))[None], s, np.float32(-np.inf))
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        p = e / e.sum(axis=-1, keepdims=True)
        p = store(p, dtype)
        o = mxu.matmul(p, v, precision=precision, out_dtype=np.float32).reshape(kvh, g, ql, d).transpose(2, 0, 1, 3)
        out[start:start + ql] = o.reshape(ql, h, d)
        start += ql
    return [store(out, dtype)]
