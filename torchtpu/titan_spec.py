"""TorchTitan (0.3.0) configs that train on "tpu" unmodified: `--module torchtpu.titan_spec --config NAME`.

TorchTitan's ConfigManager imports any module named by `--module` and calls its `--config` function, the same
extension point its experiments use; nothing of TorchTitan is patched. Every language model it ships attends
through FlexAttention, which torch 2.13 refuses on PrivateUse1 (`flex_attention._validate_device`), and 0.3.0
rejects its SDPA backend for language models (`get_attention_config("sdpa")` raises). The configs here keep the
llama3 model, its parallelize function, trainer and checkpointing, and swap only the inner attention for
`DocumentCausalSDPA`: the same block-causal (causal within each packed document) mask as TorchTitan's flex path,
as a dense boolean mask built from the dataloader's per-document positions, through
`F.scaled_dot_product_attention`. The same config runs on cpu (the reference) and on tpu.

`make_debug_assets(dir)` writes a small tokenizer and text data set for the debug model, since the wheel ships
neither `tests/assets/tokenizer` nor `tests/assets/c4_test` (they live in TorchTitan's source tree).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torchtitan.models.common.attention import VarlenAttention
from torchtitan.models.llama3 import model_registry
from torchtitan.models.llama3.config_registry import llama3_debugmodel
from torchtitan.models.llama3.model import Llama3Model
from torchtitan.protocols.module import Module
from torchtitan.trainer import Trainer

if not hasattr(torch.distributed, "set_timeout"):
    # TorchTitan 0.3.0 calls `torch.distributed.set_timeout` (newer than torch 2.13) after the first step; 2.13
    # has the same operation as `_set_pg_timeout` (which sets gloo/nccl timeouts and warns for other backends).
    from torch.distributed.distributed_c10d import _set_pg_timeout

    torch.distributed.set_timeout = _set_pg_timeout

__all__ = ["DocumentCausalSDPA", "SdpaLlama3Model", "SimClockTrainer", "llama3_debugmodel_sdpa", "make_debug_assets"]


def document_causal_mask(positions: torch.Tensor) -> torch.Tensor:
    """(B, 1, L, L) boolean mask: query i sees key j when j <= i and both lie in the same packed document.

    Documents start where `positions` is 0 (TorchTitan's convention, `get_document_mask_mod`); this is the mask
    its flex path builds from `get_causal_mask_mod` and the packed-document mask mod.
    """
    if positions.dim() != 2:
        raise ValueError(f"positions must be (batch, seq_len), got shape {tuple(positions.shape)}")
    doc = torch.cumsum((positions == 0).to(torch.int32), dim=1)
    same_doc = doc.unsqueeze(2) == doc.unsqueeze(1)
    seq_len = positions.shape[1]
    idx = torch.arange(seq_len, device=positions.device)
    causal = idx.unsqueeze(1) >= idx.unsqueeze(0)
    return (same_doc & causal).unsqueeze(1)


class DocumentCausalSDPA(VarlenAttention):
    """Inner attention through SDPA with the dense document-causal mask from `SdpaLlama3Model`.

    Its Config subclasses `VarlenAttention.Config` only so that TorchTitan's trainer asks the model for masks
    (it does so for the flex and varlen configs alone); no varlen kernel is used.
    """

    @dataclass(kw_only=True, slots=True)
    class Config(VarlenAttention.Config):
        pass

    def __init__(self, config: Config) -> None:
        Module.__init__(self)
        self.window_size = config.window_size
        if tuple(config.window_size) != (-1, 0):
            raise ValueError(f"DocumentCausalSDPA is causal only: window_size must be (-1, 0), got "
                             f"{config.window_size}")

    def forward(self, q_BLNH: torch.Tensor, k_BLNH: torch.Tensor, v_BLNH: torch.Tensor, *,
                attention_masks: torch.Tensor | None = None, scale: float | None = None,
                enable_gqa: bool = False, out_transform: object = None, **kwargs: object) -> torch.Tensor:
        if out_transform is not None:
            raise NotImplementedError("DocumentCausalSDPA does not return the log-sum-exp (out_transform)")
        if attention_masks is not None and not (isinstance(attention_masks, torch.Tensor)
                                                and attention_masks.dtype == torch.bool):
            raise TypeError(f"DocumentCausalSDPA needs the boolean mask of SdpaLlama3Model.get_attention_masks, "
                            f"got {type(attention_masks).__name__}: use llama3_debugmodel_sdpa's model config")
        q, k, v = (t.transpose(1, 2) for t in (q_BLNH, k_BLNH, v_BLNH))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_masks,
                                             is_causal=attention_masks is None, scale=scale, enable_gqa=enable_gqa)
        return out.transpose(1, 2)


class SdpaLlama3Model(Llama3Model):
    """TorchTitan's llama3 whose attention masks are dense booleans (for `DocumentCausalSDPA`)."""

    @dataclass(kw_only=True, slots=True)
    class Config(Llama3Model.Config):
        pass

    def get_attention_masks(self, positions: torch.Tensor) -> torch.Tensor:
        return document_causal_mask(positions)


def _sdpa_model_config(model: Llama3Model.Config) -> SdpaLlama3Model.Config:
    for layer in model.layers:
        layer.attention.inner_attention = DocumentCausalSDPA.Config()
    values = {f.name: getattr(model, f.name) for f in dataclasses.fields(model) if f.init}
    return SdpaLlama3Model.Config(**values)


class SimClockTrainer(Trainer):
    """TorchTitan's Trainer that also records each step's simulated time on this rank's chip and its host time.

    With `--sim_times_path DIR` (a field of its Config, so TorchTitan's own CLI takes it) every rank writes
    `DIR/rank{RANK}.json` at the end: per step the simulated seconds (the chip's clock, from a synchronized
    device before the step to a synchronized device after it), the host seconds, the launches and per op its
    launches, simulated seconds and HBM bytes. Training is
    TorchTitan's `train_step`, unchanged: the synchronizations add no simulated time (the step ends in
    `loss.item()` already).
    """

    @dataclass(kw_only=True, slots=True)
    class Config(Trainer.Config):
        sim_times_path: str | None = None
        """Directory for each rank's per-step simulated / host seconds (benchmarks/scaling_titan.py)."""

    def train_step(self, data_iterator: object) -> None:
        from torchtpu.distributed import clock

        if not self.config.sim_times_path:
            return super().train_step(data_iterator)
        tl = clock.timeline_of(torch.tpu.current_device())
        torch.tpu.synchronize()
        sim0, n0, host0 = tl.wall_seconds, tl.launch_count, time.perf_counter()
        out = super().train_step(data_iterator)
        torch.tpu.synchronize()
        steps = getattr(self, "_sim_steps", [])
        ops: dict[str, list[float]] = {}
        for r in tl.records_since(n0):
            acc = ops.setdefault(r.op, [0, 0.0, 0.0])
            acc[0] += 1
            acc[1] += r.end - r.start
            acc[2] += r.hbm_bytes
        steps.append({"step": self.step, "sim": tl.wall_seconds - sim0, "host": time.perf_counter() - host0,
                      "launches": tl.launch_count - n0, "ops": ops})
        self._sim_steps = steps
        return out

    def close(self) -> None:
        super().close()
        if self.config.sim_times_path and getattr(self, "_sim_steps", None):
            path = Path(self.config.sim_times_path)
            path.mkdir(parents=True, exist_ok=True)
            rank = int(os.environ.get("RANK", "0"))
            (path / f"rank{rank}.json").write_text(json.dumps({"rank": rank, "steps": self._sim_steps}))


def llama3_debugmodel_sdpa() -> SimClockTrainer.Config:
    """TorchTitan's `llama3_debugmodel` with SDPA attention: `--module torchtpu.titan_spec --config
    llama3_debugmodel_sdpa`. Its trainer is `SimClockTrainer` (TorchTitan's, plus `--sim_times_path`)."""
    base = llama3_debugmodel()
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.init}
    config = SimClockTrainer.Config(**values)
    spec = model_registry("debugmodel")
    spec.model = _sdpa_model_config(spec.model)
    config.model_spec = spec
    return config


