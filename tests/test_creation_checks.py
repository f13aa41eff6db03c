"""Argument checks of tensor-creation ops as CPU makes them (class and words), in every eager mode: torch.complex
and torch.polar (parts Half/Float/Double of one dtype, out= of exactly their complex dtype)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _outcome(fn: Callable[[str], torch.Tensor], device: str) -> tuple[str, str]:
    try:
        return "ok", str(fn(device).cpu())
    except Exception as e:  # noqa: BLE001 - the class and words are what is compared
        return type(e).__name__, str(e)


def _same_as_cpu(mode: str, fn: Callable[[str], torch.Tensor]) -> None:
    want = _outcome(fn, "cpu")
    with torch.tpu.eager_mode(mode):
        got = _outcome(fn, "tpu")
    assert got == want


def _complex_calls() -> list[Callable[[str], torch.Tensor]]:
    calls = []
    for op in (torch.complex, torch.polar):
        for a, b in ((torch.int64, torch.int64), (torch.bool, torch.bool), (torch.complex64, torch.complex64),
                     (torch.float32, torch.int32), (torch.float32, torch.float64), (torch.float64, torch.float32)):
            calls.append(lambda d, op=op, a=a, b=b: op(torch.ones(2, dtype=a, device=d),
                                                       torch.ones(2, dtype=b, device=d)))
        for part, out in ((torch.float32, torch.float32), (torch.float64, torch.float64),
                          (torch.float32, torch.complex128), (torch.float64, torch.complex128)):
            calls.append(lambda d, op=op, p=part, o=out: op(torch.tensor([1.0, 2], dtype=p, device=d),
                                                           torch.tensor([3.0, 4], dtype=p, device=d),
                                                           out=torch.zeros(2, dtype=o, device=d)))
    return calls


@pytest.mark.parametrize("mode", MODES)
def test_complex_and_polar_checks_as_cpu(mode: str) -> None:
    for fn in _complex_calls():
        _same_as_cpu(mode, fn)
