"""bf16 lowerings that must round the way ATen's CPU kernels do (nn.functional.normalize's gradient cancels
g/|x| - g/|x| only when every intermediate is bit-identical)."""

import torch

import torchtpu  # noqa: F401


def test_pow_minus_half_bf16_rounds_sqrt_first():
    # 0.06396484375 ** -0.5 = 3.9539...: one rounding gives 3.953125, ATen's 1 / bf16(sqrt(x)) gives 3.96875
    x = torch.tensor([0.06396484375, 0.3, 1.7, 2.5, 7.0, 1e-3], dtype=torch.bfloat16)
    assert torch.equal(x.to("tpu").pow(-0.5).cpu(), x.pow(-0.5))


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
