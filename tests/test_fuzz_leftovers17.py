"""Fuzz leftovers of issue 17, against CPU in every eager mode and compiled:
- cumsum_ / cumprod_ of a 0-d or empty bool self: ATen returns before its kernel (self unchanged), where a bool
  self with dims and elements is refused ("cumsum_out_cpu" not implemented for 'Bool');
- mode of a self with no elements over a non-empty reduced dim: the empty result, complex included (ATen returns
  it before its dtype dispatch), where a complex self with elements stays refused."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu

aten = torch.ops.aten
BOOLS = [((), True), ((), False), ((0,), False), ((2, 0), False)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["cumsum_", "cumprod_"])
@pytest.mark.parametrize(("shape", "value"), BOOLS)
def test_cumulative_inplace_of_an_empty_or_0d_bool(mode: str, op: str, shape: tuple[int, ...], value: bool) -> None:
    def call(d: str) -> list[torch.Tensor]:
        x = torch.full(shape, value, dtype=torch.bool, device=d)
        y = getattr(x, op)(0 if shape else -1)
        assert y is x
        return [x]

    assert_exactly_cpu(call, mode)


@pytest.mark.parametrize("op", ["cumsum_", "cumprod_"])
def test_cumulative_inplace_of_a_0d_bool_compiled(op: str) -> None:
    torch._dynamo.reset()
    fn = torch.compile(lambda x: getattr(x, op)(0), backend="tpu")
    for value in (True, False):
        got = fn(torch.tensor(value, device="tpu")).cpu()
        assert got.dtype == torch.bool and bool(got) is value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["cumsum_", "cumprod_"])
def test_cumulative_inplace_of_bools_with_elements_is_refused(mode: str, op: str) -> None:
    assert_refused_as_cpu(lambda d: getattr(torch.ones(3, dtype=torch.bool, device=d), op)(0), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.float32, torch.int32])
@pytest.mark.parametrize(("shape", "dim", "keepdim"), [((5, 0, 5), -1, False), ((5, 3, 0), 1, False),
                                                       ((5, 3, 0), 1, True), ((2, 0), 0, True)])
def test_mode_of_no_elements(mode: str, dtype: torch.dtype, shape: tuple[int, ...], dim: int, keepdim: bool) -> None:
    assert_exactly_cpu(lambda d: list(torch.mode(torch.empty(shape, dtype=dtype, device=d), dim, keepdim)), mode)


@pytest.mark.parametrize("mode", MODES)
def test_mode_of_complex_elements_stays_refused(mode: str) -> None:
    assert_refused_as_cpu(lambda d: torch.mode(torch.ones(2, 3, dtype=torch.complex64, device=d), 1), mode)
