"""torch.nn.functional on tpu against CPU, for the causes PyTorch's test_nn.py (TestNNDeviceType) found: values in
every eager mode (bit-identical across modes) and under torch.compile(backend="tpu"); errors with CPU's class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _uint8(shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(1))


# (input shape, output size, mode, antialias, align_corners): uint8 bilinear/bicubic, down and up, with and without
# antialiasing (ATen's int16 fixed-point passes: it gave zeros before)
UINT8_RESIZE = [((1, 3, 40, 40), (32, 32), "bilinear", False, False),
                ((1, 3, 40, 40), (32, 32), "bilinear", True, True),
                ((2, 1, 7, 9), (7, 4), "bicubic", False, False), ((1, 2, 5, 5), (13, 3), "bicubic", True, False),
                ((1, 5, 20, 20), (60, 60), "bilinear", False, True), ((1, 3, 12, 10), (12, 30), "bicubic", False, True)]


def _resize(case: tuple[Any, ...], device: str) -> torch.Tensor:
    shape, size, mode, antialias, align = case
    return F.interpolate(_uint8(shape).to(device), size=size, mode=mode, antialias=antialias, align_corners=align)


@pytest.mark.parametrize("case", UINT8_RESIZE, ids=lambda c: f"{c[2]}_{c[0][2]}to{c[1][0]}_aa{int(c[3])}_al{int(c[4])}")
def test_uint8_interpolate_matches_cpu_in_every_mode(tpu, case):
    want = _resize(case, "cpu")
    got = {}
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got[mode] = _resize(case, "tpu").cpu()
    first = got["DEFER_NEVER"]
    assert first.dtype == torch.uint8 and first.shape == want.shape
    diff = (first.int() - want.int()).abs()
    # CPU computes its float weights in double before the int16 rounding: a tie may round the other way
    assert diff.max() <= 1 and (diff > 0).sum() <= max(2, want.numel() // 1000)
    for mode in MODES[1:]:
        assert torch.equal(got[mode], first), mode


def test_uint8_interpolate_compiled_matches_eager(tpu):
    def fn(x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, size=(9, 5), mode="bilinear", antialias=True)

    x = _uint8((1, 3, 14, 12)).to("tpu")
    assert torch.equal(torch.compile(fn, backend="tpu")(x).cpu(), fn(x).cpu())


def _outcome(fn: Callable[[str], Any], device: str) -> Any:
    try:
        return fn(device).cpu()
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        return type(e)
