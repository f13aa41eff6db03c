"""Hugging Face `Trainer` on "tpu" without ``ACCELERATE_TORCH_DEVICE``: accelerate's process state on our device.

accelerate 1.15 picks its device in ``PartialState.default_device`` from a fixed list (mps, mlu, sdaa, musa, npu,
hpu, cuda, xpu, neuron, else cpu; ``accelerate/state.py``). It has no ``torch.accelerator`` branch and no
registration hook; its one device override is the ``ACCELERATE_TORCH_DEVICE`` variable, read once when the
process-wide ``PartialState`` is first built. transformers already picks ``tpu:0`` for
``TrainingArguments.device`` (``is_torch_tpu_available``: ``torch.accelerator`` is "tpu"), but
``Accelerator.prepare`` then moves the model to accelerate's device, CPU, and the first step fails on mixed
devices.

This module does what the upstream fix would (a ``torch.accelerator`` branch in ``default_device``) through the
two public doors both libraries have, without patching either:

- :func:`accelerator_device`: the device that branch returns, ``torch.accelerator``'s current one;
- :func:`configure_trainer_state`: builds accelerate's shared ``PartialState`` on that device, passing the
  documented override only for that one construction (accelerate's own ``patch_environment``), so no variable
  stays in the process and a later ``use_cpu=True`` run is unaffected;
- :data:`USE_CONFIGURED_STATE`: the ``TrainingArguments(accelerator_config=...)`` that tells transformers to use
  that configured state instead of resetting it (its ``AcceleratorConfig.use_configured_state``).
"""

from __future__ import annotations

from typing import Any

import torch

USE_CONFIGURED_STATE: dict[str, Any] = {"use_configured_state": True}


def accelerator_device(index: int | None = None) -> torch.device:
    """The device a ``torch.accelerator``-aware ``default_device`` picks: the current accelerator at `index`
    (default: its current index). Raises when no accelerator is available (the caller then wants CPU)."""
    acc = torch.accelerator.current_accelerator(check_available=True)
    if acc is None:
        raise RuntimeError("torch.accelerator has no available device; use accelerate's default (CPU) state")
    count = torch.accelerator.device_count()
    if index is None:
        index = torch.accelerator.current_device_index()
    if not 0 <= index < count:
        raise ValueError(f"device index {index} is out of range for {acc.type} (valid: 0..{count - 1})")
    return torch.device(acc.type, index)


def configure_trainer_state(device: torch.device | str | None = None) -> Any:
    """Builds accelerate's process-wide ``PartialState`` on `device` (default :func:`accelerator_device`) and
    returns it. Pass ``accelerator_config=USE_CONFIGURED_STATE`` to ``TrainingArguments`` so that its
    ``Trainer`` uses this state. An existing state on another device is an error (accelerate keeps one state
    per process: ``AcceleratorState._reset_state(reset_partial_state=True)`` drops it)."""
    from accelerate.state import PartialState
    from accelerate.utils import patch_environment

    target = torch.device(device) if device is not None else accelerator_device()
    if target.type != "cpu":
        target = accelerator_device(target.index)   # checks the type is torch.accelerator's, and the index
        if device is not None and torch.device(device).type != target.type:
            raise ValueError(f"{device} is not torch.accelerator's device type {target.type!r} (or 'cpu')")
    if PartialState._shared_state:
        state = PartialState()
        if state.device != target:
            raise RuntimeError(f"accelerate's process state is already on {state.device}, not {target}; reset it "
                               "with AcceleratorState._reset_state(reset_partial_state=True) first")
        return state
    with patch_environment(ACCELERATE_TORCH_DEVICE=str(target)):
        state = PartialState()
    if target.type != "cpu":
        torch.accelerator.set_device_index(target.index)
    return state
