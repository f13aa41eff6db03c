"""Issue 25 additions, formulas against hand-derived values: MLA, sliding windows, long context (CP all-gather
and ring), pipeline parallelism, paged KV, speculative decoding, quantized serving."""

import pytest
from torchtpu.perfmodel import longctx, pipeline
from torchtpu.perfmodel.config import from_hf_config, load_config
from torchtpu.perfmodel.flops import attention_flops_per_token, keys_per_query, param_counts
from torchtpu.perfmodel.memory import kv_cache_bytes
from torchtpu.perfmodel.ops import attention_cost
from torchtpu.perfmodel.pricing import cost_per_million_tokens
from torchtpu.perfmodel.serving import serve, speculative_tokens_per_round
from torchtpu.perfmodel.training import train_step


def test_mla_parameters_and_flops_by_hand():
    c = load_config("deepseek-v3")
    assert c.is_mla and (c.head_dim, c.v_head_dim) == (192, 128)
    # per layer: q 7168*1536 + 1536*128*192, kv 7168*(512+64) + 512*128*(128+128), out 128*128*7168
    attn = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    p = param_counts(c)
    assert p.attention_per_layer == attn == 187_105_280
    assert p.total == pytest.approx(671e9, rel=0.005) and p.active == pytest.approx(37e9, rel=0.03)
    # attention core per token and layer: 2 * S * H * (192 + 128) ('full'), 61 layers
    assert attention_flops_per_token(c, 4096, "full") == 61 * 2 * 4096 * 128 * 320
    assert longctx.kv_cache_per_token(c, tp=8) == 576  # latent 512 + rope 64, not split over tp
    assert kv_cache_bytes(c, 2, 1000) == 2 * 1000 * 576 * 61 * 2


def test_sliding_window_keys_flops_and_cache():
    assert keys_per_query(8192, 0, True, "half") == 4096
    assert keys_per_query(8192, 128, True, "full") == 128
    # exact causal mean with window W < S: (W(W+1)/2 + (S-W)W) / S
    assert keys_per_query(1024, 128, True, "half") == pytest.approx((128 * 129 / 2 + 896 * 128) / 1024)
    g = load_config("gpt-oss-120b")
    assert g.layer_attention()[:2] == ["local", "global"] and g.sliding_window == 128
    per_key = 2 * 64 * (64 + 64)
    assert attention_flops_per_token(g, 65536, "full") == 18 * per_key * 65536 + 18 * per_key * 128
    # cache: 18 global layers keep 65536 tokens, 18 local ones 128; 8 kv heads x (64 + 64)
    assert kv_cache_bytes(g, 1, 65536) == (18 * 65536 + 18 * 128) * 8 * 128 * 2
    # paging: 1000 tokens in 64-token pages allocate 1024
    assert kv_cache_bytes(g, 1, 1000, page_tokens=64) == (18 * 1024 + 18 * 128) * 8 * 128 * 2
    gemma3 = from_hf_config({"model_type": "gemma3_text", "hidden_size": 2560, "num_hidden_layers": 34,
                             "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                             "intermediate_size": 10240, "vocab_size": 262208, "sliding_window": 1024,
                             "sliding_window_pattern": 6, "hidden_act": "gelu_pytorch_tanh"})
    assert gemma3.attention_pattern == "LLLLLG"
    qwen = from_hf_config({"hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8,
                           "intermediate_size": 4096, "vocab_size": 1000, "sliding_window": 4096,
                           "use_sliding_window": False})
    assert qwen.sliding_window == 0 and qwen.layer_attention() == ["global", "global"]


def test_windowed_flash_blocks_and_mla_attention_flops():
    full = attention_cost("v5p", 1, 8, 65536, 65536, 128, block_q=512, block_kv=512)
    local = attention_cost("v5p", 1, 8, 65536, 65536, 128, block_q=512, block_kv=512, window=1024)
    # 128 q blocks; q block i starts at 512 i, whose window reaches key 512 i - 1023 in block i - 2: blocks
    # i-2, i-1, i (rows 0 and 1: 1 and 2 blocks); per pair 2 * 512 * 512 * (128 + 128) FLOPs per head
    assert local.flops == pytest.approx(2 * 8 * (3 * 128 - 2 - 1) * 512 * 512 * 256)
    assert local.flops < full.flops / 20
    mla = attention_cost("v5p", 1, 16, 4096, 4096, 192, v_head_dim=128, causal=False)
    assert mla.flops == pytest.approx(2 * 16 * 4096 * 4096 * (192 + 128))
    bwd = attention_cost("v5p", 1, 16, 4096, 4096, 192, v_head_dim=128, causal=False, backward=True)
    assert bwd.flops == pytest.approx(2 * 16 * 4096 * 4096 * (3 * 192 + 2 * 128))
    with pytest.raises(ValueError):
        attention_cost("v5p", 1, 8, 1024, 1024, 128, causal=False, window=128)


