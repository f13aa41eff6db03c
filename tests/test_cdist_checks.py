"""_cdist_forward's argument checks as CPU makes them (class and words, in ATen's order), in every eager mode:
ranks, column counts, floating dtypes, p >= 0, compute_mode, broadcastable batch dims, one dtype; valid calls
still give CPU's distances."""

from __future__ import annotations

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]

# (x1 shape, x2 shape, p, compute_mode, x1 dtype, x2 dtype)
CASES = [
    ((3, 4), (2, 5), 2.0, None, torch.float32, torch.float32),
    ((4,), (2, 4), 2.0, None, torch.float32, torch.float32),
    ((3, 4), (4,), 2.0, None, torch.float32, torch.float32),
    ((2, 3, 4), (3, 2, 4), 2.0, None, torch.float32, torch.float32),
    ((2, 3, 4), (3, 2, 4), -1.0, None, torch.float32, torch.float32),
    ((3, 4), (2, 4), 2.0, 5, torch.float32, torch.float32),
    ((3, 4), (2, 4), 2.0, None, torch.int64, torch.int64),
    ((3, 4), (2, 4), 2.0, None, torch.float32, torch.complex64),
    ((3, 4), (2, 4), 1.5, None, torch.float64, torch.float32),
    ((3, 4), (2, 4), 0.5, None, torch.float32, torch.float32),
    ((2, 1, 3, 4), (5, 2, 4), 2.0, 2, torch.float64, torch.float64),
]


def _outcome(x1: torch.Tensor, x2: torch.Tensor, p: float, mode: int | None) -> tuple[str, object]:
    try:
        return "ok", torch.ops.aten._cdist_forward(x1, x2, p, mode).cpu()
    except Exception as e:  # noqa: BLE001 - the class and words are what is compared
        return type(e).__name__, str(e)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_cdist_forward_checks_as_cpu(mode: str, case: tuple) -> None:
    a, b, p, compute_mode, d1, d2 = case
    gen = torch.Generator().manual_seed(0)
    x1 = (torch.rand(a, generator=gen, dtype=torch.float64) * 4).to(d1)
    x2 = (torch.rand(b, generator=gen, dtype=torch.float64) * 4).to(d2)
    want = _outcome(x1, x2, p, compute_mode)
    with torch.tpu.eager_mode(mode):
        got = _outcome(x1.to("tpu"), x2.to("tpu"), p, compute_mode)
    assert got[0] == want[0]
    if want[0] == "ok":
        torch.testing.assert_close(got[1], want[1], rtol=1e-5, atol=1e-6)
    else:
        assert got[1] == want[1]
