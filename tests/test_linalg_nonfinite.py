"""LU, det and slogdet of matrices with inf/NaN entries, and histc whose range overflows its type (issue 17's fuzz
leftovers), against CPU PyTorch (MKL's getrf; ATen's histogramdd linear kernel).

LU: CPU's rank-1 update runs for zero multipliers (0 * inf = NaN; tpu skipped them and gave finite values) and
under a zero pivot (its column unscaled), a complex pivot with an inf or NaN part gives NaN+NaNj multipliers, and
above 16 rows or columns MKL picks a column's first NaN as the pivot (up to 16, as reference isamax, only a first
candidate). histc: linspace's step (max - min) / bins overflowing the input's type makes every edge NaN (nothing
counted), and an overflowing bin position lands in bin 0 (tpu raised index_add's IndexError)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu

import torchtpu  # noqa: F401

NAN, INF = float("nan"), float("inf")
REAL = [torch.float32, torch.float64]
COMPLEX = [torch.complex64, torch.complex128]


def _pattern(t: torch.Tensor) -> torch.Tensor:
    """NaN / +inf / -inf / finite of each element (each part of a complex one)."""
    t = torch.view_as_real(t) if t.is_complex() else t
    return torch.where(torch.isnan(t), 2, torch.where(torch.isinf(t), 3 * torch.sign(t).long(), 0))


def _assert_as_cpu(got: torch.Tensor, want: torch.Tensor) -> None:
    """The same dtype, the same non-finite pattern (exactly), the finite values within a factorization's
    rounding."""
    got = got.cpu()
    assert got.dtype == want.dtype
    if not want.is_floating_point() and not want.is_complex():
        assert torch.equal(got, want), (got, want)
        return
    assert torch.equal(_pattern(got), _pattern(want)), (got, want)
    fin = torch.isfinite(want)
    torch.testing.assert_close(got[fin], want[fin], rtol=1e-4, atol=1e-5)


def _random(dtype: torch.dtype, seed: int, count: int = 24) -> list[torch.Tensor]:
    """Batches of small matrices with one to three inf/NaN entries (complex: in either part), some with zeros."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for trial in range(count):
        n = [2, 3, 4, 5, 7][trial % 5]
        m = n if trial % 3 else n + 1
        a = torch.randn(2, m, n, dtype=dtype, generator=g)
        if trial % 4 == 3:
            a = a * (torch.rand(2, m, n, generator=g) < 0.6)
        for _ in range(1 + trial % 3):
            i = [int(torch.randint(0, s, (), generator=g)) for s in (2, m, n)]
            v = [NAN, INF, -INF][int(torch.randint(0, 3, (), generator=g))]
            a[i[0], i[1], i[2]] = (complex(v, 0.5) if trial % 2 else complex(0.3, v)) if dtype.is_complex else v
        out.append(a)
    return out


def _factor(a: torch.Tensor) -> list[torch.Tensor]:
    out = [*torch.linalg.lu_factor_ex(a), *torch.linalg.lu(a)]
    if a.shape[-1] == a.shape[-2]:
        out += [torch.linalg.det(a), *torch.linalg.slogdet(a)]
    return out


def _check_factor(a: torch.Tensor, mode: str) -> None:
    want = _factor(a)
    with torch.tpu.eager_mode(mode):
        got = _factor(a.to("tpu"))
        torch.tpu.synchronize()
    for g, w in zip(got, want, strict=True):
        _assert_as_cpu(g, w)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", REAL + COMPLEX)
def test_lu_det_slogdet_nonfinite_random(mode: str, dtype: torch.dtype) -> None:
    for a in _random(dtype, 17):
        _check_factor(a, mode)


