"""Bessel functions as IR lowerings over primitives: J0, J1, Y0, Y1, the modified I0, I1, K0, K1 and their
exponentially scaled forms, Airy Ai and the spherical J0. Each is ATen's algorithm (ATen/native/Math.h: Cephes'
rational approximations and Chebyshev series, tables in ir_lowerings_tables.py), written with selects between
the branches instead of `if`s: both branches are computed, each on an argument moved into its own domain, so no
branch sees a value that overflows or divides by zero where the other is chosen. Straight-line: no loops.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from torchtpu.drivers import ir_lowerings_tables as T
from torchtpu.drivers.ir_lowerings import (
    _F,
    chbevl,
    cos,
    exp,
    fabs,
    isnan,
    log,
    narrow,
    p1evl,
    polevl,
    sin,
    sqrt,
    where,
    widen,
)

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Builder, Value

_SQ2OPI = 0.797884560802865355879892119868763737  # sqrt(2 / pi)
_TWOOPI = 0.636619772367581343075535053490057448  # 2 / pi


def _hankel(x: _F, t: dict, phase: float, second_kind: bool) -> _F:
    """x > 5: the Cephes P/Q asymptotic form, with cos (J) or sin (Y) of x - phase."""
    w = 25.0 / (x * x)
    p = polevl(w, t["PP"]) / polevl(w, t["PQ"])
    q = 5.0 / x * (polevl(w, t["QP"]) / p1evl(w, t["QQ"]))
    xn = x - phase
    if second_kind:
        return (p * sin(xn) + q * cos(xn)) * _SQ2OPI / sqrt(x)
    return (p * cos(xn) - q * sin(xn)) * _SQ2OPI / sqrt(x)


def j0(x: _F) -> _F:
    a = fabs(x)
    z = a * a
    small = where(a < 1e-5, 1.0 - z / 4.0,
                  (z - 5.78318596294678452118) * (z - 30.4712623436620863991) * polevl(z, T.J0["RP"])
                  / p1evl(z, T.J0["RQ"]))
    big = _hankel(where(a <= 5.0, 6.0, a), T.J0, math.pi / 4, False)
    return where(a <= 5.0, small, big)


def j1(x: _F) -> _F:
    a = fabs(x)
    z = a * a
    small = (polevl(z, T.J1["RP"]) / p1evl(z, T.J1["RQ"]) * a * (z - 14.6819706421238932572)
             * (z - 49.2184563216946036703))
    big = _hankel(where(a <= 5.0, 6.0, a), T.J1, 3 * math.pi / 4, False)
    v = where(a <= 5.0, small, big)
    return where(x < 0.0, -v, v)


def _domain(x: _F, v: _F, at_zero: float) -> _F:
    """NaN for x < 0 and NaN, `at_zero` at 0 (Y and K)."""
    return where(isnan(x) | (x < 0.0), math.nan, where(x.eq(0.0), at_zero, v))


def y0(x: _F) -> _F:
    s = where(x <= 5.0, where(x > 0.0, x, 1.0), 1.0)
    z = s * s
    small = polevl(z, T.Y0["YP"]) / p1evl(z, T.Y0["YQ"]) + _TWOOPI * log(s) * j0(s)
    big = _hankel(where(x <= 5.0, 6.0, x), T.Y0, math.pi / 4, True)
    return _domain(x, where(x <= 5.0, small, big), -math.inf)


def y1(x: _F) -> _F:
    s = where(x <= 5.0, where(x > 0.0, x, 1.0), 1.0)
    z = s * s
    small = s * (polevl(z, T.Y1["YP"]) / p1evl(z, T.Y1["YQ"])) + _TWOOPI * (j1(s) * log(s) - 1.0 / s)
    big = _hankel(where(x <= 5.0, 6.0, x), T.Y1, 3 * math.pi / 4, True)
    return _domain(x, where(x <= 5.0, small, big), -math.inf)


def _ie(x: _F, table: dict, first: bool) -> _F:
    """exp(-|x|) I0(x) (first=False) or exp(-|x|) I1(x): Chebyshev series on [0, 8] and in 32/x beyond."""
    a = fabs(x)
    small = chbevl(a / 2.0 - 2.0, table["A"])
    b = where(a <= 8.0, 16.0, a)
    big = chbevl(32.0 / b - 2.0, table["B"]) / sqrt(b)
    if not first:
        return where(a <= 8.0, small, big)
    v = where(a <= 8.0, small * a, big)
    return where(x < 0.0, -v, v)


def i0e(x: _F) -> _F:
    return _ie(x, T.I0, False)


def i1e(x: _F) -> _F:
    return _ie(x, T.I1, True)


def _k(x: _F, nu: int, scaled: bool) -> _F:
    """K0 / K1 (scaled: exp(x) K): Chebyshev series in x^2 - 2 on (0, 2] (with the I terms), in 8/x - 2 beyond."""
    s = where(x <= 2.0, where(x > 0.0, x, 1.0), 1.0)
    if nu == 0:
        small = chbevl(s * s - 2.0, T.K0["A"]) - log(0.5 * s) * i0e(s) * exp(s)
    else:
        small = log(0.5 * s) * i1e(s) * exp(s) + chbevl(s * s - 2.0, T.K1["A"]) / s
    b = where(x <= 2.0, 4.0, x)
    big = chbevl(8.0 / b - 2.0, (T.K0 if nu == 0 else T.K1)["B"]) / sqrt(b)
    v = where(x <= 2.0, small * exp(s), big) if scaled else where(x <= 2.0, small, big * exp(-b))
    return _domain(x, v, math.inf)


_MACLAURIN_TERMS = 12  # |x| < 2.09: term k is below x^3k / (3k)! <= 9.13^k / (3k)!, < 1e-30 at k = 12


def airy_ai(x: _F) -> _F:
    """ATen's airy_ai_forward: Cephes' asymptotic forms below -2.09 and from 2.09 on, the Maclaurin series
    between (ATen sums it until a term is below epsilon; the fixed 12 terms are past that for f32 and f64);
    0 beyond 103.892, NaN at +-inf (as torch)."""
    neg = where(x < -2.09, x, -3.0)
    t = -2.0 * neg * sqrt(-neg) / 3.0
    z = 1.0 / t
    zz = z * z
    left = (0.564189583547756286948 / sqrt(sqrt(-neg))
            * (sin(t + 0.25 * math.pi) * (1.0 + zz * polevl(zz, T.AIRY["AFN"]) / polevl(zz, T.AIRY["AFD"]))
               - cos(t + 0.25 * math.pi) * (z * polevl(zz, T.AIRY["AGN"]) / polevl(zz, T.AIRY["AGD"]))))
    pos = where(x >= 2.09, x, 3.0)
    zeta = 2.0 * pos * sqrt(pos) / 3.0
    right = (0.564189583547756286948 * (polevl(1.0 / zeta, T.AIRY["AN"]) / polevl(1.0 / zeta, T.AIRY["AD"]))
             / (2.0 * sqrt(sqrt(pos)) * exp(zeta)))
    m = where((x >= -2.09) & (x < 2.09), x, 0.0)
    x3 = m * m * m
    f, g, tf, tg = m.like(1.0), m, m.like(1.0), m
    for k in range(1, _MACLAURIN_TERMS + 1):
        tf = tf * x3 / float((3 * k - 1) * (3 * k))
        tg = tg * x3 / float((3 * k) * (3 * k + 1))
        f, g = f + tf, g + tg
    middle = 0.355028053887817239260 * f - 0.258819403792806798405 * g
    v = where(x < -2.09, left, where(x < 2.09, middle, where(x > 103.892, 0.0, right)))
    return where(isnan(x) | fabs(x).eq(math.inf), math.nan, v)


def spherical_bessel_j0(x: _F) -> _F:
    y = x * x
    small = 1.0 - y / 6.0 * (1.0 - y / 20.0 * (1.0 - y / 42.0 * (1.0 - y / 72.0 * (1.0 - y / 110.0))))
    big = sin(x) / where(fabs(x) < 0.5, 1.0, x)
    return where(fabs(x).eq(math.inf), 0.0, where(fabs(x) < 0.5, small, big))


FUNCTIONS = {
    "bessel_j0": j0, "bessel_j1": j1, "bessel_y0": y0, "bessel_y1": y1, "bessel_i0e": i0e, "bessel_i1e": i1e,
    "bessel_i0": lambda x: i0e(x) * exp(fabs(x)), "bessel_i1": lambda x: i1e(x) * exp(fabs(x)),
    "bessel_k0": lambda x: _k(x, 0, False), "bessel_k0e": lambda x: _k(x, 0, True),
    "bessel_k1": lambda x: _k(x, 1, False), "bessel_k1e": lambda x: _k(x, 1, True),
    "airy_ai": airy_ai, "spherical_bessel_j0": spherical_bessel_j0,
}


def lower(b: Builder, x_in: Value, function: str) -> list[Value]:
    """The Bessel-family `function` of x, in float32 (float64 for float64 operands), back in x's dtype."""
    return narrow(FUNCTIONS[function](widen(b, x_in)), x_in.dtype)
