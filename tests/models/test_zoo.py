"""The model zoo: every architecture in `torchtpu.validate_models.MODELS`, each check (forward at HIGHEST and
DEFAULT, greedy generate, one AdamW training step) against CPU, with zero CPU fallbacks required. Tracked
failures (`KNOWN_FAILURES`, with their reasons) are xfail(strict=True): fixing the cause makes the test fail
until the registry entry is removed."""

from __future__ import annotations

import pytest

from torchtpu import validate_models as vm

# the architectures issue #5 names; the registry may hold more
REQUIRED = ("bert", "roberta", "distilbert", "albert", "electra", "deberta-v2", "xlm-roberta", "gpt2", "gpt-neo",
            "opt", "llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3-moe", "gemma", "phi3", "falcon", "t5",
            "bart", "vit", "clip", "whisper", "wav2vec2")
# issue #24's families: encoder-decoder speech, vision transformers without torchvision, multimodal LM towers,
# state-space and hybrid models (their reference paths)
ISSUE_24 = ("moonshine", "dinov2", "siglip", "llava", "qwen2-vl", "mamba", "mamba2", "jamba")


def _cases():
    for name, spec in vm.MODELS.items():
        for check in spec.checks():
            keys = spec.known_failures.get(check)
            marks = [pytest.mark.xfail(strict=True, reason=vm.reason_text(keys))] if keys else []
            yield pytest.param(name, check, id=f"{name}-{check}", marks=marks)


@pytest.mark.parametrize(("name", "check"), list(_cases()))
def test_model_check(tpu, name, check):
    r = vm.run_check(vm.MODELS[name], check)
    assert r.ok, f"{name} {check}: {r.detail} (error {r.error}, tolerance {vm.TOLERANCE.get(check)})"
    assert not r.fallbacks, f"{name} {check} fell back to CPU: {r.fallbacks}"


def test_registry_covers_the_issue_list():
    assert set(REQUIRED) <= set(vm.MODELS) and set(ISSUE_24) <= set(vm.MODELS)
    for name in ("moonshine", "llava", "qwen2-vl", "mamba", "mamba2", "jamba"):
        assert vm.MODELS[name].generate, name
    for name, spec in vm.MODELS.items():
        assert set(spec.known_failures) <= set(spec.checks()), name
        for keys in spec.known_failures.values():
            vm.reason_text(keys)  # every key names a reason


def test_cli_prints_the_table(capsys):
    assert vm.main(["--models", "bert,gpt2", "--checks", "forward", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "BertForMaskedLM" in out and "GPT2LMHeadModel" in out and "pass" in out
    assert vm.main(["--models", "bert", "--checks", "forward", "--markdown", "--no-progress"]) == 0
    assert "| model |" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["gpt2", "t5"])
def test_forward_defer_and_fuse(tpu, name):
    """The same forward in DEFER_AND_FUSE (models whose forward has no stride-0 size-1 view, see test below)."""
    r = vm.run_check(vm.MODELS[name], "forward", eager_mode="DEFER_AND_FUSE")
    assert r.clean, (r.detail, r.error, r.fallbacks)


@pytest.mark.sim_only("bit-exact DEFER_AND_FUSE == DEFER_NEVER is the sim's per-op evaluation; XLA fuses and "
                      "reassociates f32 math inside a fused program (differences ~1e-4)")
@pytest.mark.parametrize("name", ["bert", "llama", "mamba", "qwen2-vl"])
def test_forward_defer_and_fuse_matches_defer_never(tpu, name):
    import torch

    import torchtpu

    spec = vm.MODELS[name]
    model = spec.build().to("tpu")
    inputs = vm.to_device(spec.make_inputs(), "tpu")
    with torch.no_grad():
        eager = vm._output(model(**inputs), spec.output).cpu()
        with torchtpu.eager_mode("DEFER_AND_FUSE"):
            fused = vm._output(model(**inputs), spec.output).cpu()
    torch.testing.assert_close(fused, eager, rtol=0, atol=0)
