"""Parameter counts and model FLOPs per token, in the conventions publishers use.

Model FLOPs follow MaxText's `calculate_tflops_training_per_device` [MT-readme]: per token and layer,
2 x (active matmul parameters) for the projections and MLP (MoE: router + top_k experts + shared experts),
plus attention 4 * seq * n_heads * head_dim (QK^T and PV); the output logits 2 * d_model * vocab once; the
input embedding lookup is free. Training multiplies everything by 3 (forward + two backward matmuls).

Attention per token and layer is 2 * keys * n_heads * (qk head dim + v head dim) (= 4 * S * n_heads * head_dim
for standard attention); MLA uses its qk (nope + rope) and v head dims [DSV2]; a sliding-window layer of window
W sees min(S, W) keys per query ('full' convention) or the exact causal mean ('half').

Causal attention is the convention that differs between publishers: newer MaxText halves it
(`causal="half"`), older MaxText recipes (the v5e, v5p and v6e results in tpu-facts 4) and PaLM count it in full
(`causal="full"`). Compare each prediction in its publisher's convention. Rematerialisation never changes model
FLOPs (it changes hardware FLOPs: see `perfmodel.training`).
"""

from __future__ import annotations

from dataclasses import dataclass

from torchtpu.perfmodel.config import ModelConfig

__all__ = [
    "CONVENTIONS",
    "ParamCounts",
    "attention_flops_per_token",
    "attention_params",
    "flops_per_token",
    "keys_per_query",
    "param_counts",
]

CONVENTIONS = ("half", "full")


@dataclass(frozen=True)
class ParamCounts:
    """Parameter counts (numbers of weights, not bytes)."""

    embedding: int
    unembedding: int
    attention_per_layer: int
    dense_mlp_per_layer: int
    expert: int  # one routed expert's MLP
    n_experts: int
    top_k: int
    shared_per_layer: int  # shared expert(s) of an MoE layer
    router_per_layer: int
    norms_per_layer: int
    n_dense_layers: int
    n_moe_layers: int

    @property
    def routed_per_layer(self) -> int:
        return self.n_experts * self.expert

    @property
    def moe_per_layer_total(self) -> int:
        return self.routed_per_layer + self.shared_per_layer

    @property
    def moe_per_layer_active(self) -> int:
        return self.top_k * self.expert + self.shared_per_layer

    @property
    def per_layer_dense(self) -> int:
        return self.attention_per_layer + self.dense_mlp_per_layer + self.norms_per_layer

    @property
    def per_layer_moe(self) -> int:
        return self.attention_per_layer + self.moe_per_layer_total + self.router_per_layer + self.norms_per_layer

    @property
    def expert_params(self) -> int:
        """Routed-expert weights over the whole model (the part expert parallelism shards)."""
        return self.n_moe_layers * self.routed_per_layer

    @property
    def total(self) -> int:
        return (self.embedding + self.unembedding + self.n_dense_layers * self.per_layer_dense
                + self.n_moe_layers * self.per_layer_moe)

    @property
    def active(self) -> int:
        """Parameters touched per token (MoE: top_k experts + shared), embeddings included."""
        return self.total - self.n_moe_layers * (self.n_experts - self.top_k) * self.expert


def _mlp_params(cfg: ModelConfig, hidden: int) -> int:
    return cfg.mlp_matrices * cfg.d_model * hidden


def attention_params(cfg: ModelConfig) -> int:
    """Attention projection weights of one layer.

    Standard / GQA: d x (q + 2 kv) + q x d. MLA [DSV2] eqs. 1-11: queries d x q_lora + q_lora x H(nope+rope)
    (or d x H(nope+rope) without q compression), the joint latent d x (kv_lora + rope), its up-projection
    kv_lora x H(nope + v), the out-projection H v x d.
    """
    d = cfg.d_model
    if not cfg.is_mla:
        return d * (cfg.q_width + 2 * cfg.kv_width) + cfg.q_width * d
    h = cfg.n_heads
    nope = cfg.head_dim - cfg.qk_rope_head_dim
    q = d * cfg.q_lora_rank + cfg.q_lora_rank * cfg.q_width if cfg.q_lora_rank else d * cfg.q_width
    kv = d * (cfg.kv_lora_rank + cfg.qk_rope_head_dim) + cfg.kv_lora_rank * h * (nope + cfg.v_head_dim)
    return q + kv + cfg.o_width * d


