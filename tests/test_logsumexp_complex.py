"""logsumexp of a complex input: ATen takes the max of the real parts out (an infinite one as 0) and keeps the
complex dtype; tpu converted the input to float32 and returned the real part only (fuzz seed 8,
logsumexp(complex64[1, 4, 2, 1], [3]))."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu

import torchtpu  # noqa: F401

INF, NAN = float("inf"), float("nan")


def _input(dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 5, 3, dtype=dtype, generator=g) * 3
    x[0, 1, 0] = complex(INF, 1.0)
    x[1, :, 0] = complex(-INF, 2.0)
    x[2, 2, 1] = complex(NAN, 1.0)
    x[3, 3, 2] = complex(1.0, INF)
    return x


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, equal_nan=True)  # exp/log of complex: a few ulp from CPU's libm


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize(("dim", "keepdim"), [([1], False), ([1], True), ([0, 2], False), ([], True)])
def test_complex_logsumexp_as_cpu(mode: str, dtype: torch.dtype, dim: list[int], keepdim: bool) -> None:
    x = _input(dtype)
    with torch.tpu.eager_mode(mode):
        got = torch.logsumexp(x.to("tpu"), dim, keepdim)
        torch.tpu.synchronize()
    _close(got, torch.logsumexp(x, dim, keepdim))


def test_complex_logsumexp_modes_bit_identical() -> None:
    x = _input(torch.complex64).to("tpu")
    results = []
    for mode in MODES:
        with torch.tpu.eager_mode(mode):
            results.append(torch.logsumexp(x, [1]).cpu())
    for r in results[1:]:
        torch.testing.assert_close(r, results[0], rtol=0, atol=0, equal_nan=True)


def test_complex_logsumexp_compiled_as_cpu() -> None:
    x = _input(torch.complex64)
    torch._dynamo.reset()
    got = torch.compile(lambda t: torch.logsumexp(t, [1]), backend="tpu")(x.to("tpu"))
    _close(got, torch.logsumexp(x, [1]))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64])
def test_no_dims_without_keepdim_refused_as_cpu(mode: str, dtype: torch.dtype) -> None:
    """dim=[] reduces every dim; ATen then squeezes none of them and cannot add the 1 x 1 x 1 max to the 0-d sum."""
    assert_refused_as_cpu(lambda d: torch.logsumexp(_input(torch.complex64).to(dtype).to(d), []), mode)
