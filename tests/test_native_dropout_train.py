"""native_dropout as ATen's kernel: train=None trains (tpu returned the input unchanged, a silent wrong result),
and when training the mask's bernoulli_(1 - p) refuses a p outside [0, 1] in its words (tpu computed; fuzz seed 3)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu

REFUSED = {
    "p_minus_1_train_none": (-1.0, None),
    "p_2_train": (2.0, True),
    "p_1_5_train_none": (1.5, None),
    "p_nan_train": (float("nan"), True),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_probability_outside_0_1_is_refused_as_cpu(name: str, mode: str) -> None:
    p, train = REFUSED[name]
    assert_refused_as_cpu(lambda d: torch.ops.aten.native_dropout(torch.ones(3, 4, device=d), p, train), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("train", [None, True])
def test_train_none_drops_as_train_true(train: bool | None, mode: str) -> None:
    x = torch.rand(64, 64) + 1.0
    with torch.tpu.eager_mode(mode):
        out, mask = torch.ops.aten.native_dropout(x.to("tpu"), 0.5, train)
        out, mask = out.cpu(), mask.cpu()
    assert mask.dtype == torch.bool
    assert 0.4 < mask.float().mean().item() < 0.6
    assert torch.equal(out, torch.where(mask, x * 2.0, torch.zeros_like(x)))


@pytest.mark.parametrize("mode", MODES)
def test_not_training_keeps_the_input_for_any_p(mode: str) -> None:
    x = torch.rand(5, 3)
    with torch.tpu.eager_mode(mode):
        out, mask = torch.ops.aten.native_dropout(x.to("tpu"), 2.0, False)
        assert torch.equal(out.cpu(), x) and bool(mask.cpu().all())
