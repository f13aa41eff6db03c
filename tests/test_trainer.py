"""transformers' `Trainer` on "tpu" with no environment variable (`torchtpu.integrations.trainer_state`): plain,
bf16 mixed precision (accelerate's autocast on "tpu") and gradient checkpointing, each against the same
Trainer run on CPU, zero CPU fallbacks; and the integration's error paths."""

from __future__ import annotations

import copy
import os
import tempfile

import pytest
import torch

import torchtpu
from torchtpu.integrations import trainer_state
from torchtpu.validate_models import _no_dropout

pytest.importorskip("accelerate", reason="the `models` extra is missing: pip install -e '.[models]'")
transformers = pytest.importorskip("transformers", reason="the `models` extra is missing")

# Losses over 3 steps: HIGHEST (about fp32) within 1e-4 relative of CPU's (the zoo's train bound); bf16 autocast
# on both sides rounds the same matmul operands to bf16, but the two sides accumulate in different orders, and
# the loss of a 3-class classifier (~1.1) moves by a few bf16 ulps (2^-8 = 3.9e-3): 2e-2, the ecosystem
# tests' bf16 bound.
EXACT = 1e-4
BF16 = 2e-2


@pytest.fixture
def no_accelerate_state(monkeypatch):
    """No ACCELERATE_TORCH_DEVICE, and accelerate's process-wide state reset before and after."""
    from accelerate.state import AcceleratorState

    monkeypatch.delenv("ACCELERATE_TORCH_DEVICE", raising=False)
    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


def _classifier():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, max_position_embeddings=32, num_labels=3)
    return transformers.BertForSequenceClassification(_no_dropout(cfg)).eval()


def _dataset() -> list[dict[str, object]]:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 64, (9, 8), generator=g)
    return [{"input_ids": ids[i].tolist(), "attention_mask": [1] * 8, "labels": i % 3} for i in range(9)]


def _train(model, **args) -> tuple[object, list[float]]:
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=False)  # mixed precision is fixed per AcceleratorState
    targs = transformers.TrainingArguments(
        output_dir=tempfile.mkdtemp(prefix="torchtpu-trainer-"), max_steps=3, per_device_train_batch_size=3,
        learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True, seed=0,
        dataloader_pin_memory=False, **args)
    trainer = transformers.Trainer(model=model, args=targs, train_dataset=_dataset())
    trainer.train()
    return trainer, [h["loss"] for h in trainer.state.log_history if "loss" in h]


def _cpu_losses(model, **args) -> list[float]:
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    losses = _train(copy.deepcopy(model), use_cpu=True, **args)[1]
    AcceleratorState._reset_state(reset_partial_state=True)
    return losses


@pytest.mark.parametrize(("args", "bound"), [({}, EXACT), ({"bf16": True}, BF16),
                                             ({"gradient_checkpointing": True}, EXACT)],
                         ids=["fp32", "bf16", "checkpointing"])
def test_trainer_on_tpu_without_env(tpu, no_accelerate_state, args, bound):
    model = _classifier()
    ref = _cpu_losses(model, **args)
    state = trainer_state.configure_trainer_state()
    assert state.device == torch.device("tpu", 0) and "ACCELERATE_TORCH_DEVICE" not in os.environ
    with torchtpu.precision("HIGHEST"):
        trainer, got = _train(model, accelerator_config=trainer_state.USE_CONFIGURED_STATE, **args)
    assert trainer.args.device.type == trainer.accelerator.device.type == "tpu"
    assert {p.device.type for p in trainer.model.parameters()} == {"tpu"}
    if args.get("bf16"):
        assert trainer.accelerator.mixed_precision == "bf16" and trainer.accelerator.native_amp
    assert len(got) == len(ref) == 3
    for a, b in zip(ref, got):
        assert abs(a - b) <= bound * abs(a), (ref, got)
    assert not torchtpu.fallback_counts(), torchtpu.fallback_counts()


def test_configured_state_leaves_cpu_runs_alone(tpu, no_accelerate_state):
    """The override is scoped to building the state: no variable is left behind, so a later default Trainer
    with use_cpu=True (which resets the state) is on CPU."""
    trainer_state.configure_trainer_state()
    targs = transformers.TrainingArguments(output_dir=tempfile.mkdtemp(prefix="torchtpu-trainer-"), use_cpu=True,
                                           report_to="none")
    trainer = transformers.Trainer(model=_classifier(), args=targs)
    assert trainer.args.device.type == trainer.accelerator.device.type == "cpu"


def test_accelerator_device_is_torch_accelerators(tpu):
    assert trainer_state.accelerator_device() == torch.device("tpu", torch.accelerator.current_device_index())
    assert trainer_state.accelerator_device(0) == torch.device("tpu", 0)


def test_bad_device_index_is_refused(tpu, no_accelerate_state):
    count = torch.accelerator.device_count()
    with pytest.raises(ValueError, match=rf"device index {count} is out of range for tpu \(valid: 0\.\.{count - 1}\)"):
        trainer_state.accelerator_device(count)
    with pytest.raises(ValueError, match="out of range"):
        trainer_state.configure_trainer_state(f"tpu:{count}")
    with pytest.raises(ValueError, match="cuda:0 is not torch.accelerator's device type 'tpu'"):
        trainer_state.configure_trainer_state("cuda:0")
    from accelerate.state import PartialState

    assert PartialState._shared_state == {}          # nothing half-built


def test_state_on_another_device_is_refused(tpu, no_accelerate_state):
    from accelerate.state import PartialState

    PartialState(cpu=True)
    with pytest.raises(RuntimeError, match="already on cpu, not tpu:0"):
        trainer_state.configure_trainer_state()
    assert PartialState().device.type == "cpu"          # left as it was
