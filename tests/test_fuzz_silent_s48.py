"""Fuzz findings of brief fz48 (issue 17, seeds 47-52): silent results fixed.

- cholesky_inverse (.default, .out): computed as LAPACK potri (trtri, then lauum, then ATen's Hermitian mirror)
  where it was two triangular solves. lauum reads only the real part of the inverted factor's diagonal, except
  the last element, which lauu2 scales by that real part (Re(w) * w, a small imaginary part): for a complex
  factor whose diagonal is not real the two solves were ~1e-3 off CPU (seeds 47, 52); CPU in complex128 gives
  the same values as in complex64, so the difference was the lowering's, not MKL's summation order. A NaN in the
  factor reached elements whose lauum sums never read it (0 * NaN in the solves; seed 50, float64, upper).
"""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_close_to_cpu, assert_exactly_cpu

import torchtpu  # noqa: F401


def _complex_factor(n: int, seed: int, batch: tuple[int, ...] = ()) -> torch.Tensor:
    """A factor whose diagonal is not real (as the fuzzer draws it), values of ~100 as seed 47's."""
    g = torch.Generator().manual_seed(seed)
    re = torch.randn((*batch, n, n), generator=g) * 100
    im = torch.randn((*batch, n, n), generator=g)
    return torch.complex(re, im)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("shape", [(5, ()), (4, (2,)), (3, (2, 1))])
def test_cholesky_inverse_complex_diagonal(mode: str, upper: bool, shape: tuple[int, tuple[int, ...]]) -> None:
    n, batch = shape
    x = _complex_factor(n, 47 + n, batch)
    assert_close_to_cpu(lambda d: [torch.cholesky_inverse(x.to(d), upper=upper)], mode)
    with torch.tpu.eager_mode(mode):
        got = torch.cholesky_inverse(x.to("tpu"), upper=upper).cpu()
    # lauum's diagonal is real but for the last element (Re(w) * w), as CPU's
    assert torch.equal(got.diagonal(0, -2, -1).imag[..., :-1], torch.zeros(*batch, n - 1))
    assert got.diagonal(0, -2, -1).imag[..., -1].abs().min() > 0


@pytest.mark.parametrize("mode", MODES)
def test_cholesky_inverse_out_complex(mode: str) -> None:
    x = _complex_factor(5, 52)

    def calls(d: str) -> list[torch.Tensor]:
        out = torch.empty(0, dtype=torch.complex64, device=d)
        torch.cholesky_inverse(x.to(d), out=out)
        return [out]

    assert_close_to_cpu(calls, mode)


NAN = float("nan")
NAN_FACTORS = [
    # seed 50: U = [[14.27, NaN], [., -27.59]]: only the (1, 1) element is finite on CPU
    (torch.tensor([[14.27422, NAN], [74.66281, -27.59056]], dtype=torch.float64), True),
    (torch.tensor([[14.27422, 3.0], [NAN, -27.59056]], dtype=torch.float64), False),
    # a NaN that reaches only the elements whose lauum sums read it
    (torch.tensor([[2.0, 1.0, NAN], [0.0, 3.0, -1.0], [0.0, 0.0, 4.0]]), True),
    (torch.tensor([[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [NAN, -1.0, 4.0]]), False),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", range(len(NAN_FACTORS)))
def test_cholesky_inverse_nan_positions(mode: str, case: int) -> None:
    x, upper = NAN_FACTORS[case]
    assert_close_to_cpu(lambda d: [torch.cholesky_inverse(x.to(d), upper=upper)], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtypes", [(torch.int8, torch.int16), (torch.bfloat16, torch.float64),
                                    (torch.int16, torch.int64)])
def test_select_scatter_keeps_self_dtype(mode: str, dtypes: tuple[torch.dtype, torch.dtype]) -> None:
    """seed 48: select_scatter of int8 self and int16 src is int8 on CPU (self.clone(), then copy_); tpu gave
    int16 (upstream's `where` promotes). src holds values the narrower dtype wraps or rounds."""
    self_dtype, src_dtype = dtypes
    g = torch.Generator().manual_seed(48)
    x = (torch.randn(5, 4, 3, generator=g) * 100).to(self_dtype)
    src = (torch.randn(4, 3, generator=g) * 300).to(src_dtype)
    assert_exactly_cpu(lambda d: [torch.select_scatter(x.to(d), src.to(d), -3, -1)], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("value_shape", [(), (1,)])
@pytest.mark.parametrize("functional", [False, True])
def test_index_put_zero_dim_false_mask(mode: str, value_shape: tuple[int, ...], functional: bool) -> None:
    """seed 52: index_put_ with a 0-d False mask and a one-element value is CPU's masked_fill_ of nothing; tpu
    wrote the value everywhere (the mask's nonzero() columns were no index at all)."""
    x = torch.tensor([[[0, -10, -6]], [[10, 0, -6]], [[2147483647, -1, 8]]], dtype=torch.int32)
    v = torch.full(value_shape, -2147483648, dtype=torch.int32)

    def calls(d: str) -> list[torch.Tensor]:
        mask = torch.tensor(False, device=d)
        if functional:
            return [torch.index_put(x.to(d), [mask], v.to(d))]
        y = x.to(d)
        y.index_put_([mask], v.to(d))
        return [y]

    assert_exactly_cpu(calls, mode)
