"""Reductions whose out= kernel reads the input in the out tensor's dtype (out_rules.ITERATOR_WRITES_OUT):
logsumexp.out, mean.out, std/var.correction_out. A float16 or bfloat16 input into a float32 or float64 out= is
computed there, not rounded to the input's dtype first and widened after (fuzz seed 22: logsumexp.out was 7e-3
off, std.out 3e-4); an out= the result cannot be cast into is refused in CPU's class and words, in every mode."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu


def _x(d: str, dtype: torch.dtype = torch.float16) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return (torch.randn(4, 50, generator=g) * 8).to(dtype).to(d)


def _out(d: str, dtype: torch.dtype, n: int = 4) -> torch.Tensor:
    return torch.empty(n, dtype=dtype, device=d)


@pytest.mark.parametrize("mode", MODES)
def test_logsumexp_and_mean_compute_in_the_out_dtype(mode):
    assert_exactly_cpu(lambda d: [
        torch.logsumexp(_x(d), 1, out=_out(d, torch.float32)),
        torch.logsumexp(_x(d, torch.bfloat16), 1, out=_out(d, torch.float64)),
        torch.mean(_x(d), 1, out=_out(d, torch.float32)),
        torch.mean(_x(d, torch.bfloat16), 1, out=_out(d, torch.float64)),
        torch.logsumexp(_x(d), 1),  # the functional form keeps its own dtype
    ], mode)


@pytest.mark.parametrize("mode", MODES)
def test_std_and_var_read_the_input_in_the_out_dtype(mode):
    with torch.tpu.eager_mode(mode):
        got = [torch.std(_x("tpu"), 1, out=_out("tpu", torch.float32)).cpu(),
               torch.var(_x("tpu", torch.bfloat16), 1, out=_out("tpu", torch.float64)).cpu()]
    want = [torch.std(_x("cpu"), 1, out=_out("cpu", torch.float32)),
            torch.var(_x("cpu", torch.bfloat16), 1, out=_out("cpu", torch.float64))]
    for g, w in zip(got, want, strict=True):  # the two-pass sums' order: within float32's last bits, not float16's
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


REFUSED = {
    "logsumexp into int64": lambda d: torch.logsumexp(_x(d), 1, out=_out(d, torch.int64)),
    "logsumexp into bool": lambda d: torch.logsumexp(_x(d, torch.float32), 1, out=_out(d, torch.bool)),
    "mean into int64": lambda d: torch.mean(_x(d, torch.float32), 1, out=_out(d, torch.int64)),
    "std into int64": lambda d: torch.std(_x(d), 1, out=_out(d, torch.int64)),
    "var into bool": lambda d: torch.var(_x(d, torch.float32), 1, out=_out(d, torch.bool)),
    "std of complex into int64": lambda d: torch.std(_x(d, torch.complex64), 1, out=_out(d, torch.int64)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(REFUSED))
def test_an_out_the_result_cannot_be_cast_into_is_refused(name, mode):
    assert_refused_as_cpu(REFUSED[name], mode)
