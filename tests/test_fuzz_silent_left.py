"""Silent fuzz findings left open after session 52 (issue 17, brief silent17), fixed:

- isin (Tensor_Tensor, Scalar_Tensor): CPU's default kernel flattens the test elements with `.view(-1)` (after
  the cast to the common dtype), which fails for a transposed, expanded or row-stepped test tensor; tpu computed
  (fuzz seeds 50, 57). Now ops/view_checks.py makes the same view on a meta tensor of the same strides.
- isin's sorting path (many test elements) compares in cat's dtype, promote_types of the operands (a Python float
  Scalar as float64, a 0-d tensor in full), where tpu compared in the result type (fuzz seed 52).
- special_zeta: the operands are rounded to the common float32 before the float64 sum, as TensorIterator casts
  them (int64 x with q = -3.966 into a float64 out was 9e-6 off; fuzz seed 49).
- soft_margin_loss of float16 / bfloat16: computed step by step in the input's dtype as CPU's kernel
  (neg, mul_, exp_, log1p_), so exp overflows to inf as on CPU (fuzz seed 50: CPU inf, tpu 1.69).
"""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

import torchtpu  # noqa: F401


def _test_layouts(d: str) -> dict[str, torch.Tensor]:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) % 5
    return {"transposed": base.to(d).t(), "expanded": base[:1].to(d).expand(3, 4),
            "row_stepped": torch.cat([base, base]).to(d)[::2]}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", ["transposed", "expanded", "row_stepped"])
@pytest.mark.parametrize("invert", [False, True])
def test_isin_unviewable_test_elements(mode: str, layout: str, invert: bool) -> None:
    elements = torch.tensor([[0.0, 1.0, 7.0], [2.0, 3.0, 9.0]] * 10)  # 60 elements: the default kernel for 12 tests
    assert_refused_as_cpu(lambda d: torch.isin(elements.to(d), _test_layouts(d)[layout], invert=invert), mode)


def test_isin_unviewable_test_elements_compiled() -> None:
    elements = torch.tensor([[0.0, 1.0, 7.0], [2.0, 3.0, 9.0]] * 10)
    assert_refused_as_cpu_compiled(lambda d: torch.isin(elements.to(d), _test_layouts(d)["transposed"]))


@pytest.mark.parametrize("mode", MODES)
def test_isin_scalar_unviewable_test_elements(mode: str) -> None:
    # one element: the default kernel for fewer than 10 test elements (seed 57: -0.0 against an expanded [2, 3])
    test = torch.tensor([[0.0, 1.0, 2.0]])
    assert_refused_as_cpu(lambda d: torch.isin(-0.0, test.to(d).expand(2, 3), invert=True), mode)


@pytest.mark.parametrize("mode", MODES)
def test_isin_still_computes(mode: str) -> None:
    """The sorting path (many test elements), a cast that copies (int test, float elements), a dense test and no
    elements compute as on CPU."""
    elements = torch.tensor([[0.0, 1.0, 7.0], [2.0, 3.0, 9.0]])
    ints = torch.arange(12).reshape(3, 4)

    def calls(d: str) -> list[torch.Tensor]:
        t = _test_layouts(d)
        return [torch.isin(elements.to(d), t["transposed"]),  # 12 tests for 6 elements: sorting
                torch.isin(elements.repeat(10, 1).to(d), ints.to(d)[:1].expand(3, 4)),  # cast copies
                torch.isin(elements.repeat(10, 1).to(d), t["transposed"].contiguous()),
                torch.isin(torch.empty(0, device=d), t["transposed"], invert=True)]

    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
def test_zeta_int_input_float64_out(mode: str) -> None:
    x = torch.arange(-6, 9).reshape(3, 5)

    def calls(d: str) -> list[torch.Tensor]:
        out = torch.empty(3, 5, dtype=torch.float64, device=d)
        torch.special.zeta(x.to(d), -3.966, out=out)
        return [out, torch.special.zeta(x.to(d), -3.007), torch.special.zeta(x.float().to(d), -3.966)]

    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_soft_margin_loss_narrow_steps(mode: str, dtype: torch.dtype, reduction: int) -> None:
    g = torch.Generator().manual_seed(50)
    x = (torch.randn(3, 3, 3, 5, generator=g) * 4).to(dtype)  # exp(-x * t) not subnormal in float32
    target = torch.randint(0, 3, (3, 3, 3, 5), generator=g, dtype=torch.uint8)
    t32 = torch.randn(3, 3, 3, 5, generator=g) * 3

    def calls(d: str) -> list[torch.Tensor]:
        out = torch.empty(0, dtype=dtype, device=d)
        torch.ops.aten.soft_margin_loss.out(x.to(d), target.to(d), reduction, out=out)
        return [torch.ops.aten.soft_margin_loss(x.to(d), target.to(d), reduction), out,
                torch.ops.aten.soft_margin_loss(x.to(d), t32.to(d), reduction),
                torch.ops.aten.soft_margin_loss(x.to(d), x.to(d), reduction)]

    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("assume_unique", [False, True])
def test_isin_sorting_path_compares_in_cat_dtype(mode: str, assume_unique: bool) -> None:
    """isin_sorting concatenates the operands (promote_types: a Python float Scalar is float64, a 0-d tensor
    counts in full), where the default kernel compares in the result type (fuzz seed 52: isin(1e30, float32
    [4, 5, 3] holding float32(1e30)) is False on CPU, was True on tpu)."""
    big = torch.full((4, 5, 3), 1e30)
    tenth = torch.full((12,), 0.1, dtype=torch.float16)

    def calls(d: str) -> list[torch.Tensor]:
        return [torch.isin(1e30, big.to(d), assume_unique=assume_unique),
                torch.isin(1e30, big.to(d)[:1, :1, :1].expand(4, 5, 3), invert=True),
                torch.isin(0.1, tenth.to(d), assume_unique=assume_unique),
                torch.isin(torch.tensor(0.1, dtype=torch.float64, device=d), tenth.to(d).float()),
                torch.isin(0.1, tenth.to(d)[:5]),  # the default kernel: compared in float16
                torch.isin(3, tenth.to(d) * 30)]

    assert_exactly_cpu(calls, mode)
