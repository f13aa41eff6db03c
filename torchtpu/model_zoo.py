"""The model zoo's registry: each architecture's transformers class, small config, inputs and applicable checks,
plus the tracked failures. `torchtpu.validate_models` runs the checks; `tests/models/` parametrizes over `MODELS`.

Every config is small (2 layers, hidden 32, vocab 128, 8 tokens), seeded, built locally (no hub access), with
dropout zeroed (the device RNG differs from CPU's, so a dropout model cannot be compared element-wise).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

VOCAB = 128
SEQ = 8
BATCH = 2
HIDDEN = 32
HEADS = 4
LAYERS = 2
FFN = 64
MAX_POS = 64
NEW_TOKENS = 6

CHECKS = ("forward", "forward_bf16", "generate", "train")


# ------------------------------------------------------------------------------------------------- registry


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One architecture: how to build it (seeded), its inputs, what to compare, which checks apply."""

    name: str                                   # short id, used in test ids and the table
    arch: str                                   # transformers class name
    config: Callable[[], Any]                   # builds the (small) config
    inputs: Callable[[torch.Generator], dict[str, torch.Tensor]]  # CPU inputs, labels included
    output: str = "logits"                      # output field compared by the forward checks
    generate: bool = False                      # decoder or encoder-decoder: run the generate check
    known_failures: dict[str, str] = dataclasses.field(default_factory=dict)  # check -> REASONS keys

    def checks(self) -> tuple[str, ...]:
        return tuple(c for c in CHECKS if c != "generate" or self.generate)

    def build(self) -> torch.nn.Module:
        import transformers

        torch.manual_seed(0)
        cls = getattr(transformers, self.arch)
        model = cls(_no_dropout(self.config()))
        return model.eval()

    def make_inputs(self) -> dict[str, torch.Tensor]:
        return self.inputs(torch.Generator().manual_seed(1))


def _no_dropout(config: Any) -> Any:
    """Zeroes every dropout-like probability (and SpecAugment masking) in a config and its sub-configs."""
    for key, value in list(vars(config).items()):
        if isinstance(value, float) and ("dropout" in key or key.endswith("pdrop") or key.endswith("_drop")
                                         or key in ("layerdrop", "mask_time_prob", "mask_feature_prob")):
            setattr(config, key, 0.0)
        elif hasattr(value, "to_dict") and hasattr(value, "model_type"):
            _no_dropout(value)
    return config


def _ids(g: torch.Generator, vocab: int = VOCAB, low: int = 3) -> torch.Tensor:
    return torch.randint(low, vocab, (BATCH, SEQ), generator=g)


def _padded_mask() -> torch.Tensor:
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, -2:] = 0                            # the second row is right-padded
    return mask


def _mlm_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    ids = _ids(g)
    labels = torch.full_like(ids, -100)
    labels[:, 1::3] = ids[:, 1::3]              # a few masked positions, the rest ignored
    return {"input_ids": ids, "attention_mask": _padded_mask(), "labels": labels}


def _electra_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    ids = _ids(g)
    return {"input_ids": ids, "attention_mask": _padded_mask(),
            "labels": torch.randint(0, 2, ids.shape, generator=g)}


def _causal_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    ids = _ids(g)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids}


def _seq2seq_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    ids = _ids(g)
    return {"input_ids": ids, "attention_mask": _padded_mask(), "labels": _ids(g)}


def _image_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    return {"pixel_values": torch.randn(BATCH, 3, 32, 32, generator=g),
            "labels": torch.randint(0, 10, (BATCH,), generator=g)}


def _clip_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    return {"input_ids": _ids(g), "attention_mask": _padded_mask(),
            "pixel_values": torch.randn(BATCH, 3, 32, 32, generator=g), "return_loss": True}


WHISPER_MELS, WHISPER_FRAMES = 16, 32


def _whisper_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    return {"input_features": torch.randn(BATCH, WHISPER_MELS, WHISPER_FRAMES, generator=g),
            "labels": _ids(g)}


def _audio_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    return {"input_values": torch.randn(BATCH, 800, generator=g),
            "labels": torch.randint(3, 32, (BATCH, 4), generator=g)}


MOONSHINE_SAMPLES = 1024                        # raw 16 kHz audio; its conv stem downsamples by 384 (3 frames)


def _moonshine_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    return {"input_values": torch.randn(BATCH, MOONSHINE_SAMPLES, generator=g), "labels": _ids(g)}


def _siglip_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    return {"input_ids": _ids(g), "pixel_values": torch.randn(BATCH, 3, 32, 32, generator=g), "return_loss": True}


