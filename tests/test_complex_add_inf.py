"""Complex add/sub with an infinite part in `other`: ATen computes self + alpha * other with a complex alpha even
when alpha is 1, so (1 + 0j) * (inf + 0.5j) gives inf + nanj; tpu gives CPU's bits in every mode and compiled."""

import pytest
import torch
from refusal_cases import MODES

INF, NAN = float("inf"), float("nan")
OTHER = [complex(INF, 0.5), complex(0.5, INF), complex(-INF, 0.5), complex(NAN, 1), complex(1, -2), complex(0, -INF)]

CASES = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "rsub": lambda a, b: torch.rsub(b, a),
    "add_alpha": lambda a, b: torch.add(a, b, alpha=3),
    "sub_out": lambda a, b: torch.sub(a, b, out=torch.empty(0, dtype=torch.complex64, device=a.device)),
    "add_": lambda a, b: a.to(torch.complex64).add_(b),
    "real_plus_complex": lambda a, b: a + b.real.to(a.dtype) * 0 + b,
    "complex_plus_real_inf": lambda a, b: b * 0 + torch.full(a.shape, INF, device=a.device),
    "foreach_add": lambda a, b: torch._foreach_add([a.to(torch.complex64)], [b])[0],
}


def _bits(t: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(t.to(torch.complex64)).nan_to_num(nan=7.0)


def _check(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype
    assert torch.equal(_bits(got.cpu()), _bits(want))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_complex_add_sub_with_infinite_other(mode: str, case: str) -> None:
    fn = CASES[case]
    a, b = torch.zeros(len(OTHER), dtype=torch.int8), torch.tensor(OTHER, dtype=torch.complex64)
    with torch.tpu.eager_mode(mode):
        got = fn(a.to("tpu"), b.to("tpu"))
        torch.tpu.synchronize()
    _check(got, fn(a, b))


@pytest.mark.parametrize("case", ["add", "sub", "add_alpha"])
def test_complex_add_sub_with_infinite_other_compiled(case: str) -> None:
    fn = CASES[case]
    a, b = torch.zeros(len(OTHER), dtype=torch.float32), torch.tensor(OTHER, dtype=torch.complex64)
    _check(torch.compile(fn, backend="tpu")(a.to("tpu"), b.to("tpu")), fn(a, b))
