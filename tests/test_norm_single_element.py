"""A vector norm whose results each reduce one element is |x| for every ord but 0, as on CPU (tpu raised |x|^p
and took the p-th root: rounding, or inf for a large p; fuzz seed 9: norm(tensor(7.99), 1e30) was inf)."""

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

ORDS = [3.0, 7.0, 100.0, 1e30, -1.0, -3.0, 0.5, 0.0, 1.0, 2.0]


def _calls(d: str) -> list[torch.Tensor]:
    torch.manual_seed(0)
    x = torch.randn(20, 1) * 10
    x[3], x[4] = float("nan"), 0.0
    x = x.to(d)
    out = []
    for p in ORDS:
        out += [torch.linalg.vector_norm(x, p, dim=1), torch.norm(x[0, 0], p),
                torch.linalg.vector_norm(x.to(torch.bfloat16), p, dim=(1,), keepdim=True)]
    return out


@pytest.mark.parametrize("mode", MODES)
def test_single_element_norm_is_abs(mode: str) -> None:
    assert_exactly_cpu(_calls, mode)


def test_single_element_norm_is_abs_compiled() -> None:
    x = torch.tensor([[7.99], [-3.0]])
    got = torch.compile(lambda t: torch.linalg.vector_norm(t, 1e30, dim=1), backend="tpu")(x.to("tpu"))
    assert torch.equal(got.cpu(), torch.tensor([7.99, 3.0]))