IMAGE_TOKEN = 3                                 # LLaVA: ids 0..2 are pad/bos/eos, 3 marks an image position
LLAVA_IMAGE_TOKENS = (32 // 8) ** 2             # CLIP tower, 32x32 image, 8x8 patches: one feature per patch


def _llava_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    ids = torch.cat([torch.full((BATCH, LLAVA_IMAGE_TOKENS), IMAGE_TOKEN), _ids(g, low=4)], dim=1)
    labels = ids.clone()
    labels[:, :LLAVA_IMAGE_TOKENS] = -100       # no loss on the image positions
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "pixel_values": torch.randn(BATCH, 3, 32, 32, generator=g), "labels": labels}


# Qwen2-VL: special ids above the text vocabulary's random range; one 16x16 image per row as a (t, h, w) grid of
# 1 x 4 x 4 patches of 4x4 pixels (x2 frames, the temporal patch), merged 2x2 into 4 image tokens.
QWEN_VL = dict(image_token_id=VOCAB + 2, video_token_id=VOCAB + 3, vision_start_token_id=VOCAB,
               vision_end_token_id=VOCAB + 1)
QWEN_VL_GRID = (1, 4, 4)
QWEN_VL_TOKENS = 4


def _qwen2_vl_inputs(g: torch.Generator) -> dict[str, torch.Tensor]:
    image = [QWEN_VL["vision_start_token_id"], *[QWEN_VL["image_token_id"]] * QWEN_VL_TOKENS,
             QWEN_VL["vision_end_token_id"]]
    ids = torch.cat([torch.tensor([image] * BATCH), _ids(g)], dim=1)
    labels = ids.clone()
    labels[:, :len(image)] = -100
    patches = BATCH * QWEN_VL_GRID[1] * QWEN_VL_GRID[2]
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels,
            "mm_token_type_ids": (ids == QWEN_VL["image_token_id"]).long(),   # what its processor returns
            "pixel_values": torch.randn(patches, 3 * 2 * 4 * 4, generator=g),
            "image_grid_thw": torch.tensor([QWEN_VL_GRID] * BATCH)}


def _cfg(cls_name: str, **kw: Any) -> Callable[[], Any]:
    def build() -> Any:
        import transformers

        return getattr(transformers, cls_name)(**kw)

    build.__qualname__ = f"{cls_name}(...)"
    return build


_BERTLIKE = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                 intermediate_size=FFN, max_position_embeddings=MAX_POS)
_LLAMALIKE = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                  num_attention_heads=HEADS, num_key_value_heads=2, max_position_embeddings=MAX_POS,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0)
_TEXT = dict(inputs=_causal_inputs, generate=True)

