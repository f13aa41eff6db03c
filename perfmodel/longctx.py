"""Long context: context-parallel K/V volumes (all-gather or ring), ring overlap, and the KV cache per token.

Context parallelism splits each sequence over `cp` chips (balanced zig-zag chunks, so every chip gets the same
causal work). Each chip then needs the keys and values of the whole sequence:
* all-gather (MaxText's default context parallelism): every chip gathers K and V of the sequence for its tp
  shard of the heads; the backward reduce-scatters dK and dV. Volume per layer and pass (whole-array
  convention of `perfmodel.collectives`): seqs x S x (k + v widths) x bytes.
* ring (Ring Attention, Liu, Zaharia, Abbeel, ICLR 2024, arXiv:2310.01889, section 3): the K/V shards travel
  round the ring in cp - 1 steps; step i computes the attention block of the shard held now while the next
  one arrives, so a step costs max(attention / cp, one shard's transfer) and only the excess is exposed:
  (cp - 1) x max(0, transfer - attention / cp) (the paper's condition for full overlap is this excess = 0).
  The backward sends K/V and the dK/dV accumulators: twice the bytes.
* a sliding-window layer (window W < S/cp) needs only the last W keys of the previous chunk (a halo), once.
Memory: the all-gather holds K/V of the whole sequence for the layer being computed; the ring two shards
(the one in use and the one arriving).

KV cache per token and layer (serving): standard / GQA attention 2 x kv_heads x head_dim (kv heads split over
tp, at least one per chip); MLA caches the latent and the shared rope key, kv_lora + rope, which every tp rank
needs (DeepSeek-V2 [DSV2] Table 1: 576 elements per token and layer for V2/V3 against 2 x 128 x 128 for MHA);
a sliding-window layer keeps at most its window of tokens. A paged cache rounds every sequence up to whole
pages (`page_tokens`, PagedAttention: Kwon et al., SOSP 2023, arXiv:2309.06180, section 4.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torchtpu.perfmodel.config import ModelConfig

__all__ = ["CpVolumes", "cp_volumes", "cp_working_bytes", "kv_cache_per_token", "paged_tokens",
           "ring_exposed_seconds"]


@dataclass(frozen=True)
class CpVolumes:
    """Bytes one layer's context parallelism moves per pass.

    gathered_bytes: the whole gathered K/V array of the chip's tp shard (all-gather convention);
    shard_bytes: one chip's K/V shard (what one ring step sends); halo_bytes: a sliding-window layer's halo
    per chip (0 when the window covers whole shards: then it gathers like a global layer).
    """

    gathered_bytes: float
    shard_bytes: float
    halo_bytes: float


def kv_widths(cfg: ModelConfig, tp: int) -> tuple[float, float]:
    """(key width, value width) per token on one chip of a tp group, as attention reads them in training.

    GQA: kv heads / tp (at least one, replicated) x head dims; MLA: keys and values are up-projected per head,
    so H / tp heads of (nope + rope) and v_head_dim.
    """
    heads = cfg.n_heads / tp if cfg.is_mla else max(cfg.n_kv_heads / tp, 1.0)
    return heads * cfg.head_dim, heads * cfg.v_head_dim


def cp_volumes(cfg: ModelConfig, seqs: float, seq_len: int, cp: int, tp: int, act_bytes: float,
               window: int = 0) -> CpVolumes:
    """Context-parallel volumes of one layer (see module docstring).

    >>> from torchtpu.perfmodel.config import load_config
    >>> v = cp_volumes(load_config("llama3.1-8b"), 1, 131072, 8, 1, 2)
    >>> v.gathered_bytes == 131072 * 2 * 8 * 128 * 2, v.shard_bytes == v.gathered_bytes / 8
    (True, True)
    """
    kw, vw = kv_widths(cfg, tp)
    gathered = seqs * seq_len * (kw + vw) * act_bytes
    shard = gathered / max(1, cp)
    halo = 0.0
    if window and cp > 1 and window < seq_len / cp:
        halo = seqs * window * (kw + vw) * act_bytes
    return CpVolumes(gathered, shard, halo)


def ring_exposed_seconds(attention_seconds: float, step_seconds: float, cp: int) -> float:
    """Ring attention time not hidden behind the attention blocks: (cp - 1) x max(0, step - attention / cp)."""
    if cp <= 1:
        return 0.0
    return (cp - 1) * max(0.0, step_seconds - attention_seconds / cp)


def cp_working_bytes(cfg: ModelConfig, seqs: float, seq_len: int, cp: int, tp: int, act_bytes: float,
                     mode: str, window: int = 0) -> float:
    """K/V bytes context parallelism holds for the layer being computed (all-gather: the sequence; ring: 2
    shards; a windowed layer: its shard and the halo). 0 without cp."""
    if cp <= 1:
        return 0.0
    v = cp_volumes(cfg, seqs, seq_len, cp, tp, act_bytes, window)
    if v.halo_bytes:
        return v.shard_bytes + v.halo_bytes
    if mode == "ring":
        return 2.0 * v.shard_bytes
    return v.gathered_bytes


def kv_cache_per_token(cfg: ModelConfig, tp: int = 1) -> float:
    """Cached elements per token and layer on one chip (module docstring): MLA kv_lora + rope, else
    2 x max(kv_heads / tp, 1) x head_dim (keys and values, value width v_head_dim)."""
    if cfg.is_mla:
        return float(cfg.kv_lora_rank + cfg.qk_rope_head_dim)
    heads = max(cfg.n_kv_heads / tp, 1.0)
    return heads * (cfg.head_dim + cfg.v_head_dim)


def paged_tokens(context: float, page_tokens: int | None) -> float:
    """Tokens a paged cache allocates for one sequence of `context` tokens (whole pages); None = unpaged."""
    if not page_tokens:
        return float(context)
    if page_tokens < 0:
        raise ValueError("page_tokens must be positive")
    return float(math.ceil(context / page_tokens) * page_tokens)
