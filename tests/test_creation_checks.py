"""Argument checks of tensor-creation ops as CPU makes them (class and words), in every eager mode: torch.complex
and torch.polar (parts Half/Float/Double of one dtype, out= of exactly their complex dtype); uniform_'s bounds
(within the dtype, from <= to, to - from within its max; integer and bool dtypes refused), normal_'s std >= 0,
eye's sizes, roll's shifts/dims, repeat_interleave's repeats (index dtype, 1-D, not negative)."""

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


def _uniform_calls() -> list[Callable[[str], torch.Tensor]]:
    calls = []
    for dtype in (torch.float16, torch.float32, torch.float64):
        for from_, to in ((42.0, 0.0), (-1e39, 0.0), (0.0, 1e39), (-60000.0, 60000.0), (-3e38, 3e38), (-1e308, 1e308),
                          (2.5, 2.5)):
            calls.append(lambda d, t=dtype, f=from_, e=to: torch.empty(64, dtype=t, device=d).uniform_(f, e).isfinite())
    calls.append(lambda d: torch.empty(8, device=d).normal_(0.0, -1.0))
    calls.append(lambda d: torch.empty(8, device=d).normal_(0.0, -2.5))
    return calls


@pytest.mark.parametrize("mode", MODES)
def test_uniform_and_normal_checks_as_cpu(mode: str) -> None:
    for fn in _uniform_calls():
        _same_as_cpu(mode, fn)
    with torch.tpu.eager_mode(mode):  # a float64 range beyond float32's: finite draws within it, as CPU's
        x = torch.empty(2000, dtype=torch.float64, device="tpu").uniform_(-42.0, torch.finfo(torch.float64).max)
        x = x.cpu()
    assert x.isfinite().all() and x.min() >= -42.0 and x.max() > 1e307


def _more_calls() -> list[Callable[[str], torch.Tensor]]:
    cube = lambda d: torch.arange(8, device=d).view(2, 2, 2)  # noqa: E731
    return [
        lambda d: torch.rand((2, 3), device=d, dtype=torch.int64),  # CPU refuses: no silent integer draws
        lambda d: torch.empty(3, dtype=torch.bool, device=d).uniform_(),
        lambda d: torch.empty(3, dtype=torch.complex64, device=d).uniform_().isfinite(),
        lambda d: torch.eye(-1, 1, device=d), lambda d: torch.eye(1, -1, device=d), lambda d: torch.eye(-1, device=d),
        lambda d: torch.eye(2, 3, device=d),
        lambda d: cube(d).roll(shifts=(), dims=()), lambda d: cube(d).roll(shifts=(), dims=1),
        lambda d: cube(d).roll(shifts=(1, 2), dims=(1,)), lambda d: cube(d).roll(shifts=(1, 2)),
        lambda d: cube(d).roll(shifts=3), lambda d: cube(d).roll(shifts=(1, -1), dims=(0, 2)),
        lambda d: torch.repeat_interleave(torch.arange(4, device=d).reshape(2, 2)),
        lambda d: torch.repeat_interleave(torch.arange(4.0, device=d)),
        lambda d: torch.repeat_interleave(torch.tensor([1, 2, -1, 3, 4], device=d)),
        lambda d: torch.repeat_interleave(torch.tensor([1, 2, 0, 3], device=d)),
        lambda d: torch.repeat_interleave(torch.tensor([], dtype=torch.int32, device=d)),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_rand_eye_roll_repeat_interleave_checks_as_cpu(mode: str) -> None:
    for fn in _more_calls():
        _same_as_cpu(mode, fn)
