"""The regularized incomplete gamma functions igamma P(a, x) and igammac Q(a, x) as an IR lowering, by the
algorithm of ATen's CPU kernel (calc_igamma / calc_igammac, aten/src/ATen/native/Math.h, after SciPy and Cephes),
in the dtype ATen computes in (float32, float64 for float64 operands):

- the boundary cases (NaN, 0, infinities, negative arguments) in ATen's order;
- Temme's uniform asymptotic expansion (DLMF 8.12.3 / 8.12.4) where a is large and x near it: 20 < a < 200 and
  |x - a| / a < 0.3, or a > 200 and |x - a| / a < 4.5 / sqrt(a);
- otherwise one of three expansions, chosen per element as ATen chooses: the power series of P (DLMF 8.11.4),
  the series of Q for small x (DLMF 8.7.3, free of the cancellation 1 - P has at tiny a) and the continued
  fraction of Q (DLMF 8.9.2); the other function is 1 minus it where ATen takes it so.

x^a e^-x / Gamma(a), the prefactor of the series of P and of the fraction, is Boost's Lanczos form where a and x
are close (|a - x| <= 0.4 a) and exp(a log x - x - lgamma(a)) elsewhere (0 below -MAXLOG, where ATen returns 0
without iterating). Each expansion is a `while` (ir_lowerings.py `loop`) run only by the elements that read it,
at most ATen's 2000 trips. In the asymptotic expansion each c_k(eta) is a Horner polynomial of its coefficients
(ATen sums them by increasing power until a term is below MACHEP of the sum: the same value to rounding, |eta|
being below 0.37 there; the table is cut to the terms that can reach the result, `_temme_rows`), summed over k
with ATen's two exits (a term larger than the one before, a term below MACHEP of the sum) as masks. That sum and
the Lanczos rational function are pure arithmetic in one-trip `while`s, so that only the elements that read them
evaluate them (the sim fuses them; benchmarks/special.py). Where ATen's float kernel compares with a double
literal (x > 1.1) the comparison is made as in double (`_above`); its other double-promoted decisions
(-0.4 / log x < a, 1.1 x < a, |a - x| > 0.4 a) are made in float32, choosing between expansions that agree there.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from torchtpu.drivers.ir_lowerings import _F, exp, fabs, isnan, lgamma, log, loop, polevl, sqrt, where
from torchtpu.drivers.ir_lowerings_igamma_tables import LANCZOS_DEN, LANCZOS_G, LANCZOS_NUM, LGAMMA1P, TEMME_D

IGAMMA_LIMIT = 2000  # ATen's MAXITER for each expansion
_PI_F32 = 3.1415927410125732  # c10::pi<float>: ATen's asymptotic expansion scales by sqrt(2 pi a) with it


def _consts(x: _F) -> tuple[float, float, float, float]:
    """MACHEP, MAXLOG, BIG, BIGINV of x's dtype (ATen's values)."""
    if x.v.dtype == "float64":
        return 1.11022302462515654042e-16, 7.09782712893383996843e2, 4.503599627370496e15, 2.22044604925031308085e-16
    return 5.9604644775390625e-8, 88.72283905206835, 16777216.0, 5.9604644775390625e-8


def _above(x: _F, c: float) -> _F:
    """x > c with c a double, as ATen's float kernel compares (x promoted to double): against the largest value
    of x's dtype not above c (float32(1.1) is above 1.1, so float32 x > 1.1 is x >= float32(1.1))."""
    t = np.dtype(x.v.dtype).type(c)
    if float(t) > c:
        t = np.nextafter(t, t.dtype.type(-np.inf))
    return x > float(t)


def _lgamma(x: _F) -> _F:
    return _F(x.b, lgamma(x.b, x.v)[0])


