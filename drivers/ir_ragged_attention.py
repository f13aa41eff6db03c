"""IR op `ragged_paged_attention`: what it computes, its attribute checks, its cost and its expansion.

The op is the real chip's ragged paged attention kernel (the production TPU plugin's, for vLLM): every request's
queries attend to that request's KV pages only, causally, optionally within a sliding window and with logit
soft-capping. Operands: `q` [T, H, D] (request r's q_lens[r] tokens at consecutive rows from sum(q_lens[:r]);
rows past sum(q_lens) are padding and give zeros), `kv` [slots, KVH, 2D] (the paged cache as one row per token
slot, K then V in the last axis, slot = page * page_tokens + i), `pages` [R, P] integer page table (request r's
pages in order; only its first ceil(ctx_lens[r] / page_tokens) are read). Result [T, H, D] in q's dtype.

The per-request query and context lengths are static attributes (host values the metadata builder has), so the
cost rule charges what the kernel does: per request q_len x ctx of MXU work and the KV pages it actually reads,
never the padded batch. A record without them is refused, not priced as something else.

`expand` writes the same computation over primitive IR ops (the pjrt emitter prints it); the sim's value rule is
drivers/sim/kernels_attention.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Builder, Op, TensorType, Value
    from torchtpu.sim.cost import CostModel, CostRecord

NAME = "ragged_paged_attention"
LENGTH_ATTRS = ("q_lens", "ctx_lens")
DTYPES = ("bfloat16", "float32")
PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")


def check(q: TensorType, kv: TensorType, pages: TensorType, q_lens: Any, ctx_lens: Any, page_tokens: Any,
          sliding_window: Any, precision: Any) -> None:
    """Raises naming what is wrong with an op's operands or attributes and what is valid."""
    if q_lens is None or ctx_lens is None:
        raise ValueError(f"{NAME}: the per-request q_lens and ctx_lens are required static attributes (tuples of "
                         "ints, one per request); without them the op's work is unknown")
    if not isinstance(q_lens, tuple) or not isinstance(ctx_lens, tuple) or len(q_lens) != len(ctx_lens) or not all(
            isinstance(n, int) for n in q_lens + ctx_lens):
        raise ValueError(f"{NAME}: q_lens and ctx_lens must be tuples of ints of one length, got {q_lens!r} and "
                         f"{ctx_lens!r}")
    if any(ql < 1 or ql > ctx for ql, ctx in zip(q_lens, ctx_lens)):
        raise ValueError(f"{NAME}: every request needs 1 <= q_len <= ctx_len, got q_lens={q_lens} "
                         f"ctx_lens={ctx_lens}")
    if len(q.shape) != 3 or len(kv.shape) != 3 or len(pages.shape) != 2:
        raise TypeError(f"{NAME}: q must be [T, H, D], kv [slots, KVH, 2D], pages [R, P]; got {q}, {kv}, {pages}")
    t, h, d = q.shape
    if q.dtype not in DTYPES or kv.dtype != q.dtype:
        raise TypeError(f"{NAME}: q and kv must share one dtype of {DTYPES}, got {q.dtype} and {kv.dtype}")
    if pages.dtype not in ("int32", "int64"):
        raise TypeError(f"{NAME}: pages must be int32 or int64, got {pages.dtype}")
    if kv.shape[2] != 2 * d or h % kv.shape[1]:
        raise TypeError(f"{NAME}: kv's last axis must be 2 x head dim {d} and {h} query heads must group over its "
                        f"{kv.shape[1]} KV heads; got {kv}")
    if not isinstance(page_tokens, int) or page_tokens < 1 or kv.shape[0] % page_tokens:
        raise ValueError(f"{NAME}: page_tokens must be a positive int dividing the {kv.shape[0]} slots, got "
                         f"{page_tokens!r}")
    if sum(q_lens) > t:
        raise ValueError(f"{NAME}: q_lens sum to {sum(q_lens)} tokens but q has {t} rows")
    if len(q_lens) > pages.shape[0] or any(-(-c // page_tokens) > pages.shape[1] for c in ctx_lens):
        raise ValueError(f"{NAME}: the page table {pages.shape} has too few rows or pages for ctx_lens={ctx_lens} "
                         f"at {page_tokens} tokens a page")
    if not isinstance(sliding_window, int) or sliding_window < 0:
        raise ValueError(f"{NAME}: sliding_window must be an int >= 0 (0: none), got {sliding_window!r}")
    if precision not in PRECISIONS:
        raise ValueError(f"{NAME}: precision {precision!r}; valid: {PRECISIONS}")


def first_key(q_len: int, ctx: int, sliding_window: int) -> int:
    """The first key position any of the request's queries sees (its window's start, else 0)."""
    return max(0, ctx - q_len - sliding_window + 1) if sliding_window else 0


def pages_read(q_len: int, ctx: int, page_tokens: int, sliding_window: int) -> int:
    """KV pages the kernel reads for one request: those holding keys some query of it attends to."""
    return -(-ctx // page_tokens) - first_key(q_len, ctx, sliding_window) // page_tokens


def cost(model: CostModel, op: Op) -> CostRecord:
    """The ragged kernel's work, request by request: QK^T and PV on the MXU over (G x q_len) x keys x D per KV head
    (keys: the request's context, or its window), the masked softmax's exp on the EUP, and HBM traffic of q, the
    KV pages it reads (each once), the page table and the output. Refuses a record without the lengths."""
    missing = [a for a in LENGTH_ATTRS if op.attr(a) is None]
    if missing:
        raise ValueError(f"IR op {NAME}: no cost without its per-request lengths ({', '.join(missing)} missing); "
                         "valid records carry q_lens and ctx_lens as static attributes (tuples of ints)")
    q, kv, pages = (v.type for v in op.inputs)
    check(q, kv, pages, op.attr("q_lens"), op.attr("ctx_lens"), op.attr("page_tokens"),
          op.attr("sliding_window", 0), op.attr("precision"))
    _, h, d = q.shape
    kvh = kv.shape[1]
    g = h // kvh
    pt, window, prec = op.attr("page_tokens"), op.attr("sliding_window", 0), op.attr("precision")
    page_bytes = pt * kvh * 2 * d * (kv.nbytes // max(math.prod(kv.shape), 1))
    records, read = [], 0
    for ql, ctx in zip(op.attr("q_lens"), op.attr("ctx_lens")):
        keys = ctx - first_key(ql, ctx, window)
        records.append(_product(model, kvh, g * ql, keys, d, q.dtype, prec, "attention_qk"))
        records.append(model.vpu("attention_softmax", kvh * g * ql * keys, 4.0, 0, 0, True))
        records.append(_product(model, kvh, g * ql, d, keys, q.dtype, prec, "attention_pv"))
        read += pages_read(ql, ctx, pt, window) * page_bytes
    rows = sum(op.attr("q_lens"))
    item = q.nbytes // max(math.prod(q.shape), 1)
    external = 2 * rows * h * d * item + read + len(op.attr("q_lens")) * pages.shape[1] * (pages.nbytes // max(
        math.prod(pages.shape), 1))
    return model.fuse(records, external, op=NAME)


def _product(model: CostModel, batch: int, m: int, n: int, k: int, dtype: str, precision: str, name: str
             ) -> CostRecord:
    """One of the kernel's products, in the cheaper of its two orientations (A B or (B^T A^T)^T: which operand
    the MXU holds and which streams), as a kernel writer or XLA picks; decode's few query rows stream through."""
    return min((model.matmul(batch, a, b, k, dtype, "float32", precision, op=name) for a, b in ((m, n), (n, m))),
               key=lambda r: r.mxu_seconds)


# ------------------------------------------------------------------------------------------- the expansion

def expand(b: Builder, q: Value, kv: Value, pages: Value, attrs: dict[str, Any]) -> Value:
    """The op over primitive IR ops (gathers, two dot_generals per request, a masked float32 softmax); what the
    pjrt driver emits. Same math as the sim's value rule."""
    t, h, d = q.shape
    kvh = kv.shape[1]
    g = h // kvh
    pt, window, cap = attrs["page_tokens"], attrs.get("sliding_window", 0), attrs.get("soft_cap", 0.0)
    dt = q.dtype
    outs, start = [], 0
    for r, (ql, ctx) in enumerate(zip(attrs["q_lens"], attrs["ctx_lens"])):
        n_pages = -(-ctx // pt)
        row = _slice(b, pages, (r, 0), (r + 1, n_pages))
        row = _one(b, "convert", row, dtype="int64")
        base = _one(b, "multiply", row, _const(b, pt, row.shape, "int64"))
        base = _one(b, "broadcast_in_dim", base, shape=(1, n_pages, pt), broadcast_dimensions=(0, 1))
        offs = _one(b, "iota", shape=(1, n_pages, pt), dtype="int64", dimension=2)
        slots = _one(b, "reshape", _one(b, "add", base, offs), shape=(n_pages * pt,))
        slots = _slice(b, slots, (0,), (ctx,))
        kvr = _one(b, "index_select", kv, slots, dimension=0)  # [ctx, KVH, 2D]
        kvr = _one(b, "transpose", kvr, permutation=(1, 0, 2))  # [KVH, ctx, 2D]
        k = _slice(b, kvr, (0, 0, 0), (kvh, ctx, d))
        v = _slice(b, kvr, (0, 0, d), (kvh, ctx, 2 * d))
        qr = _slice(b, q, (start, 0, 0), (start + ql, h, d))
        qr = _one(b, "transpose", _one(b, "reshape", qr, shape=(ql, kvh, g, d)), permutation=(1, 2, 0, 3))
        qr = _one(b, "reshape", qr, shape=(kvh, g * ql, d))
        s = _dot(b, qr, k, (2,), (2,), attrs["precision"])  # [KVH, G*ql, ctx] float32
        s = _one(b, "multiply", s, _const(b, attrs["scale"], s.shape, "float32"))
        if cap:
            c = _const(b, cap, s.shape, "float32")
            s = _one(b, "multiply", _one(b, "tanh", _one(b, "divide", s, c)), c)
        qpos = _one(b, "iota", shape=(ql, ctx), dtype="int64", dimension=0)
        qpos = _one(b, "add", qpos, _const(b, ctx - ql, (ql, ctx), "int64"))
        kpos = _one(b, "iota", shape=(ql, ctx), dtype="int64", dimension=1)
        allowed = _one(b, "compare", kpos, qpos, direction="LE")
        if window:
            lo = _one(b, "subtract", qpos, _const(b, window, (ql, ctx), "int64"))
            allowed = _one(b, "and", allowed, _one(b, "compare", kpos, lo, direction="GT"))
        allowed = _one(b, "broadcast_in_dim", allowed, shape=(kvh, g, ql, ctx), broadcast_dimensions=(2, 3))
        allowed = _one(b, "reshape", allowed, shape=s.shape)
        s = _one(b, "select", allowed, s, _const(b, float("-inf"), s.shape, "float32"))
        top = _one(b, "reduce", s, kind="max", dimensions=(2,))
        e = _one(b, "exponential", _one(b, "subtract", s, _bcast(b, top, s.shape)))
        total = _one(b, "reduce", e, kind="sum", dimensions=(2,))
        p = _one(b, "divide", e, _bcast(b, total, s.shape))
        if dt != "float32":
            p = _one(b, "convert", p, dtype=dt)
        o = _dot(b, p, v, (2,), (1,), attrs["precision"])  # [KVH, G*ql, D] float32
        o = _one(b, "transpose", _one(b, "reshape", o, shape=(kvh, g, ql, d)), permutation=(2, 0, 1, 3))
        outs.append(_one(b, "convert", _one(b, "reshape", o, shape=(ql, h, d)), dtype=dt))
        start += ql
    if start < t:
        outs.append(_const(b, 0.0, (t - start, h, d), dt))
    return outs[0] if len(outs) == 1 else _one(b, "concatenate", *outs, dimension=0)


def _one(b: Builder, name: str, *inputs: Value, **attrs: Any) -> Value:
    return b.emit(name, list(inputs), **attrs)[0]


def _const(b: Builder, value: float, shape: Sequence[int], dtype: str) -> Value:
    return _one(b, "constant", value=value, shape=tuple(shape), dtype=dtype)


def _slice(b: Builder, x: Value, start: Sequence[int], limit: Sequence[int]) -> Value:
    return _one(b, "slice", x, start=tuple(start), limit=tuple(limit), strides=(1,) * len(start))


def _bcast(b: Builder, x: Value, shape: tuple[int, ...]) -> Value:
    return _one(b, "broadcast_in_dim", x, shape=shape, broadcast_dimensions=tuple(range(len(x.shape))))


def _dot(b: Builder, lhs: Value, rhs: Value, lc: tuple[int, ...], rc: tuple[int, ...], precision: str) -> Value:
    return _one(b, "dot_general", lhs, rhs, lhs_batch=(0,), rhs_batch=(0,), lhs_contract=lc, rhs_contract=rc,
                precision=precision, out_dtype="float32")
