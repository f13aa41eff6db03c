"""logit(x, eps) clamps to ATen's bounds computed in the result's dtype: lo = eps, hi = 1 - lo. In float16 an eps
of 1e-5 gives hi = 1.0, so logit of 1 is inf on CPU; tpu clamped in float32 and returned 11.5 (found by the schema
fuzzer, seed 3)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("eps", [1e-5, 1e-3, 1e-8])
def test_logit_at_the_bounds_equals_cpu(dtype: torch.dtype, eps: float, mode: str) -> None:
    x = torch.tensor([0.0, 1e-9, 1.0 - 1e-9, 1.0], dtype=dtype)
    expected = torch.logit(x, eps)
    with torch.tpu.eager_mode(mode):
        got = torch.logit(x.to("tpu"), eps).cpu()
    assert torch.equal(got.isinf(), expected.isinf()), (got, expected)
    torch.testing.assert_close(got, expected, rtol=1e-2 if dtype.itemsize == 2 else 1e-6, atol=0)


def test_compiled_logit_at_the_bounds_equals_cpu() -> None:
    x = torch.tensor([0.0, 0.5, 1.0], dtype=torch.float16)
    got = torch.compile(lambda t: torch.logit(t, 1e-5), backend="tpu")(x.to("tpu")).cpu()
    assert torch.equal(got, torch.logit(x, 1e-5))
