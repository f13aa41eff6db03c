"""gelu (approximate='none') at +inf is +inf on tpu in every mode and length, as CPU's scalar path and float64 give
(CPU's vectorized float path gives NaN for 8 or more elements: known.json)."""

import pytest
import torch
from refusal_cases import MODES


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_gelu_at_inf_is_inf(mode: str, dtype: torch.dtype) -> None:
    x = torch.tensor([float("inf"), float("-inf"), float("nan"), 3.0] * 4, dtype=dtype)
    with torch.tpu.eager_mode(mode):
        got = torch.nn.functional.gelu(x.to("tpu")).cpu()
    assert torch.nn.functional.gelu(x[:1].double()).item() == float("inf")  # CPU's scalar path: the reference
    assert got[0::4].eq(float("inf")).all() and got[1::4].isnan().all() and got[2::4].isnan().all()
    torch.testing.assert_close(got[3::4], torch.nn.functional.gelu(x[3::4].double()).to(dtype))
