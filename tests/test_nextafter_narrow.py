"""nextafter of float16/bfloat16 steps to the next value of that dtype, as CPU does (tpu computed it in float32 and
rounded back, so nextafter(1, 2) in float16 was 1; fuzz seed 9)."""

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

INF, NAN = float("inf"), float("nan")
X = [1.0, -65504.0, 65504.0, 0.0, -1.0, 3e-8, 1e-3, NAN, 2.0, -0.0]
Y = [2.0, -INF, INF, 1.0, -2.0, 0.0, 1.0, 0.0, NAN, 0.0]


def _calls(dtype: torch.dtype):  # noqa: ANN202 - a case for assert_exactly_cpu
    def calls(d: str) -> list[torch.Tensor]:
        x, y = torch.tensor(X, dtype=dtype, device=d), torch.tensor(Y, dtype=dtype, device=d)
        return [torch.nextafter(x, y), x.clone().nextafter_(y), torch.nextafter(x * 1, y + 0)]
    return calls


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_nextafter_steps_in_its_dtype(mode: str, dtype: torch.dtype) -> None:
    assert_exactly_cpu(_calls(dtype), mode)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_nextafter_steps_in_its_dtype_compiled(dtype: torch.dtype) -> None:
    x, y = torch.tensor(X, dtype=dtype), torch.tensor(Y, dtype=dtype)
    got = torch.compile(lambda a, b: torch.nextafter(a * 1, b), backend="tpu")(x.to("tpu"), y.to("tpu"))
    torch.testing.assert_close(got.cpu(), torch.nextafter(x, y), rtol=0, atol=0, equal_nan=True)