def param_counts(cfg: ModelConfig) -> ParamCounts:
    """Weights of the model by part (biases ignored; two RMSNorm vectors per layer, MLA: plus its two)."""
    d = cfg.d_model
    emb = cfg.vocab_size * d
    return ParamCounts(
        embedding=emb,
        unembedding=0 if cfg.tie_embeddings else emb,
        attention_per_layer=attention_params(cfg),
        dense_mlp_per_layer=_mlp_params(cfg, cfg.d_ff),
        expert=_mlp_params(cfg, cfg.d_ff_expert) if cfg.is_moe else 0,
        n_experts=cfg.n_experts,
        top_k=cfg.top_k,
        shared_per_layer=_mlp_params(cfg, cfg.d_ff_shared) if cfg.is_moe and cfg.d_ff_shared else 0,
        router_per_layer=d * cfg.n_experts,
        norms_per_layer=2 * d + (cfg.q_lora_rank + cfg.kv_lora_rank if cfg.is_mla else 0),
        n_dense_layers=cfg.n_dense_layers,
        n_moe_layers=cfg.n_moe_layers,
    )


def keys_per_query(seq_len: int, window: int, causal: bool, convention: str) -> float:
    """Keys one query attends, in a FLOP convention: 'full' counts S (or the window W); 'half' the causal mean,
    S/2 for global layers and (W(W+1)/2 + (S-W)W)/S for a window W < S."""
    if convention not in CONVENTIONS:
        raise ValueError(f"causal convention must be one of {CONVENTIONS}, got {convention!r}")
    s = float(seq_len)
    w = float(window) if 0 < window < seq_len else 0.0
    if convention == "full" or not causal:
        return w or s
    if not w:
        return s / 2.0
    return (w * (w + 1) / 2 + (s - w) * w) / s


def attention_flops_per_token(cfg: ModelConfig, seq_len: int, causal: str = "full") -> float:
    """Forward attention-core FLOPs per token summed over layers: 2 * keys * n_heads * (qk + v head dims)
    per layer (4 * S * n_heads * head_dim for standard full attention)."""
    if causal not in CONVENTIONS:
        raise ValueError(f"causal convention must be one of {CONVENTIONS}, got {causal!r}")
    per_key = 2.0 * cfg.n_heads * (cfg.head_dim + cfg.v_head_dim)
    return sum(per_key * keys_per_query(seq_len, cfg.window(a), cfg.causal, causal) for a in cfg.layer_attention())


def flops_per_token(cfg: ModelConfig, seq_len: int, *, causal: str = "half", training: bool = True) -> float:
    """Model FLOPs per token (MaxText convention; `causal` 'half' for newer MaxText, 'full' for older/PaLM).

    >>> from torchtpu.perfmodel.config import load_config
    >>> round(flops_per_token(load_config("llama3.1-70b"), 8192, causal="full") / 1e9, 1)   # tpu-facts 4c
    481.4
    """
    p = param_counts(cfg)
    d = cfg.d_model
    dense_mm = p.attention_per_layer + p.dense_mlp_per_layer
    moe_mm = p.attention_per_layer + p.moe_per_layer_active + p.router_per_layer
    weights = 2.0 * (p.n_dense_layers * dense_mm + p.n_moe_layers * moe_mm) + 2.0 * d * cfg.vocab_size
    fwd = weights + attention_flops_per_token(cfg, seq_len, causal)
    return 3.0 * fwd if training else fwd
