"""Hugging Face model zoo on "tpu": the registry shared by `tests/models/` and `python -m torchtpu.validate_models`.

Each architecture is built from a small config (2 layers, hidden 32, vocab 128, 8 tokens) with seeded random
weights, no hub access, and run unmodified on CPU and on "tpu". Four checks per model:

- ``forward``:      the model's main output (logits) at HIGHEST precision (bf16x6 passes, near fp32) vs CPU;
- ``forward_bf16``: the same at DEFAULT precision (bf16 products, fp32 accumulation), bf16-justified tolerance;
- ``generate``:     ``model.generate`` with greedy decoding at HIGHEST gives exactly CPU's tokens (decoders,
                    encoder-decoders);
- ``train``:        one training step (``loss.backward()`` and AdamW) at HIGHEST: every gradient, and the loss
                    after the step, vs CPU.

Errors are relative to the scale of the reference: ``max|tpu - cpu| / max|cpu|`` per tensor (for gradients,
the worst tensor). Any CPU fallback is recorded per check (``torchtpu.fallback_counts()``); the goal is none.
A check that fails for a reason outside the model harness (a missing lowering, a bug elsewhere) is listed in
``KNOWN_FAILURES`` with its reason (``REASONS``, naming the owner); the tests mark it ``xfail(strict=True)``,
so it fails loudly once it is fixed, and the table shows it as a tracked failure.

Dropout is zeroed in every config (the device RNG differs from CPU's, so a dropout model cannot be compared
element-wise); the training step still runs in ``model.train()`` mode.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch  # noqa: E402

import torchtpu  # noqa: E402
from torchtpu import config  # noqa: E402

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
# Relative error bounds (see the module docstring for the metric).
# HIGHEST is bf16x6: about fp32 (2^-24 per product); a few transformer layers stay well under 1e-4.
# DEFAULT rounds both matmul operands to bf16 (8 significant bits: 2^-9 relative rounding per operand); through
# two layers, attention softmax and the output projection the dense models' logits move by 1e-3..8e-3 of their
# scale (measured). 5e-2 (about 13 bf16 roundings of the largest logit) also covers what moves discontinuously:
# an MoE router whose top-k choice flips under bf16 (Mixtral: 2.5e-2) and CLIP's exp(logit_scale) = 14x
# amplified image-text logits (1.9e-2).
# train (HIGHEST): the loss, each gradient (scale floored, see check_train) and the loss after one AdamW step;
# measured errors are 1e-6..1e-5, fp32 rounding through forward and backward.
TOLERANCE = {"forward": 1e-4, "forward_bf16": 5e-2, "train": 1e-4}
GRAD_FLOOR = 1e-3


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
                  "tpu:0; set ACCELERATE_TORCH_DEVICE=tpu (torchtpu does not set it: accelerate would then ignore "
                  "use_cpu=True)",
}

# model -> check -> '+'-joined REASONS keys
KNOWN_FAILURES: dict[str, dict[str, str]] = {}


def reason_text(keys: str) -> str:
    return "; ".join(REASONS[k] for k in keys.split("+"))


MODELS = {name: dataclasses.replace(spec, known_failures={c: r for c, r in KNOWN_FAILURES.get(name, {}).items()
                                                          if c in spec.checks()})
          for name, spec in MODELS.items()}


# --------------------------------------------------------------------------------------------------- checks


@dataclasses.dataclass
class CheckResult:
    model: str
    check: str
    ok: bool
    error: float | None = None          # relative error (see module docstring); None when not comparable
    detail: str = ""                    # mismatch or exception text
    fallbacks: dict[str, int] = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    known_failure: str | None = None    # REASONS keys, when KNOWN_FAILURES lists this check

    @property
    def clean(self) -> bool:
        """Within tolerance and with zero CPU fallbacks: what the tests require."""
        return self.ok and not self.fallbacks


def rel_error(ref: torch.Tensor, got: torch.Tensor, floor: float = 0.0) -> float:
    """max|got - ref| / max(max|ref|, floor)."""
    ref, got = ref.detach().float().cpu(), got.detach().float().cpu()
    if ref.shape != got.shape:
        raise AssertionError(f"shape {tuple(got.shape)} != CPU {tuple(ref.shape)}")
    if not torch.isfinite(got).all():
        return math.inf
    scale = max(ref.abs().max().item(), floor)
    diff = (ref - got).abs().max().item()
    return diff / scale if scale > 0 else diff


def to_device(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def _output(out: Any, field: str) -> torch.Tensor:
    return out[field] if isinstance(out, dict) else getattr(out, field)


def _forward(spec: ModelSpec, model: torch.nn.Module, device: str) -> torch.Tensor:
    inputs = to_device(spec.make_inputs(), device)
    with torch.no_grad():
        return _output(model(**inputs), spec.output).cpu()


def check_forward(spec: ModelSpec, precision: str = "HIGHEST") -> float:
    model = spec.build()
    ref = _forward(spec, model, "cpu")
    with torchtpu.precision(precision):
        got = _forward(spec, model.to("tpu"), "tpu")
    return rel_error(ref, got)


def _generate(spec: ModelSpec, model: torch.nn.Module, device: str) -> torch.Tensor:
    inputs = to_device(spec.make_inputs(), device)
    inputs.pop("labels", None)
    kwargs = dict(max_new_tokens=NEW_TOKENS, do_sample=False, num_beams=1)
    with torch.no_grad():
        return model.generate(**inputs, **kwargs).cpu()


def check_generate(spec: ModelSpec) -> tuple[torch.Tensor, torch.Tensor]:
    model = spec.build()
    ref = _generate(spec, model, "cpu")
    with torchtpu.precision("HIGHEST"):
        got = _generate(spec, model.to("tpu"), "tpu")
    return ref, got


def _train_step(spec: ModelSpec, model: torch.nn.Module, device: str):
    model.train()
    inputs = to_device(spec.make_inputs(), device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss = model(**inputs).loss
    loss.backward()
    grads = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
    opt.step()
    opt.zero_grad()
    with torch.no_grad():
        after = model(**inputs).loss
    return loss.detach().cpu(), grads, after.cpu()


def check_train(spec: ModelSpec, precision: str = "HIGHEST") -> tuple[float, str]:
    """Returns the worst relative error over the loss, every gradient and the loss after the AdamW step."""
    model = spec.build()
    ref = _train_step(spec, copy.deepcopy(model), "cpu")
    with torchtpu.precision(precision):
        got = _train_step(spec, model.to("tpu"), "tpu")
    errors = {"loss": rel_error(ref[0], got[0]), "loss after step": rel_error(ref[2], got[2])}
    if set(ref[1]) != set(got[1]):
        raise AssertionError(f"parameters with gradients differ: {sorted(set(ref[1]) ^ set(got[1]))}")
    # Some gradients are zero in exact arithmetic and only rounding noise on CPU (attention key biases: softmax
    # is invariant to a per-query shift), so each gradient's scale is floored at GRAD_FLOOR of the largest one.
    floor = GRAD_FLOOR * max(g.abs().max().item() for g in ref[1].values())
    for name, g in ref[1].items():
        errors[f"grad {name}"] = rel_error(g, got[1][name], floor)
    worst = max(errors, key=errors.get)
    return errors[worst], worst


def run_check(spec: ModelSpec, check: str, eager_mode: str | None = None) -> CheckResult:
    """Runs one check, catching everything: the table must show failures, not stop at them. `eager_mode`
    (e.g. "DEFER_AND_FUSE") runs the tpu side in that mode; tracked failures apply to the default mode only."""
    torchtpu.reset_fallback_counts()
    known = spec.known_failures.get(check) if eager_mode is None else None
    result = CheckResult(spec.name, check, ok=False, known_failure=known)
    start = time.perf_counter()
    mode = torchtpu.eager_mode(eager_mode) if eager_mode else contextlib.nullcontext()
    try:
        mode.__enter__()
        if check == "forward":
            result.error = check_forward(spec, "HIGHEST")
            result.ok = result.error <= TOLERANCE[check]
        elif check == "forward_bf16":
            result.error = check_forward(spec, "DEFAULT")
            result.ok = result.error <= TOLERANCE[check]
        elif check == "generate":
            ref, got = check_generate(spec)
            result.ok = ref.shape == got.shape and torch.equal(ref, got)
            result.error = 0.0 if result.ok else 1.0
            if not result.ok:
                result.detail = f"tokens differ: cpu {ref.tolist()} tpu {got.tolist()}"
        elif check == "train":
            result.error, worst = check_train(spec)
            result.ok = result.error <= TOLERANCE[check]
            result.detail = f"worst: {worst}"
        else:
            raise ValueError(f"unknown check {check!r}; valid: {CHECKS}")
        if not result.ok and not result.detail:
            result.detail = f"error {result.error:.3g} > tolerance {TOLERANCE.get(check)}"
    except Exception as exc:  # noqa: BLE001 - reported in the table
        result.detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        if config.get("TORCHTPU_VALIDATE_TRACEBACK"):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            mode.__exit__(None, None, None)
    result.seconds = time.perf_counter() - start
    result.fallbacks = torchtpu.fallback_counts()
    torch.tpu.synchronize()
    return result


# ---------------------------------------------------------------------------------------------------- table


def validate(names: list[str] | None = None, checks: tuple[str, ...] = CHECKS,
             progress: bool = True, eager_mode: str | None = None) -> list[CheckResult]:
    from tqdm import tqdm

    names = names or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; known: {', '.join(MODELS)}")
    jobs = [(MODELS[n], c) for n in names for c in MODELS[n].checks() if c in checks]
    results = []
    bar = tqdm(jobs, disable=not progress, unit="check", file=sys.stderr)
    for spec, check in bar:
        bar.set_description(f"{spec.name}:{check}")
        with _quiet():
            results.append(run_check(spec, check, eager_mode))
    return results


@contextlib.contextmanager
def _quiet():
    """Silences transformers' per-call warnings (generation flags, untied weights) during a check."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover
        yield
        return
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def _cell(r: CheckResult | None) -> str:
    """pass: within tolerance, zero fallbacks; pass*: within tolerance with CPU fallbacks; xfail: a tracked
    failure; FAIL: an untracked one; XPASS: tracked but now clean (remove it from KNOWN_FAILURES)."""
    if r is None:
        return "-"
    err = "" if r.error is None or r.check == "generate" or not math.isfinite(r.error) else f" {r.error:.1e}"
    if r.clean:
        return ("XPASS" if r.known_failure else "pass") + err
    if r.ok:
        return "pass*" + err
    return f"xfail({r.known_failure})" if r.known_failure else "FAIL" + err


