"""upsample_nearest with an explicit scale: torch 2.13's CPU kernels for the 1d and 3d forwards index every output
as floor(dst * (1 / scale)), while upsample_nearest2d and every nearest backward keep nearest_idx's shortcuts (copy
when out == in, halve when out == 2 * in, whatever the scale). tpu gave the shortcuts everywhere (fuzz seed 8,
upsample_nearest1d(float32[4, 2, 2], [2], 3.0): 8 of 16 elements wrong)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

import torchtpu  # noqa: F401

aten = torch.ops.aten
SIZES = [(2, 2), (2, 4), (3, 5), (4, 2)]


def _calls(nd: int, n_in: int, n_out: int, scale: float, dtype: torch.dtype):  # noqa: ANN202 - a call list
    shape = [1, 2] + [n_in] * nd
    x = torch.arange(2 * n_in ** nd, dtype=dtype).reshape(shape)
    g = torch.arange(2 * n_out ** nd, dtype=dtype).reshape([1, 2] + [n_out] * nd)
    forward = getattr(aten, f"upsample_nearest{nd}d")
    backward = getattr(aten, f"upsample_nearest{nd}d_backward")

    def calls(d: str) -> list[torch.Tensor]:
        return [forward(x.to(d), [n_out] * nd, *[scale] * nd),
                backward(g.to(d), [n_out] * nd, shape, *[scale] * nd)]
    return calls


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_explicit_scale_as_cpu(mode: str, nd: int, dtype: torch.dtype) -> None:
    for n_in, n_out in SIZES:
        for scale in (3.0, 0.7, 2.0, 1.0):
            assert_exactly_cpu(_calls(nd, n_in, n_out, scale, dtype), mode)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_explicit_scale_compiled_as_cpu(nd: int) -> None:
    x = torch.arange(2 * 2 ** nd, dtype=torch.float32).reshape([1, 2] + [2] * nd)
    forward = getattr(aten, f"upsample_nearest{nd}d")

    def f(t: torch.Tensor) -> torch.Tensor:
        return forward(t, [2] * nd, *[3.0] * nd) * 2

    torch._dynamo.reset()
    got = torch.compile(f, backend="tpu")(x.to("tpu"))
    torch.testing.assert_close(got.cpu(), f(x), rtol=0, atol=0)
