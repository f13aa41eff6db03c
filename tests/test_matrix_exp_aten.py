"""linalg_matrix_exp follows ATen's mexp (ops/matrix_exp.py): real float32/float64 results of the small matrices
here (up to 5 by 5) equal CPU's bit for bit (same degree selection, products, linear combinations and
squarings; products and sums rounded as CPU's small-matrix kernels); n = 1 is exp, compared with the tpu's exp.
Complex results, and real matrices from 16 by 16 up, are within `_tol`: CPU's complex gemm and its blocked real
gemm round their products and sums differently (a few ulp), and each of ATen's s squarings can double such a
difference, so the bound is 8 eps times 2^s relative to the largest entry. Every eager mode and torch.compile
give the same bits."""

from __future__ import annotations

import math

import pytest
import torch
from refusal_cases import MODES

_THETA18 = {torch.complex64: 3.010066362817634, torch.complex128: 1.090863719290036,
            torch.float32: 3.010066362817634, torch.float64: 1.090863719290036}


def _inputs(dtype: torch.dtype) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(7)

    def rnd(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, generator=g, dtype=dtype) * scale)

    return {
        "full_0.1": torch.full((3, 3), 0.1, dtype=dtype),
        "tiny": rnd(4, 4, scale=1e-9), "deg4": rnd(4, 4, scale=1e-3), "deg8": rnd(4, 4, scale=0.05),
        "deg12": rnd(4, 4, scale=0.2), "unit": rnd(5, 5), "large": rnd(4, 4, scale=30.0),
        "nilpotent": torch.triu(rnd(4, 4, scale=1e6), 1), "diag": torch.diag(rnd(4, scale=5.0)),
        "batch": rnd(3, 5, 5, scale=2.0), "batch4d": rnd(2, 2, 3, 3, scale=0.01), "empty_batch": rnd(0, 3, 3),
        "empty_matrix": rnd(2, 0, 0), "one_by_one": rnd(3, 1, 1),
        "nan": torch.tensor([[math.nan, 0.0], [0.0, 1.0]], dtype=dtype),
        "inf_in_batch": torch.stack([torch.diag(torch.tensor([math.inf, 1.0], dtype=dtype)), rnd(2, 2)]),
    }


def _tol(x: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    eps = torch.finfo(x.real.dtype if x.is_complex() else x.dtype).eps
    flat = x.reshape(-1, *x.shape[-2:])
    norm = flat.abs().sum(-2).amax(-1)
    s = torch.ceil(torch.log2(norm / _THETA18[x.dtype])).clamp_min(0).nan_to_num(0)
    big = want.reshape(flat.shape).abs().amax((-2, -1)).nan_to_num(0)
    return (8 * eps * torch.exp2(s) * big.clamp_min(1)).reshape(*x.shape[:-2], 1, 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", MODES)
def test_real_equals_cpu(dtype: torch.dtype, mode: str) -> None:
    with torch.tpu.eager_mode(mode):
        for name, x in _inputs(dtype).items():
            got = torch.linalg.matrix_exp(x.to("tpu")).cpu()
            # n = 1 is exp, as on CPU: the tpu's exp (within an ulp of CPU's) is the reference there
            want = torch.exp(x.to("tpu")).cpu() if name == "one_by_one" else torch.linalg.matrix_exp(x)
            torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True,
                                       msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_close_to_cpu(dtype: torch.dtype) -> None:
    for name, x in _inputs(dtype).items():
        want = torch.linalg.matrix_exp(x)
        got = torch.linalg.matrix_exp(x.to("tpu")).cpu()
        assert got.shape == want.shape and got.dtype == want.dtype, name
        if x.numel() == 0:
            continue
        assert torch.equal(got.isnan(), want.isnan()), name
        ok = want.isfinite()
        err = torch.where(ok, (got - want).abs(), torch.zeros_like(want.real))
        assert bool((err <= _tol(x, want)).all()), (name, (err / _tol(x, want)).max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.float64])
def test_modes_and_compile_identical(dtype: torch.dtype) -> None:
    results = []
    for mode in MODES:
        with torch.tpu.eager_mode(mode):
            results.append([torch.linalg.matrix_exp(x.to("tpu")).cpu() for x in _inputs(dtype).values()])
    torch._dynamo.reset()
    fn = torch.compile(torch.linalg.matrix_exp, backend="tpu", dynamic=False)
    results.append([fn(x.to("tpu")).cpu() for x in _inputs(dtype).values()])
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


def test_large_norm_nilpotent_float32() -> None:
    """s = 98 squarings (norm 1e30): CPU's exact I + A."""
    x = torch.tensor([[0.0, 1e30], [0.0, 0.0]])
    torch.testing.assert_close(torch.linalg.matrix_exp(x.to("tpu")).cpu(), torch.linalg.matrix_exp(x),
                               rtol=0, atol=0)


def test_float64_beyond_squaring_limit_fails_closed() -> None:
    """A float64 norm past theta_18 * 2^127 would need more squarings than are unrolled: NaN, never a result
    from too few squarings."""
    x = torch.tensor([[0.0, 1e300], [0.0, 0.0]], dtype=torch.float64)
    assert torch.linalg.matrix_exp(x.to("tpu")).cpu().isnan().all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [16, 64])
def test_larger_matrices_close_to_cpu(dtype: torch.dtype, n: int) -> None:
    g = torch.Generator().manual_seed(n)
    for scale in (0.1, 1.0, 5.0):
        x = torch.randn(n, n, generator=g, dtype=dtype) * scale / n ** 0.5
        want = torch.linalg.matrix_exp(x)
        err = (torch.linalg.matrix_exp(x.to("tpu")).cpu() - want).abs()
        assert bool((err <= _tol(x, want)).all()), (scale, (err / _tol(x, want)).max())
