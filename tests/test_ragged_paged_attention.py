"""`torch.ops.torchtpu.ragged_paged_attention` (IR op ragged_paged_attention): values against a CPU reference
written per request in float64, in every eager mode and under torch.compile; its cost rule charges the ragged
work (per request q_len x keys, the pages read) and refuses a record without the per-request lengths."""

from __future__ import annotations

import math

import pytest
import torch
from torchtpu.drivers.ir import OPS, Builder, Op
from torchtpu.sim.cost import CostModel

import torchtpu

PT = 16  # tokens a page


def reference(q: torch.Tensor, kv: torch.Tensor, pages: torch.Tensor, q_lens: list[int], ctx_lens: list[int],
              scale: float, window: int = 0, cap: float = 0.0) -> torch.Tensor:
    """Each request's queries against its own cache rows, causal (and windowed), float64."""
    t, h, d = q.shape
    kvh = kv.shape[1]
    out = torch.zeros(t, h, d, dtype=torch.float64)
    start = 0
    for r, (ql, ctx) in enumerate(zip(q_lens, ctx_lens)):
        slots = (pages[r, :, None] * PT + torch.arange(PT)).reshape(-1)[:ctx]
        k = kv[slots, :, :d].double().repeat_interleave(h // kvh, dim=1)  # [ctx, H, D]
        v = kv[slots, :, d:].double().repeat_interleave(h // kvh, dim=1)
        s = torch.einsum("qhd,khd->hqk", q[start:start + ql].double(), k) * scale
        if cap:
            s = torch.tanh(s / cap) * cap
        qpos = torch.arange(ctx - ql, ctx)[:, None]
        kpos = torch.arange(ctx)[None, :]
        ok = kpos <= qpos
        if window:
            ok &= kpos > qpos - window
        s = s.masked_fill(~ok, float("-inf"))
        out[start:start + ql] = torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), v)
        start += ql
    return out


def batch(dtype: torch.dtype = torch.float32) -> tuple:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(16, 4, 8, generator=g).to(dtype)  # 9 real rows, 7 padding
    kv = torch.randn(8 * PT, 2, 16, generator=g).to(dtype)
    pages = torch.tensor([[5, 0, 0], [2, 7, 0], [1, 4, 6], [3, 0, 0]])
    return q, kv, pages, [3, 1, 4, 1], [3, 20, 40, 16]


@pytest.mark.parametrize("window,cap", [(0, 0.0), (8, 0.0), (0, 5.0)])
def test_values_match_the_per_request_reference(window: int, cap: float) -> None:
    q, kv, pages, ql, ctx = batch()
    want = reference(q, kv, pages, ql, ctx, 0.35, window, cap)
    with torchtpu.precision("HIGHEST"):
        got = torch.ops.torchtpu.ragged_paged_attention(q.to("tpu"), kv.to("tpu"), pages.to("tpu"), ql, ctx, PT,
                                                        0.35, window, cap).cpu()
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)
    assert got[sum(ql):].abs().max() == 0


def test_bfloat16_within_one_probability_rounding() -> None:
    q, kv, pages, ql, ctx = batch(torch.bfloat16)
    got = torch.ops.torchtpu.ragged_paged_attention(q.to("tpu"), kv.to("tpu"), pages.to("tpu"), ql, ctx, PT, 0.35)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.cpu().double(), reference(q, kv, pages, ql, ctx, 0.35), rtol=2e-2, atol=2e-2)


def test_every_eager_mode_and_compile_are_bit_identical() -> None:
    q, kv, pages, ql, ctx = batch()
    args = (q.to("tpu"), kv.to("tpu"), pages.to("tpu"))

    def run(*a: torch.Tensor) -> torch.Tensor:
        return torch.ops.torchtpu.ragged_paged_attention(*a, ql, ctx, PT, 0.35, 8, 0.0) * 2

    outs = []
    for mode in ("DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"):
        with torchtpu.eager_mode(mode):
            outs.append(run(*args).cpu())
    outs.append(torch.compile(run, backend="tpu", fullgraph=True)(*args).cpu())
    for o in outs[1:]:
        assert torch.equal(o, outs[0])


def test_a_page_outside_the_cache_raises_naming_the_request() -> None:
    q, kv, pages, ql, ctx = batch()
    pages[2, 1] = 99
    with pytest.raises(IndexError, match="request 2's page table .* outside the cache's 8 pages"):
        torch.ops.torchtpu.ragged_paged_attention(q.to("tpu"), kv.to("tpu"), pages.to("tpu"), ql, ctx, PT,
                                                  0.35).cpu()


# ------------------------------------------------------------------------------------------------ cost rule