ZERO_MULTIPLIER = [  # the pivot inf: every multiplier 0, and 0 * inf = NaN in the update (tpu skipped it)
    [[INF, -INF, 0.5], [0.8, -1.3, -0.2], [-0.7, 0.7, 0.5]],
    [[-1.2, -0.4, 1.2], [-0.3, -INF, -INF], [0.7, 1.3, 1.2]],
    [[0.0, 1.0, 2.0], [NAN, 1.0, 1.0], [0.0, 3.0, 1.0]],  # a zero pivot: unscaled NaN, still updated
    [[2.0, 0.0, 1.0], [NAN, 1.0, 1.0], [1.0, 1.0, 3.0]],  # a NaN multiplier times a zero of the pivot row
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", REAL)
def test_lu_update_runs_for_zero_multipliers(mode: str, dtype: torch.dtype) -> None:
    for rows in ZERO_MULTIPLIER:
        a = torch.tensor(rows, dtype=dtype)
        _check_factor(torch.stack([a, a.mT.contiguous()]), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_nonfinite_pivot_gives_nan_multipliers(mode: str, dtype: torch.dtype) -> None:
    for p in (complex(INF, 0), complex(INF, 0.5), complex(0.5, -INF)):
        a = torch.tensor([[p, 0.5, 0.25], [0.0, 1.0, 0.5], [1 + 1j, 0.5, 2.0]], dtype=dtype)
        _check_factor(a, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", REAL + COMPLEX)
def test_lu_first_nan_pivot_above_16(mode: str, dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(3)
    for m, n in [(20, 20), (17, 3), (3, 18), (16, 16)]:
        a = torch.randn(m, n, generator=g).to(dtype)
        a[m - 1, 0] = NAN  # not the first candidate: the pivot above 16, skipped at 16
        a[1, min(2, n - 1)] = NAN
        _check_factor(a, mode)


def _histc_calls(d: str) -> list[torch.Tensor]:
    f32 = torch.tensor([0.0, 1.0, -1.0, 3e38, -3e38, 2e38, 1e38, -2e38], device=d)
    return [
        torch.histc(f32, 4, -3e38, 3e38),  # max - min overflows: linspace's edges are NaN, nothing counted
        torch.histc(f32, 5),  # the data's range overflows the same way
        torch.histc(f32, 4, -1e38, 1e38),  # (x - min) * bins overflows: bin 0
        torch.histc(torch.tensor([0.0, 1e38, 8e37, -1e38], device=d), 2, -1e38, 1e38),
        torch.histc(f32.double(), 4, -3e38, 3e38),
        torch.histc(torch.tensor([3e4, 0, -3e4, 2e4, 1.5e4], device=d).half(), 4, -3e4, 3e4),  # half products
        torch.histc(torch.tensor([3e4, 0, -3e4, 6e4], device=d).half(), 4, -6e4, 6e4),
        torch.histc(torch.tensor([0.0, 3e38, -3e38], device=d).bfloat16(), 3),
        torch.histc(torch.tensor([1.0, 2.0], device=d), 3, 1 + 0j, 2),  # a complex bound without imaginary part
    ]


@pytest.mark.parametrize("mode", MODES)
def test_histc_overflowing_range(mode: str) -> None:
    assert_exactly_cpu(_histc_calls, mode)


HISTC_REFUSED = [  # min == max: a data range that is not finite; bins <= 0; a complex bound
    lambda d: torch.histc(torch.tensor([1.0, NAN, 2.0], device=d)),  # CPU's words: [-nan, -nan]
    lambda d: torch.histc(torch.tensor([NAN], device=d), 4),  # one element: [nan, nan]
    lambda d: torch.histc(torch.tensor([-INF, 1.0, INF], device=d).half(), 3),
    lambda d: torch.histc(torch.tensor([NAN, 2.0], device=d).bfloat16(), 3),
    lambda d: torch.histc(torch.tensor([6e37, 6e37], device=d).bfloat16(), 3),  # v -+ 1 in double is v
    lambda d: torch.histc(torch.tensor([1.0, 2.0], device=d), 0),  # tpu: index_add's IndexError
    lambda d: torch.histc(torch.tensor([1.0, 2.0], device=d), -3, 0, 1j),  # bins first
    lambda d: torch.histc(torch.tensor([1.0, 2.0], device=d), 3, 1j, 2),  # tpu: float()'s TypeError
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", range(len(HISTC_REFUSED)))
def test_histc_refused_as_cpu(case: int, mode: str) -> None:
    assert_refused_as_cpu(HISTC_REFUSED[case], mode)


def _ldexp_calls(d: str) -> list[torch.Tensor]:
    x = torch.tensor([1e-30, 3.0, 2.0 ** -140, -5e-39, 1.5], device=d)
    e = torch.tensor([200, -140, 150, 180, -160], dtype=torch.int32, device=d)
    h = torch.tensor([2.0 ** -10, 3e-5, 100.0], device=d).half()
    eh = torch.tensor([16, 20, -30], device=d)

    def inplace(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.clone()
        a.ldexp_(b)
        return a

    def out(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        o = torch.empty_like(a)
        torch.ldexp(a, b, out=o)
        return o

    torch._dynamo.reset()
    backend = "tpu" if d != "cpu" else "eager"
    got = []
    for fn in (torch.ldexp, inplace, out):
        compiled = torch.compile(fn, backend=backend)
        got += [compiled(x, e), compiled(h, eh), compiled(x, x)]  # the last: a float exponent (the composite)
    return got


@pytest.mark.parametrize("mode", MODES)
def test_ldexp_compiled_extreme_exponents(mode: str) -> None:
    """Under torch.compile the exponent's power of two 2**200 overflowed float32 (inf where CPU is 1.6e30)."""
    assert_exactly_cpu(_ldexp_calls, mode)
