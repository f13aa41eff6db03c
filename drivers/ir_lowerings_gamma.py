"""The gamma family as IR lowerings over primitives: erfcx, ndtri, Hurwitz zeta, polygamma (digamma, trigamma
and n >= 2 through zeta); the regularized incomplete gamma functions igamma / igammac are
ir_lowerings_igamma.py's.

What iterates a data-dependent number of times is IR op `while` (an element-wise bounded loop, ir_lowerings.py
`loop`): zeta's direct sum (until q + i > 9: at most 10 trips for q > 0, 9 - q for the negative q of polygamma
at negative x). The rest is straight-line, with fixed bounds said where they
are set.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from torchtpu.drivers.ir_lowerings import (
    _F,
    digamma,
    exp,
    fabs,
    isnan,
    lgamma,
    log,
    loop,
    narrow,
    odd,
    sin,
    sqrt,
    where,
    widen,
)
from torchtpu.drivers.ir_lowerings_igamma import igamma

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Builder, Value


def _lgamma(x: _F) -> _F:
    return _F(x.b, lgamma(x.b, x.v)[0])


def _exp_square(x: _F) -> _F:
    """exp(x^2) with x^2 split exactly into hi + lo (Veltkamp), so its rounding does not scale the result's
    error by x^2: exp(hi) exp(lo)."""
    split = 134217729.0 if x.v.dtype == "float64" else 4097.0  # 2^27 + 1, 2^12 + 1
    t = x * split
    xh = t - (t - x)
    xl = x - xh
    hi = xh * xh
    lo = 2.0 * xh * xl + xl * xl
    return exp(hi) * exp(lo)


def erfcx(x: _F) -> _F:
    """exp(x^2) erfc(x), and the asymptotic series (11 terms) where erfc underflows: from 25 on in float64, from
    9 in float32 (erfc(9) = 4e-37; the 11-term series is accurate to 1e-12 there). Below -27 (float64) or -10
    (float32) exp(x^2) overflows, so the result is inf as on CPU: taken directly, since the split square of a
    huge x is inf * 0 = NaN there."""
    edge = 25.0 if x.v.dtype == "float64" else 9.0
    overflow = -27.0 if x.v.dtype == "float64" else -10.0
    big = where(x < edge, edge, x)
    y = 1.0 / (2.0 * big * big)
    acc, term = y.like(1.0), y.like(1.0)
    for k in range(1, 12):
        term = term * -(2.0 * k - 1.0) * y
        acc = acc + term
    near = _exp_square(where(x < edge, x, 0.0)) * x.fn("erfc")
    v = where(x < edge, near, acc / (big * math.sqrt(math.pi)))
    return where(isnan(x), x, where(x < overflow, math.inf, v))


def ndtri(p: _F) -> _F:
    """The normal quantile: a rational first guess on the lower tail q = min(p, 1 - p), then six Newton steps on
    Phi(x) = q (Phi through erfc: accurate in the tail); NaN outside [0, 1], -+inf at 0 and 1."""
    q = where(p < 0.5, p, 1.0 - p)
    qs = where(q > 0.0, q, 0.5)
    t = sqrt(-2.0 * log(qs))
    x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
          / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t))
    for _ in range(6):
        err = 0.5 * (x * (-1.0 / math.sqrt(2.0))).fn("erfc") - qs
        x = x - err / (exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi)))
    v = where(p < 0.5, x, -x)
    v = where(p.eq(0.0), -math.inf, where(p.eq(1.0), math.inf, v))
    return where(isnan(p) | (p < 0.0) | (p > 1.0), math.nan, v)


_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)
ZETA_LIMIT = 1 << 20  # direct-sum trips: 9 - q for negative q; q below -ZETA_LIMIT + 10 gives NaN (fail closed)


_MACHEP = 1.11022302462515654042e-16


def zeta(x: _F, q: _F) -> _F:
    """Hurwitz zeta (Cephes' Euler-Maclaurin summation, as ATen): direct terms until 9 are summed and q + i > 9
    (a `while`), then the 12 Bernoulli tail terms, each stage with Cephes' early exit (a term within MACHEP of
    the sum ends it: what makes zeta(inf, q) finite or inf where the tail would give inf * 0). ATen's checks in
    its order: x == 1 is inf, x < 1 NaN, an integer q <= 0 inf (a NaN x included), a fractional q <= 0 NaN
    unless x is an integer (polygamma at negative x)."""
    pole = x.eq(1.0) | (~(x < 1.0) & (q <= 0.0) & q.fn("floor").eq(q))
    nan = ~pole & ((x < 1.0) | ((q <= 0.0) & x.fn("floor").ne(x)))
    far = q < -(ZETA_LIMIT - 10.0)
    bad = pole | nan | far | isnan(x) | isnan(q)
    sx, sq = where(bad, 2.0, x), where(bad, 1.0, q)

    def more(s: list[_F]) -> _F:
        return s[5].eq(0.0) & ((s[1] < 9.0) | (s[2] <= 9.0))

    def step(s: list[_F]) -> list[_F]:
        px, cnt, a, acc, _, _ = s
        a2 = a + 1.0
        b2 = a2 ** -px
        acc2 = acc + b2
        done = where((-_MACHEP * acc2 < b2) & (b2 < _MACHEP * acc2), a.like(1.0), 0.0)
        return [px, cnt + 1.0, a2, acc2, b2, done]

    zero = sq.like(0.0)
    _, _, a, acc, b, summed = loop([sx, zero, sq, sq ** -sx, zero, zero], more, step, ZETA_LIMIT)
    direct, w = acc, a  # the direct sum's exit returns its sum as it stood (no tail)
    acc = acc + b * w / (sx - 1.0) - 0.5 * b
    fa, k, stop = sq.like(1.0), 0.0, summed.ne(0.0)
    for coef in _ZETA_A:
        fa = fa * (sx + k)
        b = b / w
        t = fa * b / coef
        acc = where(stop, acc, acc + t)
        stop = stop | (fabs(t / acc) < _MACHEP)
        k += 1.0
        fa = fa * (sx + k)
        b = b / w
        k += 1.0
    v = where(summed.ne(0.0), direct, acc)
    v = where(isnan(x) | isnan(q), math.nan, v)
    v = where(far, math.nan, v)
    return where(pole, x.like(math.inf), where(nan, math.nan, v))


def trigamma(x: _F) -> _F:
    """ATen's trigamma: reflection below 0.5, six recurrence steps, the asymptotic series."""
    low = x < 0.5
    s = sin(math.pi * x)
    result = where(low, -(math.pi * math.pi) / (s * s), x.like(0.0))
    y = where(low, 1.0 - x, x)
    for _ in range(6):
        result = result + 1.0 / (y * y)
        y = y + 1.0
    ixx = 1.0 / (y * y)
    result = result + (1.0 + 1.0 / (2.0 * y) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / y
    return where(low, -result, result)


def polygamma(n: _F, x: _F) -> _F:
    """digamma (n = 0), trigamma (n = 1), and (-1)^(n+1) n! zeta(n + 1, x) for n >= 2 (as ATen)."""
    k = where(n >= 2.0, n, 2.0)
    big = where(odd(k), 1.0, k.like(-1.0)) * exp(_lgamma(k + 1.0)) * zeta(k + 1.0, x)
    psi = _F(x.b, digamma(x.b, x.v)[0])
    return where(n.eq(0.0), psi, where(n.eq(1.0), trigamma(x), big))


UNARY = {"erfcx": erfcx, "ndtri": ndtri}
BINARY = {"zeta": zeta, "polygamma": polygamma, "igamma": lambda a, x: igamma(a, x, False),
          "igammac": lambda a, x: igamma(a, x, True)}


def lower_unary(b: Builder, x_in: Value, function: str) -> list[Value]:
    return narrow(UNARY[function](widen(b, x_in)), x_in.dtype)


def lower_binary(b: Builder, a_in: Value, x_in: Value, function: str) -> list[Value]:
    return narrow(BINARY[function](widen(b, a_in), widen(b, x_in)), x_in.dtype)