def format_table(results: list[CheckResult], markdown: bool = False) -> str:
    by_model: dict[str, dict[str, CheckResult]] = {}
    for r in results:
        by_model.setdefault(r.model, {})[r.check] = r
    checks = [c for c in CHECKS if any(c in row for row in by_model.values())]
    header = ["model", "arch", *checks, "fallbacks"]
    rows = []
    for name, row in by_model.items():
        falls: dict[str, int] = {}
        for r in row.values():
            for op, n in r.fallbacks.items():
                falls[op] = falls.get(op, 0) + n
        rows.append([name, MODELS[name].arch, *(_cell(row.get(c)) for c in checks),
                     ", ".join(f"{op} x{n}" for op, n in sorted(falls.items())) or "0"])
    notes = [r for r in results if not r.clean]
    passed = sum(r.ok for r in results)
    clean = sum(r.clean for r in results)
    summary = (f"{clean}/{len(results)} checks pass with zero fallbacks ({passed} within tolerance); "
               f"{sum(1 for row in by_model.values() if all(r.clean for r in row.values()))}"
               f"/{len(by_model)} models pass every check with zero fallbacks. Errors: max|tpu-cpu|/max|cpu|. "
               "pass* = within tolerance but with CPU fallbacks; xfail = tracked failure (reason below).")
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines += ["", summary]
        lines += [f"- {r.model} {r.check}: {_note(r)}" for r in notes]
        lines += ["", "Tracked failure reasons:", ""] + ["-" + x[1:] for x in _legend(results)]
        return "\n".join(lines)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header[:-1])]
    fmt = "  ".join(f"{{:{w}}}" for w in widths) + "  {}"
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths), "-" * 9)]
    lines += [fmt.format(*row) for row in rows]
    lines += ["", summary]
    lines += [f"  {r.model} {r.check}: {_note(r)}" for r in notes]
    lines += ["", "tracked failure reasons:"] + _legend(results)
    return "\n".join(lines)