def _op(q_lens: tuple[int, ...], ctx_lens: tuple[int, ...], pages: int, heads: int = 8, kv_heads: int = 2,
        d: int = 128, dtype: str = "bfloat16", **extra: object) -> Op:
    b = Builder()
    q = b.input((sum(q_lens), heads, d), dtype)
    kv = b.input((4096 * PT, kv_heads, 2 * d), dtype)
    table = b.input((len(q_lens), pages), "int32")
    b.emit("ragged_paged_attention", [q, kv, table], q_lens=q_lens, ctx_lens=ctx_lens, page_tokens=PT,
           scale=0.1, precision="DEFAULT", **extra)
    return b.ops[0]


def _cost(op: Op):
    return OPS["ragged_paged_attention"].cost(CostModel("v5e"), op)


def test_a_ragged_batch_costs_its_own_work_not_the_padded_batch() -> None:
    """One 200-token context and seven of 20, decoding: charged for 200 + 7 x 20 keys and 13 + 7 x 2 pages, where
    the same batch padded to its longest request reads 8 x 13 pages and does 8 x 200 keys of work."""
    ragged = _cost(_op((1,) * 8, (200,) + (20,) * 7, 16))
    padded = _cost(_op((1,) * 8, (200,) * 8, 16))
    page_bytes = PT * 2 * 2 * 128 * 2
    assert ragged.flops / padded.flops == pytest.approx((200 + 7 * 20) / (8 * 200), rel=1e-9)
    q_out_bytes = 2 * 8 * 8 * 128 * 2
    table = 8 * 16 * 4
    assert ragged.hbm_bytes == q_out_bytes + (13 + 7 * 2) * page_bytes + table
    assert padded.hbm_bytes == q_out_bytes + 8 * 13 * page_bytes + table
    assert ragged.seconds < padded.seconds
    long_ragged = _cost(_op((1,) * 8, (2000,) + (200,) * 7, 125))
    long_padded = _cost(_op((1,) * 8, (2000,) * 8, 125))
    assert long_ragged.seconds < 0.4 * long_padded.seconds  # (2000 + 7 x 200) / (8 x 2000) of the keys


def test_prefill_is_charged_q_len_times_keys_on_the_mxu() -> None:
    op = _cost(_op((512, 64), (512, 576), 64))
    # QK^T and PV: 2 x (2 flops x H x q_len x keys x D) per request (keys: the whole context, the kernel masks)
    want = sum(2 * 2 * 8 * ql * ctx * 128 for ql, ctx in ((512, 512), (64, 576)))
    assert op.flops == pytest.approx(want + 4 * 8 * (512 * 512 + 64 * 576), rel=1e-9)
    assert op.bound == "mxu"


def test_a_sliding_window_reads_only_the_window_pages() -> None:
    full = _cost(_op((1,), (4000,), 250))
    windowed = _cost(_op((1,), (4000,), 250, sliding_window=128))
    page_bytes = PT * 2 * 2 * 128 * 2
    assert full.hbm_bytes - windowed.hbm_bytes == (250 - (math.ceil(4000 / PT) - (4000 - 128) // PT)) * page_bytes


def test_the_cost_rule_refuses_a_record_without_lengths() -> None:
    op = _op((1, 1), (5, 9), 1)
    for drop in ("q_lens", "ctx_lens"):
        bare = Op(op.name, op.inputs, tuple((k, v) for k, v in op.attrs if k != drop), op.outputs)
        with pytest.raises(ValueError, match=f"ragged_paged_attention: no cost without its per-request lengths "
                                             f"\\({drop} missing\\)"):
            _cost(bare)


@pytest.mark.parametrize("attrs,match", [
    ({"q_lens": None}, "q_lens and ctx_lens are required static attributes"),
    ({"q_lens": (1,)}, "tuples of ints of one length"),
    ({"q_lens": (6, 1)}, "1 <= q_len <= ctx_len"),
    ({"ctx_lens": (5, 99)}, "page table .* too few rows or pages"),
    ({"page_tokens": 7}, "page_tokens must be a positive int dividing"),
    ({"sliding_window": -1}, "sliding_window must be an int >= 0"),
    ({"precision": "FAST"}, "precision 'FAST'; valid"),
])
def test_bad_records_are_refused_when_built(attrs: dict, match: str) -> None:
    b = Builder()
    q, kv, table = b.input((4, 4, 8), "float32"), b.input((64, 2, 16), "float32"), b.input((2, 2), "int64")
    base = {"q_lens": (1, 1), "ctx_lens": (5, 9), "page_tokens": PT, "scale": 0.3, "precision": "HIGHEST"}
    with pytest.raises(ValueError, match=match):
        b.emit("ragged_paged_attention", [q, kv, table], **{**base, **attrs})
