"""LU's pivot search with a NaN in the column: LAPACK's isamax compares |a| > max, which a NaN never is, so a NaN
is the pivot only where it is the column's first candidate. tpu took the first NaN (numpy's argmax), so P, L and U
differed from CPU (fuzz seed 7, linalg_lu.out: 8 of 100 elements of P)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES

import torchtpu  # noqa: F401

NAN = float("nan")
COLUMNS = [[1, NAN, 3], [NAN, 1, 3], [1, 3, NAN], [NAN, NAN, 1], [1, NAN, NAN, 3, 2], [3, NAN, 5, NAN, 4],
           [-1, NAN, -5, 2]]


def _matrices(dtype: torch.dtype) -> list[torch.Tensor]:
    out = []
    for col in COLUMNS:
        a = torch.eye(len(col), dtype=dtype) + 0.25
        a[:, 0] = torch.tensor(col, dtype=dtype)
        out.append(torch.stack([a, a.flip(0)]))
    g = torch.Generator().manual_seed(7)
    r = torch.randn(6, 5, 3, generator=g).to(dtype)
    r[r.real.abs() < 0.4] = NAN  # NaNs that reach later columns through the elimination
    out.append(r)
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_pivots_skip_nan_as_lapack(mode: str, dtype: torch.dtype) -> None:
    for a in _matrices(dtype):
        lu, piv, _ = torch.linalg.lu_factor_ex(a)
        p, lower, upper = torch.linalg.lu(a)
        with torch.tpu.eager_mode(mode):
            t = a.to("tpu")
            got = [*torch.linalg.lu_factor_ex(t)[:2], *torch.linalg.lu(t)]
            torch.tpu.synchronize()
        assert torch.equal(got[1].cpu(), piv), (a, got[1], piv)
        torch.testing.assert_close(got[2].cpu(), p, rtol=0, atol=0)
        for g, c in zip((got[0], got[3], got[4]), (lu, lower, upper)):
            torch.testing.assert_close(g.cpu(), c, equal_nan=True)


def test_pivots_skip_nan_compiled() -> None:
    a = _matrices(torch.float32)[0]
    torch._dynamo.reset()
    got = torch.compile(lambda t: torch.linalg.lu_factor_ex(t)[1] * 1, backend="tpu")(a.to("tpu"))
    assert torch.equal(got.cpu(), torch.linalg.lu_factor_ex(a)[1])
