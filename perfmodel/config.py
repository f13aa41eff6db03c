"""Transformer model shapes (dense and mixture-of-experts) and where they come from.

`ModelConfig` is the one description the perfmodel uses. Sources:
* `load_config(name_or_path)`: a shipped config name (`perfmodel/configs/<name>.json`, see `list_configs()`),
  or a JSON / YAML file in either our field names or Hugging Face `config.json` names;
* `from_hf_config(dict)`: a Hugging Face config dict (llama, mistral, mixtral, qwen2/3, qwen2_moe/qwen3_moe,
  deepseek_v2/v3 (multi-head latent attention: `kv_lora_rank`, `q_lora_rank`, decoupled rope), gpt-oss and
  gemma2/3 (sliding-window layers: `sliding_window` with `layer_types` or `sliding_window_pattern`));
* `maxtext_synthetic(scale)`: MaxText's `global_parameter_scale` models (tpu-facts 4d/4e), derived with
  MaxText's `get_individual_scales` rule from base.yml (emb 2048, 16 heads of 128, MLP 7168, 16 layers,
  vocab 32000, gated SiLU MLP, untied embeddings).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

__all__ = [
    "CONFIG_DIR",
    "ModelConfig",
    "from_hf_config",
    "list_configs",
    "load_config",
    "maxtext_synthetic",
]

CONFIG_DIR = Path(__file__).with_name("configs")


@dataclass(frozen=True)
class ModelConfig:
    """Decoder-only transformer shape. MoE fields are zero for a dense model.

    d_ff: hidden size of the dense MLP (dense layers); d_ff_expert: hidden size of one routed expert;
    d_ff_shared: total hidden size of the always-active shared expert(s) in MoE layers (0: none);
    first_dense_layers: leading layers that stay dense in an MoE model (DeepSeek `first_k_dense_replace`);
    moe_period: every `moe_period`-th layer after those is MoE (Qwen `decoder_sparse_step`);
    capacity_factor: None = dropless routing; else each expert computes cf * (its fair share) token slots.

    Multi-head latent attention (DeepSeek-V2 [DSV2] section 2.1, arXiv:2405.04434) when kv_lora_rank > 0: keys
    and values are up-projected from a cached latent of kv_lora_rank plus one shared rope key of
    qk_rope_head_dim; head_dim is the query/key head width (nope + rope), v_head_dim the value head width
    (0: head_dim); q_lora_rank > 0 compresses queries too.
    Sliding-window attention: layers marked 'L' in attention_pattern (repeated over the layers; '' = all
    global 'G') attend to the last sliding_window keys only.
    """

    name: str
    d_model: int
    n_layers: int
    n_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    n_kv_heads: int = 0
    gated_mlp: bool = True
    tie_embeddings: bool = False
    n_experts: int = 0
    top_k: int = 0
    d_ff_expert: int = 0
    d_ff_shared: int = 0
    first_dense_layers: int = 0
    moe_period: int = 1
    capacity_factor: float | None = None
    causal: bool = True
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int = 0
    attention_pattern: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if self.n_kv_heads == 0:
            object.__setattr__(self, "n_kv_heads", self.n_heads)
        if self.n_experts and not self.top_k:
            raise ValueError(f"{self.name}: an MoE config needs top_k")
        for f in ("d_model", "n_layers", "n_heads", "head_dim", "vocab_size"):
            if getattr(self, f) <= 0:
                raise ValueError(f"{self.name}: {f} must be positive")
        if self.v_head_dim == 0:
            object.__setattr__(self, "v_head_dim", self.head_dim)
        if set(self.attention_pattern) - {"L", "G"}:
            raise ValueError(f"{self.name}: attention_pattern {self.attention_pattern!r} may only hold 'L' "
                             "(sliding window) and 'G' (global)")
        if "L" in self.attention_pattern and self.sliding_window <= 0:
            raise ValueError(f"{self.name}: attention_pattern has local layers but sliding_window is not set")
        if self.kv_lora_rank and self.qk_rope_head_dim >= self.head_dim:
            raise ValueError(f"{self.name}: head_dim (nope + rope) must exceed qk_rope_head_dim")

    # ---- derived shape facts -------------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def q_width(self) -> int:
        """Query projection width, n_heads * head_dim."""
        return self.n_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """Key (or value) projection width, n_kv_heads * head_dim (MLA: the up-projected keys)."""
        return self.n_kv_heads * self.head_dim

    @property
    def v_width(self) -> int:
        """Value width per kv head group, n_kv_heads * v_head_dim (= kv_width unless MLA)."""
        return self.n_kv_heads * self.v_head_dim

    @property
    def o_width(self) -> int:
        """Attention output width fed to the out-projection, n_heads * v_head_dim."""
        return self.n_heads * self.v_head_dim

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    def layer_attention(self) -> list[str]:
        """'global' or 'local' (sliding window) for each layer, in order."""
        pat = self.attention_pattern or "G"
        return ["local" if pat[i % len(pat)] == "L" else "global" for i in range(self.n_layers)]

    def window(self, attention: str) -> int:
        """Keys a query of a layer of this attention kind may see (0: unbounded)."""
        return self.sliding_window if attention == "local" else 0

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices per MLP: 3 for gated (gate, up, down), 2 otherwise."""
        return 3 if self.gated_mlp else 2

    @property
    def n_moe_layers(self) -> int:
        return sum(1 for k in self.layer_kinds() if k == "moe")

    @property
    def n_dense_layers(self) -> int:
        return self.n_layers - self.n_moe_layers

    def layer_kinds(self) -> list[str]:
        """'dense' or 'moe' for each layer, in order."""
        if not self.is_moe:
            return ["dense"] * self.n_layers
        kinds = []
        for i in range(self.n_layers):
            moe = i >= self.first_dense_layers and (i - self.first_dense_layers) % max(1, self.moe_period) == 0
            kinds.append("moe" if moe else "dense")
        return kinds

    def with_(self, **changes: Any) -> ModelConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_FIELDS = {f.name for f in fields(ModelConfig)}