MODELS: dict[str, ModelSpec] = {s.name: s for s in [
    # encoders
    ModelSpec("bert", "BertForMaskedLM", _cfg("BertConfig", **_BERTLIKE), _mlm_inputs),
    ModelSpec("roberta", "RobertaForMaskedLM", _cfg("RobertaConfig", **_BERTLIKE, pad_token_id=1), _mlm_inputs),
    ModelSpec("distilbert", "DistilBertForMaskedLM",
              _cfg("DistilBertConfig", vocab_size=VOCAB, dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS,
                   hidden_dim=FFN, max_position_embeddings=MAX_POS), _mlm_inputs),
    ModelSpec("albert", "AlbertForMaskedLM", _cfg("AlbertConfig", **_BERTLIKE, embedding_size=16), _mlm_inputs),
    ModelSpec("electra", "ElectraForPreTraining", _cfg("ElectraConfig", **_BERTLIKE, embedding_size=16),
              _electra_inputs),
    ModelSpec("deberta-v2", "DebertaV2ForMaskedLM",
              _cfg("DebertaV2Config", **_BERTLIKE, relative_attention=True, position_buckets=16,
                   max_relative_positions=-1, norm_rel_ebd="layer_norm", share_att_key=True,
                   pos_att_type=["p2c", "c2p"], position_biased_input=False), _mlm_inputs),
    ModelSpec("xlm-roberta", "XLMRobertaForMaskedLM", _cfg("XLMRobertaConfig", **_BERTLIKE, pad_token_id=1),
              _mlm_inputs),
    # decoders
    ModelSpec("gpt2", "GPT2LMHeadModel",
              _cfg("GPT2Config", vocab_size=VOCAB, n_positions=MAX_POS, n_embd=HIDDEN, n_layer=LAYERS,
                   n_head=HEADS, bos_token_id=1, eos_token_id=2), **_TEXT),
    ModelSpec("gpt-neo", "GPTNeoForCausalLM",
              _cfg("GPTNeoConfig", vocab_size=VOCAB, max_position_embeddings=MAX_POS, hidden_size=HIDDEN,
                   num_layers=LAYERS, num_heads=HEADS, intermediate_size=FFN, window_size=4,
                   attention_types=[[["global", "local"], 1]], bos_token_id=1, eos_token_id=2), **_TEXT),
    ModelSpec("opt", "OPTForCausalLM",
              _cfg("OPTConfig", vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, ffn_dim=FFN,
                   num_attention_heads=HEADS, max_position_embeddings=MAX_POS, word_embed_proj_dim=HIDDEN,
                   bos_token_id=1, eos_token_id=2, pad_token_id=0), **_TEXT),
    ModelSpec("llama", "LlamaForCausalLM", _cfg("LlamaConfig", **_LLAMALIKE), **_TEXT),
    ModelSpec("mistral", "MistralForCausalLM", _cfg("MistralConfig", **_LLAMALIKE, sliding_window=4), **_TEXT),
    ModelSpec("mixtral", "MixtralForCausalLM",
              _cfg("MixtralConfig", **_LLAMALIKE, num_local_experts=4, num_experts_per_tok=2), **_TEXT),
    ModelSpec("qwen2", "Qwen2ForCausalLM", _cfg("Qwen2Config", **_LLAMALIKE), **_TEXT),
    ModelSpec("qwen3", "Qwen3ForCausalLM", _cfg("Qwen3Config", **_LLAMALIKE, head_dim=8), **_TEXT),
    ModelSpec("qwen3-moe", "Qwen3MoeForCausalLM",
              _cfg("Qwen3MoeConfig", **_LLAMALIKE, head_dim=8, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, norm_topk_prob=True), **_TEXT),
    ModelSpec("gemma", "GemmaForCausalLM", _cfg("GemmaConfig", **_LLAMALIKE, head_dim=8), **_TEXT),
    ModelSpec("phi3", "Phi3ForCausalLM", _cfg("Phi3Config", **_LLAMALIKE), **_TEXT),
    ModelSpec("falcon", "FalconForCausalLM",
              _cfg("FalconConfig", vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                   num_attention_heads=HEADS, bos_token_id=1, eos_token_id=2), **_TEXT),
    # encoder-decoders
    ModelSpec("t5", "T5ForConditionalGeneration",
              _cfg("T5Config", vocab_size=VOCAB, d_model=HIDDEN, d_kv=8, d_ff=FFN, num_layers=LAYERS,
                   num_heads=HEADS, relative_attention_num_buckets=8, relative_attention_max_distance=16,
                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1),
              _seq2seq_inputs, generate=True),
    ModelSpec("bart", "BartForConditionalGeneration",
              _cfg("BartConfig", vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=LAYERS, decoder_layers=LAYERS,
                   encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=FFN,
                   decoder_ffn_dim=FFN, max_position_embeddings=MAX_POS, pad_token_id=1, bos_token_id=0,
                   eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None),
              _seq2seq_inputs, generate=True),
    ModelSpec("whisper", "WhisperForConditionalGeneration",
              _cfg("WhisperConfig", vocab_size=VOCAB, num_mel_bins=WHISPER_MELS, encoder_layers=LAYERS,
                   decoder_layers=LAYERS, encoder_attention_heads=HEADS, decoder_attention_heads=HEADS,
                   encoder_ffn_dim=FFN, decoder_ffn_dim=FFN, d_model=HIDDEN,
                   max_source_positions=WHISPER_FRAMES // 2, max_target_positions=MAX_POS, pad_token_id=0,
                   bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, suppress_tokens=None,
                   begin_suppress_tokens=None),
              _whisper_inputs, generate=True),
    # vision, multimodal, audio
    ModelSpec("vit", "ViTForImageClassification",
              _cfg("ViTConfig", image_size=32, patch_size=8, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                   num_attention_heads=HEADS, intermediate_size=FFN, num_labels=10), _image_inputs),
    ModelSpec("clip", "CLIPModel",
              _cfg("CLIPConfig", projection_dim=HIDDEN,
                   text_config=dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN,
                                    num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                                    max_position_embeddings=MAX_POS, bos_token_id=1, eos_token_id=2),
                   vision_config=dict(image_size=32, patch_size=8, hidden_size=HIDDEN, intermediate_size=FFN,
                                      num_hidden_layers=LAYERS, num_attention_heads=HEADS)),
              _clip_inputs, output="logits_per_image"),
    ModelSpec("wav2vec2", "Wav2Vec2ForCTC",
              _cfg("Wav2Vec2Config", vocab_size=32, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                   num_attention_heads=HEADS, intermediate_size=FFN, conv_dim=(32, 32, 32),
                   conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
                   num_conv_pos_embedding_groups=4, pad_token_id=0, ctc_loss_reduction="mean"),
              _audio_inputs),
    # grown for issue 24: the families users download most that run from transformers' own code
    ModelSpec("moonshine", "MoonshineForConditionalGeneration",
              _cfg("MoonshineConfig", vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN,
                   encoder_num_hidden_layers=LAYERS, decoder_num_hidden_layers=LAYERS,
                   encoder_num_attention_heads=HEADS, decoder_num_attention_heads=HEADS,
                   max_position_embeddings=MAX_POS, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                   decoder_start_token_id=1),
              _moonshine_inputs, generate=True),
    ModelSpec("dinov2", "Dinov2ForImageClassification",
              _cfg("Dinov2Config", image_size=32, patch_size=8, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                   num_attention_heads=HEADS, mlp_ratio=2, num_labels=10), _image_inputs),
    ModelSpec("siglip", "SiglipModel",
              _cfg("SiglipConfig",
                   text_config=dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN,
                                    num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                                    max_position_embeddings=MAX_POS, pad_token_id=0, bos_token_id=1,
                                    eos_token_id=2),
                   vision_config=dict(image_size=32, patch_size=8, hidden_size=HIDDEN, intermediate_size=FFN,
                                      num_hidden_layers=LAYERS, num_attention_heads=HEADS)),
              _siglip_inputs, output="logits_per_image"),
    ModelSpec("llava", "LlavaForConditionalGeneration",
              _cfg("LlavaConfig",
                   vision_config=dict(model_type="clip_vision_model", image_size=32, patch_size=8,
                                      hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                                      num_attention_heads=HEADS, projection_dim=HIDDEN),
                   text_config=dict(model_type="llama", **_LLAMALIKE), image_token_index=IMAGE_TOKEN,
                   vision_feature_layer=-1, vision_feature_select_strategy="default",
                   image_seq_length=LLAVA_IMAGE_TOKENS),
              _llava_inputs, generate=True),
    ModelSpec("qwen2-vl", "Qwen2VLForConditionalGeneration",
              _cfg("Qwen2VLConfig",
                   text_config=dict(**{**_LLAMALIKE, "vocab_size": VOCAB + 8},
                                    rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]}),
                   vision_config=dict(depth=LAYERS, embed_dim=HIDDEN, hidden_size=HIDDEN, num_heads=HEADS,
                                      mlp_ratio=2, patch_size=4, spatial_merge_size=2, temporal_patch_size=2),
                   **QWEN_VL),
              _qwen2_vl_inputs, generate=True),
    # state-space and hybrid: the PyTorch reference paths transformers runs when the CUDA kernels (mamba_ssm,
    # causal_conv1d) are not installed
    ModelSpec("mamba", "MambaForCausalLM",
              _cfg("MambaConfig", vocab_size=VOCAB, hidden_size=HIDDEN, state_size=8, num_hidden_layers=LAYERS,
                   expand=2, conv_kernel=4, time_step_rank=4, use_mambapy=False, bos_token_id=1,
                   eos_token_id=2, pad_token_id=0), **_TEXT),
    ModelSpec("mamba2", "Mamba2ForCausalLM",
              _cfg("Mamba2Config", vocab_size=VOCAB, hidden_size=HIDDEN, state_size=8, num_hidden_layers=LAYERS,
                   expand=2, conv_kernel=4, num_heads=8, head_dim=8, n_groups=1, chunk_size=4,
                   bos_token_id=1, eos_token_id=2, pad_token_id=0), **_TEXT),
    ModelSpec("jamba", "JambaForCausalLM",
              _cfg("JambaConfig", **_LLAMALIKE, num_experts=4, num_experts_per_tok=2, expert_layer_period=2,
                   expert_layer_offset=1, attn_layer_period=2, attn_layer_offset=1, mamba_d_state=8,
                   mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=4), **_TEXT),
]}


