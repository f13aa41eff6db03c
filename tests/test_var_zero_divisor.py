"""var/std with correction >= N: ATen divides by max(N - correction, 0), so a nonzero sum of squares gives inf
and 0 / 0 NaN; a complex input's real and imaginary parts are each divided (var(re) + var(im)), so one constant
part makes it NaN (fuzzer seed 4: std.correction_out of complex64 gave NaN where CPU gives inf). Compared with
CPU in every eager mode and under torch.compile, bit-identical across them."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES

INPUTS = {
    "real_spread": [1.0, 3.0], "real_constant": [1.0, 1.0], "complex_spread": [1 + 2j, 3 - 1j],
    "complex_real_part_constant": [1 + 2j, 1 + 5j], "one": [2.0],
}


def _calls(values: list[complex], device: str) -> list[torch.Tensor]:
    x = torch.tensor(values, device=device)
    out = torch.empty(0, dtype=x.dtype.to_real(), device=device)
    return [torch.var(x, correction=5), torch.std(x, correction=2), torch.var_mean(x, correction=3)[0],
            torch.ops.aten.std.correction_out(x, None, correction=5, out=out)]


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.cpu().reshape(-1).view(torch.int32)


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_matches_cpu_in_every_mode(name: str) -> None:
    cpu = _calls(INPUTS[name], "cpu")
    for mode in MODES:
        with torch.tpu.eager_mode(mode):
            got = _calls(INPUTS[name], "tpu")
            torch.tpu.synchronize()
        for g, c in zip(got, cpu):
            assert g.dtype == c.dtype
            assert torch.equal(_bits(g), _bits(c)), (mode, g, c)


def test_compiled_matches_cpu() -> None:
    torch._dynamo.reset()
    fn = torch.compile(lambda x: (torch.var(x, correction=5), torch.std(x, 0, correction=2)), backend="tpu")
    for values in INPUTS.values():
        got = fn(torch.tensor(values, device="tpu"))
        cpu = (torch.var(torch.tensor(values), correction=5), torch.std(torch.tensor(values), 0, correction=2))
        for g, c in zip(got, cpu):
            assert torch.equal(_bits(g), _bits(c)), (values, g, c)


def test_values() -> None:
    x = torch.tensor([1 + 2j, 3 - 1j], device="tpu")
    assert torch.std(x, correction=5).item() == float("inf")