def maxtext_synthetic(scale: int, *, base_emb_dim: int = 2048, base_num_heads: int = 16, base_mlp_dim: int = 7168,
                      base_num_layers: int = 16, head_dim: int = 128, vocab_size: int = 32000,
                      name: str | None = None) -> ModelConfig:
    """MaxText `global_parameter_scale` model [MT-readme], [MT-v5e]: rotate doubling heads+MLP, embed, layers.

    >>> c = maxtext_synthetic(128); (c.d_model, c.n_heads, c.d_ff, c.n_layers)
    (8192, 128, 57344, 64)
    """
    log2 = int(math.log2(scale))
    if 2**log2 != scale:
        raise ValueError("MaxText global_parameter_scale must be a power of 2")
    base, rem = divmod(log2, 3)
    head_scale = base + int(rem > 0)
    emb_scale = base + int(rem > 1)
    heads = base_num_heads * 2**head_scale
    return ModelConfig(
        name=name or f"maxtext-{scale}b",
        d_model=base_emb_dim * 2**emb_scale,
        n_layers=base_num_layers * 2**base,
        n_heads=heads,
        n_kv_heads=heads,
        head_dim=head_dim,
        d_ff=base_mlp_dim * 2**head_scale,
        vocab_size=vocab_size,
        gated_mlp=True,
        source=f"MaxText global_parameter_scale={scale} (base.yml, get_individual_scales) [MT-readme]",
    )


