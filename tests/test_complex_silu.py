"""silu of a complex tensor (fuzz seed 6): CPU's complex kernel x / (1 + exp(-x)); tpu took the real part only.
Checked against CPU for silu, silu_ and silu.out in every eager mode and compiled, each bit-identical to
DEFER_NEVER."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES

import torchtpu  # noqa: F401

aten = torch.ops.aten
VALUES = [0.5 + 0.3j, -1 + 2j, 3 - 1j, 100 + 5j, -100 - 3j, 0j, -0.25 - 0.75j]


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int32 if t.dtype == torch.complex64 else torch.int64)


def _calls(x: torch.Tensor) -> list[torch.Tensor]:
    inplace = x.clone()
    aten.silu_(inplace)
    out = torch.empty_like(x)
    aten.silu.out(x, out=out)
    return [aten.silu(x), inplace, out]


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_silu_matches_cpu_in_every_mode(dtype: torch.dtype) -> None:
    x = torch.tensor(VALUES, dtype=dtype)
    expected = _calls(x)
    with torch.tpu.eager_mode("DEFER_NEVER"):
        reference = [t.cpu() for t in _calls(x.to("tpu"))]
    for got, want in zip(reference, expected, strict=True):
        torch.testing.assert_close(got, want, rtol=2e-6 if dtype == torch.complex64 else 1e-13, atol=0,
                                   equal_nan=True)
        assert got.imag.nan_to_num(0.0).abs().sum() > 0
    for mode in MODES[1:]:
        with torch.tpu.eager_mode(mode):
            got = [t.cpu() for t in _calls(x.to("tpu"))]
        for a, b in zip(got, reference, strict=True):
            assert torch.equal(_bits(a), _bits(b)), mode
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: torch.nn.functional.silu(t) * 1, backend="tpu")(x.to("tpu")).cpu()
    assert torch.equal(_bits(compiled), _bits(reference[0]))
