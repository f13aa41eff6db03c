"""Values where CPU's vectorized and scalar code paths disagree (known.json says why): tpu gives one answer at every
position and length, CPU's scalar path's (which float64 or CUDA share)."""

import pytest
import torch
from refusal_cases import MODES

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_gelu_at_inf_is_inf(mode: str, dtype: torch.dtype) -> None:
    x = torch.tensor([INF, -INF, NAN, 3.0] * 4, dtype=dtype)
    with torch.tpu.eager_mode(mode):
        got = torch.nn.functional.gelu(x.to("tpu")).cpu()
    assert torch.nn.functional.gelu(x[:1].double()).item() == INF  # CPU's scalar path: the reference
    assert got[0::4].eq(INF).all() and got[1::4].isnan().all() and got[2::4].isnan().all()
    torch.testing.assert_close(got[3::4], torch.nn.functional.gelu(x[3::4].double()).to(dtype))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", [torch.ops.aten.hardshrink_backward, torch.ops.aten.softshrink_backward])
def test_shrink_backward_at_nan_passes_grad(mode: str, op: torch._ops.OpOverloadPacket) -> None:
    grad, x = torch.arange(1.0, 34.0), torch.full((33,), NAN)
    assert op(grad[:1], x[:1], 0.5).item() == 1.0  # CPU's scalar path: the reference
    with torch.tpu.eager_mode(mode):
        got = op(grad.to("tpu"), x.to("tpu"), 0.5).cpu()
    assert torch.equal(got, grad)