# ------------------------------------------------------------------------------------------ tracked failures
# What keeps a check from passing with zero fallbacks, measured on torch 2.13.0 + transformers 5.24.0. Owners in
# brackets. The tests mark these xfail(strict=True): when the cause is fixed the test XPASSes, fails, and the
# entry must be removed here. `python -m torchtpu.validate_models` shows them as "xfail" (or "pass*" when the
# numbers match but an op fell back to CPU).

REASONS: dict[str, str] = {
    # ecosystem paths (tests/models/test_ecosystem.py) and eager modes
    "accelerate": "[upstream accelerate] accelerate 1.15's PartialState.default_device knows no 'tpu' device, so "
                  "Trainer's accelerator.prepare() moves the model back to CPU while TrainingArguments.device is "
                  "tpu:0, unless torchtpu.integrations.trainer_state.configure_trainer_state() built its state and "
                  "TrainingArguments(accelerator_config=USE_CONFIGURED_STATE) uses it (docs/ecosystem.md)",
}

# model -> check -> '+'-joined REASONS keys
KNOWN_FAILURES: dict[str, dict[str, str]] = {}


def reason_text(keys: str) -> str:
    return "; ".join(REASONS[k] for k in keys.split("+"))


MODELS = {name: dataclasses.replace(spec, known_failures={c: r for c, r in KNOWN_FAILURES.get(name, {}).items()
                                                          if c in spec.checks()})
          for name, spec in MODELS.items()}