def test_context_parallel_volumes_and_ring_overlap():
    cfg = load_config("llama3.1-8b")
    v = longctx.cp_volumes(cfg, 2, 262144, 16, 2, 2)
    assert v.gathered_bytes == 2 * 262144 * (4 * 128 + 4 * 128) * 2  # 8 kv heads / tp 2, K and V, bf16
    assert v.shard_bytes == v.gathered_bytes / 16 and v.halo_bytes == 0
    assert longctx.cp_volumes(cfg, 1, 65536, 8, 1, 2, window=1024).halo_bytes == 1024 * 2048 * 2
    assert longctx.ring_exposed_seconds(8.0, 0.4, 16) == 0.0  # 0.4 s transfer < 0.5 s block: hidden
    assert longctx.ring_exposed_seconds(8.0, 0.7, 16) == pytest.approx(15 * 0.2)
    assert longctx.cp_working_bytes(cfg, 1, 65536, 8, 1, 2, "ring") == 2 * longctx.cp_working_bytes(
        cfg, 1, 65536, 8, 1, 2, "all_gather") / 8
    kw = dict(global_batch=8, seq_len=131072, remat="full")
    ag = train_step("llama3.1-8b", "v5p", 64, "fsdp=8,cp=8", **kw)
    ring = train_step("llama3.1-8b", "v5p", 64, "fsdp=8,cp=8", cp_mode="ring", **kw)
    assert ag.comm_seconds["ici:cp_ag_kv"] > 0 and "exposed:cp_ring_kv" in ring.comm_seconds
    assert ring.memory.working < ag.memory.working and ring.cp_mode == "ring"
    with pytest.raises(ValueError, match="context-parallel mode"):
        train_step("llama3.1-8b", "v5p", 64, "fsdp=8,cp=8", cp_mode="zigzag", **kw)


def test_long_context_attention_dominates_and_gpt_oss_windows_help():
    short = train_step("llama3.1-8b", "v5p", 256, "fsdp=32,cp=8", global_batch=32, seq_len=8192)
    long = train_step("llama3.1-8b", "v5p", 256, "fsdp=32,cp=8", global_batch=1, seq_len=262144)
    assert long.step_seconds > short.step_seconds  # same tokens, quadratic attention
    dense_attn = train_step("gpt-oss-120b", "v5p", 256, "fsdp=32,ep=8", global_batch=32, seq_len=65536)
    glob = load_config("gpt-oss-120b").with_(attention_pattern="", sliding_window=0)
    all_global = train_step(glob, "v5p", 256, "fsdp=32,ep=8", global_batch=32, seq_len=65536)
    assert dense_attn.step_seconds < 0.8 * all_global.step_seconds


def test_pipeline_formulas_and_step():
    assert pipeline.bubble_fraction(4, 16) == 3 / 16
    assert pipeline.bubble_fraction(4, 16, "interleaved", 2) == 3 / 32
    assert pipeline.inflight_fraction(4, 16) == 4 / 16
    assert pipeline.inflight_fraction(4, 16, "interleaved", 2) == pytest.approx((4 + 3 / 2) / 16)
    assert pipeline.inflight_fraction(4, 16, "gpipe") == 1.0
    with pytest.raises(ValueError):
        pipeline.check(30, 4, 8)
    base = dict(global_batch=64, seq_len=4096, remat="full")
    flat = train_step("llama3.1-70b", "v5p", 256, "fsdp=64,tp=4", **base)
    pp = train_step("llama3.1-70b", "v5p", 256, "fsdp=16,tp=4,pp=4", **base)
    inter = train_step("llama3.1-70b", "v5p", 256, "fsdp=16,tp=4,pp=4", schedule="interleaved",
                       virtual_stages=2, **base)
    # 64 sequences / 16 data shards = 4 microbatches of one sequence: bubble (4 - 1) / 4 of the stage's time
    layers = sum(v for k, v in pp.breakdown.items() if k.startswith("compute_") and k != "compute_embedding_logits")
    assert pp.breakdown["pipeline_bubble"] == pytest.approx(3 / 4 * layers, rel=0.05)
    assert inter.breakdown["pipeline_bubble"] == pytest.approx(pp.breakdown["pipeline_bubble"] / 2)
    # a stage holds 80/4 layers + one embedding table, sharded 16 x 4, float32
    pc = param_counts(load_config("llama3.1-70b"))
    stage = (pc.total - pc.embedding - pc.unembedding) / 4 + pc.embedding
    assert pp.memory.weights == pytest.approx(stage / 64 * 4)
    assert flat.memory.weights == pytest.approx(pc.total / 256 * 4)
    assert pp.comm_seconds["ici:pp_send"] > 0
    with pytest.raises(ValueError, match="microbatches"):
        train_step("llama3.1-70b", "v5p", 256, "fsdp=16,tp=4,pp=4", microbatches=3, **base)


