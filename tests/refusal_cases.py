"""Shared by the refusal tests (test_fuzz_refusals*.py, test_spatial_checks.py): a call given as fn(device) that CPU
refuses must raise on tpu too, in CPU's class with CPU's first line of words, in the given eager mode."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def ones(*shape: int, dtype: torch.dtype = torch.float32, d: str = "cpu") -> torch.Tensor:
    return torch.ones(*shape, dtype=dtype, device=d)


def assert_refused_as_cpu(case: Callable[[str], object], mode: str) -> None:
    with pytest.raises(Exception) as cpu:
        case("cpu")
    with torch.tpu.eager_mode(mode), pytest.raises(type(cpu.value)) as tpu:
        case("tpu")
        torch.tpu.synchronize()
    assert str(cpu.value).split("\n")[0].strip() in str(tpu.value)