def from_hf_config(hf: dict[str, Any], name: str | None = None) -> ModelConfig:
    """Build a ModelConfig from a Hugging Face `config.json` dict (no download; keys only)."""
    d = dict(hf.get("text_config", hf))  # multimodal wrappers keep the LM under text_config
    get = d.get
    d_model = int(get("hidden_size") or get("d_model") or get("n_embd"))
    heads = int(get("num_attention_heads") or get("n_head"))
    head_dim = int(get("head_dim") or get("qk_nope_head_dim", 0) + get("qk_rope_head_dim", 0) or d_model // heads)
    kv = int(get("num_key_value_heads") or heads)
    n_experts = int(get("num_local_experts") or get("num_experts") or get("n_routed_experts") or 0)
    top_k = int(get("num_experts_per_tok") or get("num_experts_per_token") or get("moe_topk") or 0)
    d_ff = int(get("intermediate_size") or get("n_inner") or 4 * d_model)
    d_ff_expert = int(get("moe_intermediate_size") or (d_ff if n_experts else 0))
    shared = int(get("shared_expert_intermediate_size") or 0)
    if not shared and get("n_shared_experts"):
        shared = int(get("n_shared_experts")) * d_ff_expert
    act = str(get("hidden_act") or get("activation_function") or "silu")
    gated = act in ("silu", "swiglu", "geglu", "gelu_pytorch_tanh") or "llama" in str(get("model_type", ""))
    if str(get("model_type", "")) in ("gpt2", "gpt_neox", "opt", "bert"):
        gated = False
    mla = {}
    if get("kv_lora_rank"):  # DeepSeek-V2/V3 multi-head latent attention [DSV2]
        mla = dict(q_lora_rank=int(get("q_lora_rank") or 0), kv_lora_rank=int(get("kv_lora_rank")),
                   qk_rope_head_dim=int(get("qk_rope_head_dim") or 0), v_head_dim=int(get("v_head_dim") or 0))
        head_dim = int(get("qk_nope_head_dim", 0)) + mla["qk_rope_head_dim"]
        kv = heads  # after the up-projection every head has its own key and value
    window, pattern = _sliding(d)
    first_dense = int(get("first_k_dense_replace") or 0)
    if get("mlp_only_layers"):
        first_dense = max(first_dense, len(get("mlp_only_layers")))
    return ModelConfig(
        name=name or str(get("_name_or_path") or get("model_type") or "hf-model"),
        d_model=d_model,
        n_layers=int(get("num_hidden_layers") or get("n_layer")),
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=head_dim,
        d_ff=d_ff,
        vocab_size=int(get("vocab_size")),
        gated_mlp=gated,
        tie_embeddings=bool(get("tie_word_embeddings", False)),
        n_experts=n_experts,
        top_k=top_k if n_experts else 0,
        d_ff_expert=d_ff_expert if n_experts else 0,
        d_ff_shared=shared if n_experts else 0,
        first_dense_layers=first_dense if n_experts else 0,
        moe_period=int(get("decoder_sparse_step") or get("moe_layer_freq") or 1) if n_experts else 1,
        sliding_window=window,
        attention_pattern=pattern,
        source="Hugging Face config.json",
        **mla,
    )


def _period(flags: list[str]) -> str:
    for n in range(1, len(flags) + 1):
        if all(flags[i] == flags[i % n] for i in range(len(flags))):
            return "".join(flags[:n])
    return "".join(flags)


def _sliding(d: dict[str, Any]) -> tuple[int, str]:
    """(window, pattern) from HF keys: layer_types (gpt-oss, newer gemma), sliding_window_pattern (gemma3),
    gemma2 (every other layer), mistral-style sliding_window on all layers; qwen2 use_sliding_window=False."""
    w = int(d.get("sliding_window") or 0)
    if not w or d.get("use_sliding_window") is False:
        return 0, ""
    types = d.get("layer_types")
    if types:
        flags = ["L" if "sliding" in str(t) else "G" for t in types]
        return (w, _period(flags)) if "L" in flags else (0, "")
    period = d.get("sliding_window_pattern")
    if period:  # gemma3: every period-th layer is global
        return w, "L" * (int(period) - 1) + "G"
    if str(d.get("model_type", "")).startswith("gemma2"):
        return w, "LG"
    return w, "L"


def _from_dict(raw: dict[str, Any], name: str) -> ModelConfig:
    if "maxtext_scale" in raw:
        extra = {k: v for k, v in raw.items() if k not in ("maxtext_scale", "name", "source", "notes")}
        cfg = maxtext_synthetic(int(raw["maxtext_scale"]), name=raw.get("name", name), **extra)
        return cfg.with_(source=raw.get("source", cfg.source))
    if "hidden_size" in raw or "text_config" in raw:
        return from_hf_config(raw, raw.get("name", name))
    known = {k: v for k, v in raw.items() if k in _FIELDS}
    known.setdefault("name", name)
    return ModelConfig(**known)


def list_configs() -> list[str]:
    """Names of the model configs shipped in perfmodel/configs."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def load_config(spec: str | Path | dict[str, Any] | ModelConfig) -> ModelConfig:
    """A ModelConfig from a shipped name, a .json/.yaml/.yml path, a dict (ours or HF), or a ModelConfig."""
    if isinstance(spec, ModelConfig):
        return spec
    if isinstance(spec, dict):
        return _from_dict(spec, str(spec.get("name", "model")))
    path = Path(spec)
    if not path.exists():
        shipped = CONFIG_DIR / f"{spec}.json"
        if not shipped.exists():
            raise ValueError(f"no model config {spec!r}: not a file and not one of {', '.join(list_configs())}")
        path = shipped
    text = path.read_text()
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError as e:  # pragma: no cover - pyyaml is in the dev/notebooks environment
            raise ImportError("reading YAML model configs needs PyYAML (pip install pyyaml)") from e
        raw = yaml.safe_load(text)
    else:
        raw = json.loads(text)
    return _from_dict(raw, path.stem)
