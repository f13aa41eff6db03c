"""Issue 17 (test_torch's test_is_set_to): `is_set_to` on tpu tensors is ATen's own kernel (registered for
PrivateUse1 in csrc/tpu_shim.cpp): same storage, offset, sizes and strides. Before, the CPU fallback compared
CPU copies, so it was always False. Each case is compared with CPU's answer, in every eager mode."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES

import torchtpu  # noqa: F401


def _answers(d: str) -> list[bool]:
    t1 = torch.empty(3, 4, 9, 10, device=d)
    t2 = torch.empty(3, 4, 9, 10, device=d)
    t3 = torch.tensor([], device=d).set_(t1)
    t4 = t3.clone().resize_(12, 90)
    b1 = torch.tensor([True, True], device=d)
    b2 = torch.tensor([False], device=d).set_(b1)
    v1 = torch.empty(2, 3, 4, device=d)
    e1 = torch.empty(2, 5, 0, device=d)
    return [t1.is_set_to(t2), t1.is_set_to(t3), t3.is_set_to(t1), t1.is_set_to(t4),
            torch.tensor([], device=d).is_set_to(torch.tensor([], device=d)), b1.is_set_to(b2),
            v1.is_set_to(v1.view(4, 3, 2)), v1.is_set_to(v1), v1.is_set_to(v1[1:]), v1.is_set_to(v1.transpose(0, 1)),
            e1.is_set_to(e1.view(2, 0, 5))]


@pytest.mark.parametrize("mode", MODES)
def test_equals_cpu(mode: str) -> None:
    expected = _answers("cpu")
    assert expected[1] and expected[2] and expected[5]  # the cases that were wrong: True on CPU
    with torch.tpu.eager_mode(mode):
        assert _answers("tpu") == expected


@pytest.mark.parametrize("mode", MODES)
def test_after_pending_writes(mode: str) -> None:
    """A set_ alias still counts after an op that writes through it (a deferred region in DEFER_AND_FUSE)."""
    with torch.tpu.eager_mode(mode):
        t1 = torch.zeros(4, device="tpu")
        t3 = torch.tensor([], device="tpu").set_(t1)
        t3.add_(1)
        assert t1.is_set_to(t3)
        assert t1.cpu().tolist() == [1.0, 1.0, 1.0, 1.0]
