"""Batch norm in training with one value per channel: the unbiased running variance is ATen's var_sum / (n - 1),
0 / 0, so running_var becomes NaN as on CPU (tpu divided by max(n - 1, 1) and kept a finite running_var: fuzz
seed 17, _native_batch_norm_legit of float16[1, 5]). Under torch.compile, PyTorch's own decomposition divides
n / (n - 1) in Python and raises ZeroDivisionError while Dynamo traces, on CPU as on tpu: not tested here."""

import pytest
import torch
from refusal_cases import MODES


def _running_stats(d: str, dtype: torch.dtype, shape: tuple[int, ...], momentum: float) -> list[torch.Tensor]:
    torch.manual_seed(0)
    x = torch.randn(shape).to(dtype).to(d)
    running_mean = torch.zeros(shape[1], dtype=dtype, device=d)
    running_var = torch.ones(shape[1], dtype=dtype, device=d)
    torch.ops.aten._native_batch_norm_legit.default(x, None, None, running_mean, running_var, True, momentum, 1e-5)
    return [running_mean.cpu(), running_var.cpu()]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("shape", "momentum"), [((1, 5), 0.1), ((1, 5, 1), -1.0), ((1, 3, 1, 1), 0.0),
                                                 ((2, 5), 0.1)])
def test_one_value_per_channel_makes_running_var_nan(mode: str, dtype: torch.dtype, shape: tuple[int, ...],
                                                     momentum: float) -> None:
    with torch.tpu.eager_mode(mode):
        got = _running_stats("tpu", dtype, shape, momentum)
    want = _running_stats("cpu", dtype, shape, momentum)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, equal_nan=True)
    assert got[1].isnan().all() == (shape[0] * (shape[2] if len(shape) > 2 else 1) == 1)
