"""linalg_solve_triangular / triangular_solve with a zero on the diagonal: CPU's trsm substitutes and divides, so
the unknowns come out inf (NaN for 0 / 0) with signs from the substitution; the sim solved with a pivoting LU,
which fails there, and gave NaN for the whole matrix (fuzzer seed 5). Compared with CPU bit for bit in every eager
mode and under torch.compile, for both sides, both triangles and a unit diagonal."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES

A_UPPER = [[[2.0, 1.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 2.0]]]
B = [[[1.0, 2.0], [3.0, 4.0]], [[0.0, 1.0], [2.0, 0.0]]]


def _calls(device: str) -> list[torch.Tensor]:
    a = torch.tensor(A_UPPER, dtype=torch.float64, device=device)
    b = torch.tensor(B, dtype=torch.float64, device=device)
    low = a.mT
    return [torch.linalg.solve_triangular(a, b, upper=True, left=True),
            torch.linalg.solve_triangular(a, b, upper=True, left=False),
            torch.linalg.solve_triangular(low, b, upper=False, left=True),
            torch.linalg.solve_triangular(low, b, upper=False, left=False),
            torch.linalg.solve_triangular(a, b, upper=True, unitriangular=True),
            torch.triangular_solve(b, a, upper=True, transpose=True)[0],
            torch.linalg.solve_triangular(a.to(torch.complex128), b.to(torch.complex128), upper=True)]


def _bits(t: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(t.cpu()) if t.is_complex() else t.cpu()


@pytest.mark.parametrize("mode", MODES)
def test_matches_cpu(mode: str) -> None:
    with torch.tpu.eager_mode(mode):
        got = _calls("tpu")
        torch.tpu.synchronize()
    for i, (g, c) in enumerate(zip(got, _calls("cpu"))):
        torch.testing.assert_close(_bits(g), _bits(c), rtol=0, atol=0, equal_nan=True, msg=f"call {i}")


def test_compiled_matches_cpu() -> None:
    torch._dynamo.reset()
    a = torch.tensor(A_UPPER, dtype=torch.float64)
    b = torch.tensor(B, dtype=torch.float64)
    fn = torch.compile(lambda x, y: torch.linalg.solve_triangular(x, y, upper=True, left=False), backend="tpu")
    torch.testing.assert_close(fn(a.to("tpu"), b.to("tpu")).cpu(),
                               torch.linalg.solve_triangular(a, b, upper=True, left=False), rtol=0, atol=0,
                               equal_nan=True)


def test_values() -> None:
    a = torch.tensor(A_UPPER[:1], dtype=torch.float64, device="tpu")
    b = torch.tensor(B[:1], dtype=torch.float64, device="tpu")
    inf = float("inf")
    assert torch.linalg.solve_triangular(a, b, upper=True).cpu().tolist() == [[[-inf, -inf], [inf, inf]]]