_WORDS = ("the chip runs a step of the model on its matrix unit while the host waits for the result and the "
          "simulator charges each op its time from the roofline of the torus link memory and vector unit").split()


def make_debug_assets(root: str | Path, *, documents: int = 400, copies: int = 8,
                      seed: int = 0) -> tuple[Path, Path]:
    """Writes `root/tokenizer` (a byte-level BPE tokenizer.json + tokenizer_config.json, vocab <= 2048, the debug
    model's size) and `root/c4_test/train.json` (`documents` texts, `copies` times, one {"text": ...} a line);
    deterministic in `seed`.
    Returns (tokenizer_dir, dataset_dir) for `--hf_assets_path` and `--dataloader.dataset_path`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    root = Path(root)
    tok_dir, data_dir = root / "tokenizer", root / "c4_test"
    tok_dir.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 120))) for _ in range(documents)]
    if copies < 1:
        raise ValueError(f"copies must be >= 1 (one per data-parallel rank at most), got {copies}")
    # Written `copies` times: a data-parallel run of D ranks (D dividing `copies`; each rank reads one contiguous
    # D-th, TorchTitan's split_dataset_by_node) then sees on every rank the very batches a 1-rank run sees, so its
    # loss curve must equal the 1-rank curve.
    with open(data_dir / "train.json", "w") as f:
        for text in texts * copies:
            f.write(json.dumps({"text": text}) + "\n")
    bos, eos = "<|begin_of_text|>", "<|end_of_text|>"
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=[bos, eos],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    tok.save(str(tok_dir / "tokenizer.json"))
    (tok_dir / "tokenizer_config.json").write_text(json.dumps({"bos_token": bos, "eos_token": eos}))
    return tok_dir, data_dir


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m torchtpu.titan_spec ASSET_DIR  (writes the debug tokenizer and data)")
    print(*make_debug_assets(sys.argv[1]))
