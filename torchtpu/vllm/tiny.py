"""Tiny random-weight Hugging Face checkpoints built locally (no downloads) for the vLLM tests and
benchmarks/serving.py: Llama, Qwen3, a Mistral-style sliding-window model and Mixtral- and Qwen3-style MoEs, each
with a word-level tokenizer and a chat template, saved as safetensors in a directory vLLM and `transformers` load."""

from __future__ import annotations

import json
from pathlib import Path

import torch

WORDS = ("the a an of to in and is was for on with as by at from that this it be are or not but have has had "
         "one two three four five six seven eight nine ten red blue green black white cat dog bird fish tree "
         "house car road city river sea sky sun moon star day night time year man woman child friend king "
         "queen book word story song music art game ball run walk talk sing read write eat drink sleep go "
         "come see look find give take make know think say tell ask work play live love like want need use "
         "big small old new good bad long short high low hot cold fast slow happy sad early late first last "
         "hello world question answer system user assistant model token serve chip tpu vllm").split()
SPECIAL = ("<unk>", "<s>", "</s>", "<pad>")
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} </s> {% endfor %}"
                 "{% if add_generation_prompt %}assistant : {% endif %}")

# (config class name in transformers, config fields): small but with every feature the backend must handle
KINDS: dict[str, tuple[str, dict]] = {
    "llama": ("LlamaConfig", dict(num_attention_heads=4, num_key_value_heads=2, head_dim=32)),
    "qwen3": ("Qwen3Config", dict(num_attention_heads=4, num_key_value_heads=1, head_dim=32)),
    "mistral_swa": ("MistralConfig", dict(num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                          sliding_window=8)),
    "mixtral_moe": ("MixtralConfig", dict(num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                          num_local_experts=4, num_experts_per_tok=2)),
    # un-renormalized top-k (norm_topk_prob False), 8 experts, layer 1 a dense MLP (mlp_only_layers)
    "qwen3_moe": ("Qwen3MoeConfig", dict(num_attention_heads=4, num_key_value_heads=1, head_dim=32, num_experts=8,
                                         num_experts_per_tok=2, moe_intermediate_size=64, norm_topk_prob=False,
                                         mlp_only_layers=[1])),
}


def build_tokenizer(path: Path) -> int:
    """A word-level tokenizer over WORDS plus the specials, saved as tokenizer.json; returns the vocab size."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(SPECIAL + tuple(dict.fromkeys(WORDS)))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    from tokenizers import decoders
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(path))
    return len(vocab)


def build(kind: str, path: str | Path, *, hidden: int = 128, layers: int = 2, seed: int = 0,
          max_positions: int = 512, dtype: torch.dtype = torch.float32, **overrides: object) -> Path:
    """Writes a random-weight `kind` checkpoint (see KINDS) with its tokenizer into `path`; returns the path."""
    import transformers

    if kind not in KINDS:
        raise ValueError(f"unknown tiny model kind {kind!r}; valid: {', '.join(KINDS)}")
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = build_tokenizer(path)
    cls_name, fields = KINDS[kind]
    fields = {**fields, **overrides}
    cfg = getattr(transformers, cls_name)(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        max_position_embeddings=max_positions, bos_token_id=1, eos_token_id=2, pad_token_id=3,
        tie_word_embeddings=False, dtype=dtype, **fields)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    with torch.no_grad():  # larger than the 0.02 init so greedy tokens are far from ties
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.15)
    model.save_pretrained(str(path), safe_serialization=True)
    gen = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 3}
    (path / "generation_config.json").write_text(json.dumps(gen))
    return path