def _lgamma_one_plus(a: _F, lg_a: _F) -> _F:
    """lgamma(1 + a) (a >= 0, lg_a = lgamma(a)) with its zero at a = 0 exact: the Taylor series in t = (1 + a) - 1
    (1 + a rounded, as ATen's argument) for t < 1/8, lgamma(a) + log(a) beyond. Q's small-x series subtracts it
    from a log x, which at tiny a is tiny: the lgamma lowering's absolute error at 1 (an ulp of 1) would be all
    of the result there."""
    t = (1.0 + a) - 1.0
    near = fabs(t) < 0.125
    ts = where(near, t, 0.0)
    return where(near, polevl(ts, LGAMMA1P[::-1]) * ts, lg_a + log(a))


def _lanczos_sum(a: _F, run: _F) -> _F:
    """Boost's lanczos_sum_expg_scaled(a), a > 0: the rational function in a up to 1, in 1 / a beyond (ATen's
    ratevl; numerator and denominator have the same degree, so no power of a scales it). A one-trip `while`, so
    that only the elements in `run` (those reading the Lanczos form) evaluate it; the others get 1."""

    def body(s: list[_F]) -> list[_F]:
        sa, _, flag = s
        small = sa <= 1.0
        y = where(small, sa, 1.0 / sa)
        up_to_one = polevl(y, LANCZOS_NUM) / polevl(y, LANCZOS_DEN)
        beyond = polevl(y, LANCZOS_NUM[::-1]) / polevl(y, LANCZOS_DEN[::-1])
        return [sa, where(small, up_to_one, beyond), flag & ~flag]

    return loop([a, a.like(1.0), run], lambda s: s[-1], body, 1)[1]


def _prefactor(a: _F, x: _F, logx: _F, lg_a: _F, needed: _F, maxlog: float) -> _F:
    """x^a e^-x / Gamma(a) as ATen's _igam_helper_fac (for the elements in `needed`): the Lanczos form where
    |a - x| <= 0.4 a (its exponent by log1p beyond 200), the direct exponent elsewhere, 0 where that exponent is
    below -MAXLOG."""
    direct_form = fabs(a - x) > 0.4 * fabs(a)
    ax = a * logx - x - lg_a
    direct = where(ax < -maxlog, a.like(0.0), exp(ax))
    fac = a + LANCZOS_G - 0.5
    res = sqrt(fac / math.e) / _lanczos_sum(a, needed & ~direct_form)
    near = exp(a - x) * (x / fac) ** a
    num = x - a - LANCZOS_G + 0.5
    ratio = num / fac
    far = exp(a * (ratio.fn("log_plus_one") - ratio) + x * (0.5 - LANCZOS_G) / fac)
    lanczos = res * where((a < 200.0) & (x < 200.0), near, far)
    return where(direct_form, direct, lanczos)


def _series_p(a: _F, x: _F, fac: _F, run: _F, machep: float) -> _F:
    """P by its power series (DLMF 8.11.4): sum of x^n / ((a + 1) ... (a + n)), times fac / a."""

    def step(s: list[_F]) -> list[_F]:
        sx, r, c, acc, _ = s
        r2 = r + 1.0
        c2 = c * (sx / r2)
        acc2 = acc + c2
        return [sx, r2, c2, acc2, ~(c2 <= machep * acc2)]

    acc = loop([x, a, a.like(1.0), a.like(1.0), run], lambda s: s[-1], step, IGAMMA_LIMIT)[3]
    return where(fac.eq(0.0), a.like(0.0), acc * fac / a)


def _series_q(a: _F, x: _F, logx: _F, lg_a: _F, run: _F, machep: float) -> _F:
    """Q for small x (DLMF 8.7.3): 1 - x^a / Gamma(a + 1) - x^a / Gamma(a) sum_n (-x)^n / (n! (a + n)), the first
    two terms by expm1 (no cancellation at tiny a)."""

    def step(s: list[_F]) -> list[_F]:
        sa, sx, n, f, acc, _ = s
        f2 = f * (-sx / n)
        term = f2 / (sa + n)
        acc2 = acc + term
        return [sa, sx, n + 1.0, f2, acc2, ~(fabs(term) <= machep * fabs(acc2)) & (n + 1.0 < IGAMMA_LIMIT)]

    acc = loop([a, x, a.like(1.0), a.like(1.0), a.like(0.0), run], lambda s: s[-1], step, IGAMMA_LIMIT)[4]
    head = -(a * logx - _lgamma_one_plus(a, lg_a)).fn("exponential_minus_one")
    return head - exp(a * logx - lg_a) * acc


