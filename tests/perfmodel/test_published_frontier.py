"""Published v7x (Ironwood) MaxText runs (tpu-recipes): our FLOPs per token against MaxText's own count for MLA,
sliding-window, MoE and 128k-context models, the `save_attention` remat policy by hand, and each case's error."""

import pytest
from torchtpu.perfmodel.config import load_config
from torchtpu.perfmodel.flops import attention_flops_per_token, flops_per_token
from torchtpu.perfmodel.published import IRONWOOD_CASES, VALIDATION_CASES
from torchtpu.perfmodel.remat import recomputed_ops, saved_widths
from torchtpu.perfmodel.training import train_step
from torchtpu.perfmodel.validation import validate


def test_flops_per_token_match_maxtext_published_counts():
    """TFLOP/s per chip / tokens/s per chip is MaxText's model FLOPs per token (causal attention halved): ours
    must agree for the latent-attention (DeepSeek-V3), sliding-window (gpt-oss), MoE and 128k-context runs."""
    assert {c.model for c in IRONWOOD_CASES} >= {"deepseek-v3", "gpt-oss-120b", "qwen3-235b-a22b", "llama3.1-70b"}
    for c in IRONWOOD_CASES:
        published = c.tflops_per_chip * 1e12 / c.tokens_per_chip_s
        ours = flops_per_token(load_config(c.model), c.seq_len, causal=c.convention)
        assert ours == pytest.approx(published, rel=0.005), (c.id, ours / 1e9, published / 1e9)
        assert c.mfu == pytest.approx(c.tflops_per_chip / 2307)


def test_sliding_window_halves_gpt_oss_attention_flops_by_hand():
    """gpt-oss-120b at 8192: 18 global layers see S/2 keys on average, 18 window-128 layers the causal mean
    (128 * 129 / 2 + (8192 - 128) * 128) / 8192; per key 2 * 64 heads * (64 + 64) FLOPs, x3 for training."""
    g = load_config("gpt-oss-120b")
    local = (128 * 129 / 2 + (8192 - 128) * 128) / 8192
    assert 3 * attention_flops_per_token(g, 8192, "half") == pytest.approx(3 * 2 * 64 * 128 * 18 * (4096 + local))
    # the rest does not depend on the sequence
    rest = [flops_per_token(g, s, causal="half") - 3 * attention_flops_per_token(g, s, "half") for s in (4096, 8192)]
    assert rest[0] == pytest.approx(rest[1])


def test_save_attention_policy_by_hand():
    assert "attention" not in recomputed_ops("save_attention") and "attention" in recomputed_ops("save_qkv")
    assert recomputed_ops("save_attention") == recomputed_ops("save_qkv") - {"attention"}
    # saved per token and layer: layer input d, then q + k + v and the attention output (q wide)
    assert saved_widths("save_attention", d=8192, q=8192, kv=1024, f_in=2 * 28672, f=28672) == (8192.0, 18432.0)
    kw = dict(global_batch=64, seq_len=8192, block_q=2048, block_kv=2048)
    a = train_step("llama3.1-70b", "v7x", 64, "fsdp=64", remat="save_attention", **kw)
    q = train_step("llama3.1-70b", "v7x", 64, "fsdp=64", remat="save_qkv", **kw)
    assert a.step_seconds < q.step_seconds and a.memory.activations > q.memory.activations
    # the saved attention output: 80 layers x 8192 wide x tokens per chip x 2 bytes
    assert a.memory.activations - q.memory.activations == pytest.approx(80 * 8192 * 8192 * 2)


def test_ironwood_cases_are_validation_only_with_their_errors():
    assert all(c in VALIDATION_CASES and c.role == "validation" and "tpu-recipes" in c.source
               for c in IRONWOOD_CASES)
    rows = validate(IRONWOOD_CASES)
    for r in rows:
        assert r.rel_error == pytest.approx(r.case.expected_error, abs=0.01), (r.case.id, r.rel_error)
        mem = r.report.memory
        # the 128k recipe saves q/k/v, attention output and mlpwo on device: our accounting is 2% over HBM (docs)
        assert mem.fits or ("128k" in r.case.id and mem.total < 1.05 * mem.usable), (r.case.id, mem.total / 2**30)
    # every Ironwood case within the 15% since the measured splash efficiency and the gmm tile model
    assert all(abs(r.rel_error) <= 0.15 for r in rows), [(r.case.id, r.rel_error) for r in rows]
