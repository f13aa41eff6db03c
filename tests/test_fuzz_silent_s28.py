"""Silent wrong results the fuzzer found (seeds 28 and 29), refused or equal to CPU's now, every eager mode and
compiled: the reflection/replication padding backward ops took a grad_output whose leading (batch, channel) sizes
differ from input's (ATen checks only the padded dims and reads it as input's shape: garbage or out of bounds; tpu
gave grad_output's leading sizes: shape [4, 1, 4] for CPU's [5, 1]) and skipped the kernel's dtype dispatch and its
grad/input dtype match where the shapes differ; replication_pad3d_backward's channel check. (Seed 28's CPU crash,
batch norm with running stats of shape [0]: tests/test_fuzz_cpu_crashes.py.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu, assert_refused_as_cpu_compiled

aten = torch.ops.aten


def _pad_bw(name: str, grad: tuple[int, ...], x: tuple[int, ...], pad: list[int], gdt: torch.dtype = torch.float32,
            xdt: torch.dtype = torch.float32) -> Callable[[str], object]:
    def case(d: str) -> object:
        g = torch.arange(torch.Size(grad).numel(), device=d).reshape(grad).to(gdt)
        return getattr(aten, name)(g, torch.zeros(x, dtype=xdt, device=d), pad)
    return case


# CPU refuses these; tpu skipped the check where the shapes differ (or matched: the integer dispatch)
REFUSED = {
    "grad_double_input_float": _pad_bw("replication_pad1d_backward", (2, 3, 6), (3, 2, 4), [1, 1], torch.float64),
    "reflect2d_grad_double": _pad_bw("reflection_pad2d_backward", (2, 3, 4, 6), (3, 2, 4, 4), [1, 1, 0, 0],
                                     torch.float64),
    "grad_bool": _pad_bw("replication_pad1d_backward", (2, 3, 6), (3, 2, 4), [1, 1], torch.bool),
    "int64_matching": _pad_bw("replication_pad1d_backward", (3, 2, 6), (3, 2, 4), [1, 1], torch.int64, torch.int64),
    "grad_float_input_long": _pad_bw("replication_pad2d_backward", (2, 3, 4, 6), (3, 2, 4, 4), [1, 1, 0, 0],
                                     torch.float32, torch.int64),
    "replicate3d_channel": _pad_bw("replication_pad3d_backward", (2, 3, 2, 4, 6), (3, 2, 2, 4, 4),
                                   [1, 1, 0, 0, 0, 0]),
    "replicate3d_channel_unbatched": _pad_bw("replication_pad3d_backward", (3, 2, 4, 6), (2, 2, 4, 4),
                                             [1, 1, 0, 0, 0, 0]),
}

# CPU computes these from memory it reads as the wrong shape (garbage, or past grad_output's end): tpu refuses
UNCHECKED = {
    "seed29_replicate1d": _pad_bw("replication_pad1d_backward", (4, 3, 4), (5, 1), [2, 0]),
    "replicate1d_batch": _pad_bw("replication_pad1d_backward", (2, 3, 6), (3, 2, 4), [1, 1]),
    "reflect1d_batch": _pad_bw("reflection_pad1d_backward", (2, 3, 6), (3, 2, 4), [1, 1]),
    "reflect2d_rank": _pad_bw("reflection_pad2d_backward", (3, 4, 6), (2, 4, 4), [1, 1, 0, 0]),
    "replicate2d_batch": _pad_bw("replication_pad2d_backward", (2, 2, 4, 6), (3, 2, 4, 4), [1, 1, 0, 0]),
    "replicate3d_batch": _pad_bw("replication_pad3d_backward", (2, 2, 2, 4, 6), (3, 2, 2, 4, 4), [1, 1, 0, 0, 0, 0]),
    "reflect3d_batch": _pad_bw("reflection_pad3d_backward", (2, 3, 2, 4, 6), (3, 2, 2, 4, 4), [1, 1, 0, 0, 0, 0]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", REFUSED)
def test_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[case], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", UNCHECKED)
def test_unchecked_grad_refused(case: str, mode: str) -> None:
    UNCHECKED[case]("cpu")  # CPU computes (from the wrong memory)
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="grad_output of shape .* tpu refuses it"):
        UNCHECKED[case]("tpu")
        torch.tpu.synchronize()


def test_matching_grad_still_computes() -> None:
    for name, grad, x, pad in (("replication_pad1d_backward", (3, 2, 6), (3, 2, 4), [1, 1]),
                               ("reflection_pad2d_backward", (2, 4, 6), (2, 4, 4), [1, 1, 0, 0]),
                               ("replication_pad3d_backward", (2, 2, 2, 4, 6), (2, 2, 2, 4, 4), [1, 1, 0, 0, 0, 0])):
        case = _pad_bw(name, grad, x, pad)
        assert torch.equal(case("tpu").cpu(), case("cpu"))


def test_compiled() -> None:
    assert_refused_as_cpu_compiled(REFUSED["grad_double_input_float"])
    torch._dynamo.reset()
    with pytest.raises(Exception) as tpu:
        torch.compile(lambda: UNCHECKED["seed29_replicate1d"]("tpu"), backend="tpu")()
        torch.tpu.synchronize()
    assert "tpu refuses it" in str(tpu.value)