def _fraction_q(a: _F, x: _F, fac: _F, run: _F, consts: tuple[float, float, float, float]) -> _F:
    """Q by its continued fraction (DLMF 8.9.2), as Cephes' convergents p_k / q_k, rescaled by BIGINV when p_k
    passes BIG; times fac."""
    machep, _, big, biginv = consts

    def step(s: list[_F]) -> list[_F]:
        c, y, z, pkm1, pkm2, qkm1, qkm2, ans, _ = s
        c2, y2, z2 = c + 1.0, y + 1.0, z + 2.0
        yc = y2 * c2
        pk = pkm1 * z2 - pkm2 * yc
        qk = qkm1 * z2 - qkm2 * yc
        nonzero = qk.ne(0.0)
        r = pk / where(nonzero, qk, 1.0)
        t = where(nonzero, fabs((ans - r) / r), 1.0)
        ans2 = where(nonzero, r, ans)
        scale = where(fabs(pk) > big, pk.like(biginv), 1.0)
        return [c2, y2, z2, pk * scale, pkm1 * scale, qk * scale, qkm1 * scale, ans2, ~(t <= machep)]

    y = 1.0 - a
    z = x + y + 1.0
    pkm1, qkm1 = x + 1.0, z * x
    state = [a.like(0.0), y, z, pkm1, a.like(1.0), qkm1, x, pkm1 / qkm1, run]
    ans = loop(state, lambda s: s[-1], step, IGAMMA_LIMIT)[7]
    return where(fac.eq(0.0), a.like(0.0), ans * fac)


ETA_MAX = 0.37  # |eta| where the expansion is used: |x - a| / a < 0.318 gives |eta| < 0.36
A_MIN = 20.0  # the smallest a it is used at


@functools.cache
def _temme_rows(machep: float) -> tuple[tuple[float, ...], ...]:
    """TEMME_D cut to the coefficients that can reach the result: d_kn eta^n a^-k at |eta| <= ETA_MAX, a >= A_MIN
    above 1e-4 MACHEP (the sum is at least 1/4 there, so what is cut is below 1e-4 of an ulp of it). float32 keeps
    7 rows, float64 14, of 25; each row up to its last such power."""
    lengths = []
    for k, row in enumerate(TEMME_D):
        sizes = [abs(d) * ETA_MAX**n / A_MIN**k for n, d in enumerate(row)]
        lengths.append(max((n + 1 for n, size in enumerate(sizes) if size >= 1e-4 * machep), default=0))
    last = max(k for k, n in enumerate(lengths) if n)
    return tuple(TEMME_D[k][: max(n, 1)] for k, n in enumerate(lengths[: last + 1]))


def _temme_sum(state: list[_F], machep: float) -> list[_F]:
    """sum_k c_k(eta) a^-k with ATen's two exits as masks: the body of a one-trip `while`, so that only the
    elements using the expansion evaluate its polynomials (pure arithmetic: fused)."""
    eta, a, _, _ = state
    acc, afac, old = a.like(0.0), a.like(1.0), a.like(math.inf)
    stop = a.ne(a)  # all false (a is a number here)
    for row in _temme_rows(machep):
        term = polevl(eta, row[::-1]) * afac
        size = fabs(term)
        grew = size > old
        acc = where(stop | grew, acc, acc + term)
        stop = stop | grew | (size < machep * fabs(acc))
        old, afac = size, afac / a
    return [eta, a, acc, stop & ~stop]


