"""bf16 lowerings that must round the way ATen's CPU kernels do (nn.functional.normalize's gradient cancels
g/|x| - g/|x| only when every intermediate is bit-identical)."""

import pytest
import torch

import torchtpu  # noqa: F401


def test_pow_minus_half_bf16_rounds_sqrt_first():
    # 0.06396484375 ** -0.5 = 3.9539...: one rounding gives 3.953125, ATen's 1 / bf16(sqrt(x)) gives 3.96875
    x = torch.tensor([0.06396484375, 0.3, 1.7, 2.5, 7.0, 1e-3], dtype=torch.bfloat16)
    assert torch.equal(x.to("tpu").pow(-0.5).cpu(), x.pow(-0.5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32])
@pytest.mark.parametrize("exponent", [3.0, 3, -2.0, 2.0])
def test_pow_by_a_small_constant_equals_cpu_bit_for_bit(dtype: torch.dtype, exponent: float) -> None:
    # ATen's CPU kernel multiplies for 2, 3 and -2 (each product rounded); np.power's one rounding differs from it in
    # about a quarter of float32 inputs; float16 takes std::pow in float, one rounding. (0.5 is sqrt, which CPU
    # PyTorch takes from MKL's VML here, within an ulp but not correctly rounded: not a rule to copy)
    gen = torch.Generator().manual_seed(1)
    x = (torch.randn(4096, generator=gen) * 3).to(dtype)
    if not dtype.is_floating_point and exponent == -2.0:
        x = x.abs() + 1
    expected = x.pow(exponent)
    actual = x.to("tpu").pow(exponent).cpu()
    assert actual.dtype == expected.dtype
    assert torch.equal(actual, expected) or (actual.isnan() == expected.isnan()).all() and torch.equal(
        actual.nan_to_num(), expected.nan_to_num())


def test_vector_norm_bf16_matches_cpu_exactly():
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(3, 1, 5, generator=gen) * 3).bfloat16()
    for p in (0.5, 1.0, 1.2, 2.0, 3.0, -1.0, float("inf")):
        for dim in (0, 1, 2):
            expected = torch.linalg.vector_norm(x, p, dim=dim)
            actual = torch.linalg.vector_norm(x.to("tpu"), p, dim=dim).cpu()
            assert actual.dtype == torch.bfloat16
            torch.testing.assert_close(actual, expected, rtol=1e-2, atol=0)
            if dim == 1:  # a size-1 norm is |x| exactly
                assert torch.equal(actual, x.abs().squeeze(1))
