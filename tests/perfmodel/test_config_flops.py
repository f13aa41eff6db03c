"""Model configs (shipped, MaxText synthetic, Hugging Face, YAML) and FLOP / parameter counting."""

import json

import pytest
from torchtpu.perfmodel.config import ModelConfig, from_hf_config, list_configs, load_config, maxtext_synthetic
from torchtpu.perfmodel.flops import attention_flops_per_token, flops_per_token, param_counts


def test_shipped_configs_load():
    names = list_configs()
    for required in ("llama3.1-8b", "llama3.1-70b", "maxtext-16b", "maxtext-32b", "maxtext-64b", "maxtext-128b",
                     "mixtral-8x7b", "qwen3-30b-a3b", "qwen3-235b-a22b"):
        assert required in names
    for n in names:
        cfg = load_config(n)
        assert cfg.source, n
        assert param_counts(cfg).total > 1e9


@pytest.mark.parametrize("scale,shape", [
    (16, (4096, 64, 28672, 32)), (32, (8192, 64, 28672, 32)), (64, (8192, 64, 28672, 64)),
    (128, (8192, 128, 57344, 64)), (1024, (16384, 256, 114688, 128)),
])
def test_maxtext_synthetic_shapes(scale, shape):
    """tpu-facts 4d/4e: 32B = 8192/64 heads/28672/32 layers, 128B = 8192/128/57344/64."""
    c = maxtext_synthetic(scale)
    assert (c.d_model, c.n_heads, c.d_ff, c.n_layers) == shape
    assert param_counts(c).total == pytest.approx(scale * 1e9, rel=0.1)
    with pytest.raises(ValueError):
        maxtext_synthetic(48)


def test_llama_params_and_published_flops():
    c = load_config("llama3.1-70b")
    assert param_counts(c).total == pytest.approx(70.6e9, rel=0.005)
    assert param_counts(load_config("llama3.1-8b")).total == pytest.approx(8.03e9, rel=0.005)
    # tpu-facts 4c: 462.297 TFLOP/s x 42.656 s per 5 x 8192 tokens, MaxText full-attention convention
    published = 462.297e12 * 42.656 / (5 * 8192)
    assert flops_per_token(c, 8192, causal="full") == pytest.approx(published, rel=0.001)
    half = flops_per_token(c, 8192, causal="half")
    assert full_minus_half(c) == pytest.approx(flops_per_token(c, 8192, causal="full") - half)
    assert flops_per_token(c, 8192, training=False) == pytest.approx(half / 3)
    with pytest.raises(ValueError):
        attention_flops_per_token(c, 8192, causal="quarter")


def full_minus_half(c):
    return 3 * attention_flops_per_token(c, 8192, "full") / 2


def test_moe_params_active_and_flops():
    m = load_config("mixtral-8x7b")
    p = param_counts(m)
    assert p.total == pytest.approx(46.7e9, rel=0.01) and p.active == pytest.approx(12.9e9, rel=0.01)
    q = load_config("qwen3-235b-a22b")
    pq = param_counts(q)
    assert pq.total == pytest.approx(235e9, rel=0.01) and pq.active == pytest.approx(22e9, rel=0.03)
    # training FLOPs ~ 6 x active params per token (+ attention)
    assert flops_per_token(q, 2048, causal="half") == pytest.approx(6 * pq.active, rel=0.15)


def test_hf_config_dicts():
    mixtral = {"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
               "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "num_local_experts": 8,
               "num_experts_per_tok": 2, "hidden_act": "silu", "tie_word_embeddings": False}
    c = from_hf_config(mixtral, "mixtral")
    assert (c.n_experts, c.top_k, c.d_ff_expert, c.head_dim) == (8, 2, 14336, 128)
    assert param_counts(c).total == param_counts(load_config("mixtral-8x7b")).total
    qwen_moe = {"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16,
                "num_key_value_heads": 16, "intermediate_size": 5632, "moe_intermediate_size": 1408,
                "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
                "vocab_size": 151936, "decoder_sparse_step": 1}
    q = from_hf_config(qwen_moe)
    assert q.d_ff_shared == 5632 and q.n_moe_layers == 24
    deepseek = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61,
                "num_attention_heads": 128, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256,
                "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3, "vocab_size": 129280}
    d = from_hf_config(deepseek)
    assert d.layer_kinds()[:4] == ["dense", "dense", "dense", "moe"] and d.d_ff_shared == 2048
    gpt2 = from_hf_config({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257,
                           "activation_function": "gelu_new"})
    assert not gpt2.gated_mlp and gpt2.d_ff == 3072


def test_load_from_files(tmp_path):
    hf = tmp_path / "config.json"
    hf.write_text(json.dumps({"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
                              "intermediate_size": 4096, "vocab_size": 1000}))
    assert load_config(hf).d_model == 1024
    ours = tmp_path / "tiny.yaml"
    ours.write_text("name: tiny\nd_model: 512\nn_layers: 2\nn_heads: 8\nhead_dim: 64\nd_ff: 2048\n"
                    "vocab_size: 1000\n")
    cfg = load_config(ours)
    assert isinstance(cfg, ModelConfig) and cfg.n_kv_heads == 8
    assert load_config({"maxtext_scale": 32, "name": "x"}).d_model == 8192
    with pytest.raises(ValueError):
        load_config("no-such-model")
    with pytest.raises(ValueError):
        ModelConfig("bad", 0, 1, 1, 1, 1, 1)