def _asymptotic(a: _F, x: _F, lower: bool, run: _F, machep: float) -> _F:
    """P (lower) or Q by Temme's expansion: 1/2 erfc(-+eta sqrt(a / 2)) -+ e^(-a eta^2 / 2) / sqrt(2 pi a)
    sum_k c_k(eta) a^-k, with eta = sign(x - a) sqrt(-2 (log1p(s) - s)), s = (x - a) / a."""
    sgn = -1.0 if lower else 1.0
    lam = x / a
    sigma = (x - a) / a
    root = sqrt(-2.0 * (sigma.fn("log_plus_one") - sigma))
    eta = where(lam > 1.0, root, where(lam < 1.0, -root, a.like(0.0)))
    res = 0.5 * (sgn * eta * sqrt(a / 2.0)).fn("erfc")
    acc = loop([eta, a, a.like(0.0), run], lambda s: s[-1], lambda s: _temme_sum(s, machep), 1)[2]
    return res + sgn * exp(-0.5 * a * eta * eta) * acc / sqrt((2.0 * _PI_F32) * a)


def igamma(a: _F, x: _F, upper: bool) -> _F:
    """P(a, x), or Q(a, x) = 1 - P for `upper`, choosing per element the expansion ATen's calc_igamma /
    calc_igammac chooses (module docstring); each element's unused expansions are discarded by the selects."""
    consts = _consts(a)
    machep, maxlog = consts[0], consts[1]
    a_in, x_in = a, x
    bad = isnan(a) | isnan(x) | (a <= 0.0) | (x <= 0.0) | fabs(a).eq(math.inf) | fabs(x).eq(math.inf)
    a, x = where(bad, 1.0, a), where(bad, 0.5, x)  # benign operands where a boundary case answers
    ratio = fabs(x - a) / a
    asym = ((a > 20.0) & (a < 200.0) & (ratio < 0.3)) | ((a > 200.0) & (ratio < 4.5 / sqrt(a)))
    # Q's choice (calc_igammac past its asymptotic case): 1 - P where P's series suits, else Q's fraction above
    # x = 1.1 and Q's series below it
    logx = log(x)  # one log for the choice, the prefactor and Q's series
    p_for_q = where(_above(x, 1.1), x < a, where(x <= 0.5, -0.4 / logx < a, x * 1.1 < a))
    if upper:
        use_p, use_cf = p_for_q, _above(x, 1.1) & ~p_for_q
    else:  # P's own choice: 1 - Q where x > 1 and x > a (Q's fraction, or its series up to 1.1), else P's series
        use_p = ~((x > 1.0) & (x > a))
        use_cf = ~use_p & _above(x, 1.1)
    use_p, use_cf = use_p & ~asym & ~bad, use_cf & ~asym & ~bad
    use_qs = ~use_p & ~use_cf & ~asym & ~bad
    lg_a = _lgamma(a)
    fac = _prefactor(a, x, logx, lg_a, use_p | use_cf, maxlog)
    p = _series_p(a, x, fac, use_p & fac.ne(0.0), machep)
    q = where(use_cf, _fraction_q(a, x, fac, use_cf & fac.ne(0.0), consts), _series_q(a, x, logx, lg_a, use_qs, machep))
    v = where(use_p, 1.0 - p if upper else p, q if upper else 1.0 - q)
    v = where(asym, _asymptotic(a, x, not upper, asym, machep), v)
    return _boundaries(a_in, x_in, v, upper)


def _boundaries(a: _F, x: _F, v: _F, upper: bool) -> _F:
    """ATen's chain of boundary cases over the expansions' v, applied last case first: a NaN operand reaches the
    expansions only past every case before them."""
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
    v = where(isnan(a) | isnan(x), math.nan, v)
    v = where(fabs(x).eq(math.inf), hi, v)
    v = where(fabs(a).eq(math.inf), where(fabs(x).eq(math.inf), a.like(math.nan), lo), v)
    v = where(x.eq(0.0), lo, v)
    v = where(a.eq(0.0), where(x > 0.0, a.like(hi), math.nan), v)
    return where((a < 0.0) | (x < 0.0), math.nan, v)
