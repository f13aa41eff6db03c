"""PEFT LoRA on a zoo decoder (`torchtpu.model_zoo`'s Llama) on "tpu": training steps equal to CPU's (only the
adapters train), with gradient checkpointing, under bf16 autocast, and the merged model; zero CPU fallbacks."""

from __future__ import annotations

import copy

import pytest
import torch

import torchtpu
from torchtpu.validate_models import GRAD_FLOOR, MODELS, rel_error, to_device

peft = pytest.importorskip("peft", reason="the `ecosystem` extra is missing: pip install -e '.[ecosystem]'")

EXACT = 1e-4        # HIGHEST (about fp32): the zoo's train bound
BF16 = 3e-2         # bf16 autocast on both sides, different accumulation orders: test_autocast_model's bound
STEPS = 2


def _lora_llama(checkpointing: bool = False):
    spec = MODELS["llama"]
    model = spec.build()
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    cfg = peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "v_proj", "down_proj"],
                          task_type="CAUSAL_LM")
    torch.manual_seed(1)
    model = peft.get_peft_model(model, cfg)
    # LoRA's B starts at zero (the adapter is the identity at step 0); random B makes A's gradients nonzero
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.02)
    return model, spec.make_inputs()


def _train(model, inputs, device: str, autocast: bool = False):
    model = model.to(device).train()
    inputs = to_device(inputs, device)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    losses, grads = [], {}
    for _ in range(STEPS):
        with torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
            loss = model(**inputs).loss
        loss.backward()
        grads = grads or {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses, grads, model


@pytest.mark.parametrize("checkpointing", [False, True], ids=["plain", "checkpointing"])
def test_lora_trains_like_cpu(tpu, checkpointing):
    model, inputs = _lora_llama(checkpointing)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    ref_losses, ref_grads, _ = _train(copy.deepcopy(model), inputs, "cpu")
    with torchtpu.precision("HIGHEST"):
        losses, grads, model = _train(model, inputs, "tpu")
    assert set(grads) == set(ref_grads) == trainable          # the frozen base gets no gradient on either side
    for a, b in zip(ref_losses, losses):
        assert abs(a - b) <= EXACT * abs(a), (ref_losses, losses)
    floor = GRAD_FLOOR * max(g.abs().max().item() for g in ref_grads.values())
    worst = max((rel_error(ref_grads[n], grads[n], floor), n) for n in ref_grads)
    assert worst[0] <= EXACT, worst
    # merging the trained adapters into the base weights: on "tpu" as on CPU from the same (tpu-trained) weights
    # (not from CPU's trained weights: AdamW moves a parameter whose gradient is rounding noise by +-lr either way).
    # The merge's B @ A is a matmul too: at DEFAULT its products are bf16 (measured 1e-3 on the logits).
    ref_merged = copy.deepcopy(model).to("cpu").merge_and_unload().eval()
    cpu_inputs = MODELS["llama"].make_inputs()
    with torch.no_grad(), torchtpu.precision("HIGHEST"):
        merged = model.merge_and_unload().eval()
        ref = ref_merged(**cpu_inputs).logits
        got = merged(**to_device(cpu_inputs, "tpu")).logits
    assert rel_error(ref, got) <= EXACT
    assert not torchtpu.fallback_counts(), torchtpu.fallback_counts()


def test_lora_bf16_autocast_like_cpu(tpu):
    """torch.autocast("tpu", bfloat16) around the LoRA model (what accelerate's bf16 mixed precision does) vs
    CPU's bf16 autocast: losses within the bf16 bound, finite adapter gradients in float32."""
    model, inputs = _lora_llama()
    ref_losses, _, _ = _train(copy.deepcopy(model), inputs, "cpu", autocast=True)
    losses, grads, _ = _train(model, inputs, "tpu", autocast=True)
    for a, b in zip(ref_losses, losses):
        assert abs(a - b) <= BF16 * abs(a), (ref_losses, losses)
    assert all(g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads.values())
    assert not torchtpu.fallback_counts(), torchtpu.fallback_counts()