def test_speculative_decoding_quant_and_paged_serving():
    assert speculative_tokens_per_round(0.8, 4) == pytest.approx((1 - 0.8**5) / 0.2)
    assert speculative_tokens_per_round(1.0, 3) == 4.0
    base = dict(tp=4, batch=8, prompt_len=4096, gen_len=256)
    plain = serve("llama3.1-70b", "v6e", 8, **base)
    spec = serve("llama3.1-70b", "v6e", 8, draft="llama3.1-8b", acceptance=0.8, gamma=4, **base)
    assert spec.tokens_per_round == pytest.approx(3.3616)
    b = spec.breakdown
    assert spec.decode_step_seconds == pytest.approx((4 * b["decode_draft_step"] + b["decode_verify"]) / 3.3616)
    assert spec.decode_step_seconds < plain.decode_step_seconds
    with pytest.raises(ValueError, match="acceptance"):
        serve("llama3.1-70b", "v6e", 8, draft="llama3.1-8b", **base)
    w8 = serve("llama3.1-70b", "v6e", 8, quant="int8", **base)
    assert w8.memory.weights == pytest.approx(plain.memory.weights / 2)
    assert w8.decode_step_seconds < 0.8 * plain.decode_step_seconds  # HBM-bound decode reads half the bytes
    with pytest.raises(ValueError, match="fp8"):
        serve("llama3.1-8b", "v5e", 8, quant="fp8_w8a8", tp=1)
    paged = serve("llama3.1-8b", "v5e", 8, tp=1, batch=4, prompt_len=1000, gen_len=100, page_tokens=256)
    flat = serve("llama3.1-8b", "v5e", 8, tp=1, batch=4, prompt_len=1000, gen_len=100)
    assert paged.memory.kv_cache == pytest.approx(flat.memory.kv_cache * 1280 / 1100)  # 5 pages of 256
    mla = serve("deepseek-v3", "v5p", 64, tp=8, ep=8, batch=64, prompt_len=32768, gen_len=512, quant="fp8")
    assert mla.memory.kv_cache < 64 * 33280 * 61 * 576 * 2 * 1.001 and mla.decode_step_seconds > 0


def test_prices_cite_or_refuse():
    assert cost_per_million_tokens(2000.0, "v6e") == pytest.approx(2.70 / 3600 / 2000 * 1e6)
    with pytest.raises(ValueError, match="v7x"):
        cost_per_million_tokens(2000.0, "v7x")
    assert cost_per_million_tokens(2000.0, "v7x", {"v7x": 5.0}) == pytest.approx(5.0 / 3600 / 2000 * 1e6)


def test_search_non_power_of_two_multislice_cp_pp_and_reasons():
    from torchtpu.perfmodel.layout_search import search

    # PaLM-like: 2 pods x 3072 v4 chips over DCN, batch 2048: only tp in {3, 6, 12, ...} splits the batch
    kw = dict(n_slices=2, global_batch=2048, seq_len=2048, remats=("full",))
    res = search("palm-540b", "v4", 6144, dcn_bw=3.3e9, **kw)
    assert res.best is not None and res.best.layout.tp in (3, 6, 12) and res.best.layout.dcn_size == 2
    assert res.rejected["batch"] > 0 and "data shards" in res.examples["batch"]
    none = search("palm-540b", "v4", 6144, **kw)  # v4 has no DCN bandwidth in the chip table
    assert none.best is None and none.rejected["dcn"] > 0 and "dcn:" in none.explain()
    tight = search("llama3.1-70b", "v5e", 24, global_batch=24, seq_len=4096, remats=("none",))
    assert tight.best is None and "memory" in tight.explain() and "GiB" in tight.examples["memory"]
    # long context: CP (both modes) and PP are candidates
    lc = search("llama3.1-8b", "v5p", 64, global_batch=4, seq_len=131072, remats=("full",), max_cp=16,
                max_pp=4, cp_modes=("all_gather", "ring"))
    tried = {(r.layout.cp > 1, r.layout.pp > 1, r.cp_mode) for r in lc.ranked}
    assert lc.best is not None and lc.best.layout.cp > 1
    assert (True, False, "ring") in tried and any(pp for _, pp, _ in tried)