def _legend(results: list[CheckResult]) -> list[str]:
    keys = sorted({k for r in results if r.known_failure and not r.clean for k in r.known_failure.split("+")})
    return [f"  {k}: {REASONS[k]}" for k in keys]


def _note(r: CheckResult) -> str:
    parts = [f"[{r.known_failure}]" if r.known_failure else "UNTRACKED"]
    if r.detail and not (r.ok and r.detail.startswith("worst:")):
        parts.append(r.detail[:160])
    if r.fallbacks:
        parts.append("fallbacks: " + ", ".join(f"{op} x{n}" for op, n in sorted(r.fallbacks.items())))
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchtpu.validate_models", description=__doc__.splitlines()[0])
    parser.add_argument("--models", help=f"comma-separated subset of: {', '.join(MODELS)}")
    parser.add_argument("--checks", default=",".join(CHECKS), help=f"comma-separated subset of: {', '.join(CHECKS)}")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument("--eager-mode", help="run the tpu side in this eager mode (e.g. DEFER_AND_FUSE); "
                        "tracked failures are not applied then")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise SystemExit("the model zoo needs the `models` extra: pip install -e '.[models]'") from None
    names = args.models.split(",") if args.models else None
    checks = tuple(c for c in args.checks.split(",") if c)
    results = validate(names, checks, progress=not args.no_progress, eager_mode=args.eager_mode)
    print(format_table(results, markdown=args.markdown))
    # exit status: 1 when a check fails untracked, or a tracked failure now passes (the registry is stale)
    stale = [r for r in results if r.clean == bool(r.known_failure)]
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
