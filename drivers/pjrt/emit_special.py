"""Special-function emitters (`special_unary` / `special_binary`, selected by `function`).

Every function of drivers/ir_ops.py's SPECIAL_UNARY / SPECIAL_BINARY is printed as StableHLO: CHLO ops where
they exist (bessel_i1e, erfc, erf_inv, lgamma), Cephes rational and Chebyshev approximations
with selects for the Bessel, modified Bessel and Airy functions (the tables PyTorch's CPU kernels use, in
special_tables.py), and `stablehlo.while` loops for what iterates: the incomplete gamma series and continued
fraction (as the sim), and the orthogonal-polynomial recurrences of a tensor degree n (as the sim and ATen).
The edge cases (NaN, 0, negative arguments, infinities) follow the sim's kernels (drivers/sim/kernels_special.py).

The math runs in float64 on the CPU platform (as the sim) and float32 elsewhere (TPUs have no f64).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from torchtpu.drivers.ir import Op
from torchtpu.drivers.pjrt import special_tables as T
from torchtpu.drivers.pjrt.emit_core import Emitter, V, emits

SPECIAL_EMITTED = ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "bessel_i0", "bessel_i0e", "bessel_i1",
                   "bessel_i1e", "bessel_k0", "bessel_k0e", "bessel_k1", "bessel_k1e", "airy_ai",
                   "spherical_bessel_j0", "erfcx", "ndtri", "zeta", "polygamma", "igamma", "igammac",
                   "chebyshev_t", "chebyshev_u", "chebyshev_v", "chebyshev_w", "shifted_chebyshev_t",
                   "shifted_chebyshev_u", "shifted_chebyshev_v", "shifted_chebyshev_w", "hermite_h", "hermite_he",
                   "laguerre_l", "legendre_p")


class X:
    """An element-wise value with arithmetic operators, so the expansions below read like the C they port.
    Python numbers are splatted to the value's shape and dtype; comparisons give bool values."""

    __slots__ = ("e", "v")

    def __init__(self, e: Emitter, v: V) -> None:
        self.e, self.v = e, v

    def _c(self, other: X | float) -> X:
        return other if isinstance(other, X) else X(self.e, self.e.like(other, self.v))

    def _bin(self, name: str, other: X | float, swap: bool = False) -> X:
        a, b = (self._c(other), self) if swap else (self, self._c(other))
        return X(self.e, self.e.binary(name, a.v, b.v))

    def __add__(self, o): return self._bin("stablehlo.add", o)  # noqa: E704
    def __radd__(self, o): return self._bin("stablehlo.add", o, True)  # noqa: E704
    def __sub__(self, o): return self._bin("stablehlo.subtract", o)  # noqa: E704
    def __rsub__(self, o): return self._bin("stablehlo.subtract", o, True)  # noqa: E704
    def __mul__(self, o): return self._bin("stablehlo.multiply", o)  # noqa: E704
    def __rmul__(self, o): return self._bin("stablehlo.multiply", o, True)  # noqa: E704
    def __truediv__(self, o): return self._bin("stablehlo.divide", o)  # noqa: E704
    def __rtruediv__(self, o): return self._bin("stablehlo.divide", o, True)  # noqa: E704
    def __and__(self, o): return self._bin("stablehlo.and", o)  # noqa: E704
    def __or__(self, o): return self._bin("stablehlo.or", o)  # noqa: E704
    def __invert__(self): return X(self.e, self.e.unary("stablehlo.not", self.v))  # noqa: E704
    def __neg__(self): return X(self.e, self.e.unary("stablehlo.negate", self.v))  # noqa: E704

    def _cmp(self, direction: str, other: X | float) -> X:
        return X(self.e, self.e.compare(direction, self.v, self._c(other).v))

    def __lt__(self, o): return self._cmp("LT", o)  # noqa: E704
    def __le__(self, o): return self._cmp("LE", o)  # noqa: E704
    def __gt__(self, o): return self._cmp("GT", o)  # noqa: E704
    def __ge__(self, o): return self._cmp("GE", o)  # noqa: E704
    def eq(self, o): return self._cmp("EQ", o)  # noqa: E704
    def ne(self, o): return self._cmp("NE", o)  # noqa: E704

    def fn(self, name: str) -> X:
        return X(self.e, self.e.unary(name if "." in name else f"stablehlo.{name}", self.v))

    def like(self, value: float) -> X:
        return self._c(value)


def where(c: X, a: X | float, b: X | float) -> X:
    ref = a if isinstance(a, X) else b
    if not isinstance(ref, X):
        raise TypeError("where() needs one value operand (use x.like(c) for a constant)")
    a, b = ref._c(a), ref._c(b)
    return X(c.e, c.e.select(c.v, a.v, b.v))


def exp(x: X) -> X: return x.fn("exponential")  # noqa: E704
def log(x: X) -> X: return x.fn("log")  # noqa: E704
def sqrt(x: X) -> X: return x.fn("sqrt")  # noqa: E704
def sin(x: X) -> X: return x.fn("sine")  # noqa: E704
def cos(x: X) -> X: return x.fn("cosine")  # noqa: E704
def fabs(x: X) -> X: return x.fn("abs")  # noqa: E704
def isnan(x: X) -> X: return x.ne(x)  # noqa: E704


def polevl(x: X, coefs: Sequence[float]) -> X:
    """Horner: coefs[0] x^(n-1) + ... + coefs[-1]."""
    acc = x.like(coefs[0])
    for c in coefs[1:]:
        acc = acc * x + c
    return acc


def p1evl(x: X, coefs: Sequence[float]) -> X:
    """Horner with an implied leading 1 (Cephes' p1evl; ATen's port drops that 1, an error up to ~2e-6 near 5)."""
    return polevl(x, (1.0, *coefs))


def chbevl(y: X, coefs: Sequence[float]) -> X:
    """Cephes' Chebyshev series sum (Clenshaw): 0.5 (b0 - b2)."""
    b0, b1, b2 = y.like(coefs[0]), y.like(0.0), y.like(0.0)
    for c in coefs[1:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return 0.5 * (b0 - b2)


# -- Bessel functions of the first and second kind (Cephes j0/j1/y0/y1) --
_SQ2OPI = 0.797884560802865355879892119868763737  # sqrt(2 / pi)
_TWOOPI = 0.636619772367581343075535053490057448  # 2 / pi


def _hankel(x: X, t: dict, phase: float, second_kind: bool) -> X:
    """x > 5: the Cephes P/Q asymptotic form, with cos (J) or sin (Y) of x - phase."""
    w = 25.0 / (x * x)
    p = polevl(w, t["PP"]) / polevl(w, t["PQ"])
    q = 5.0 / x * (polevl(w, t["QP"]) / p1evl(w, t["QQ"]))
    xn = x - phase
    if second_kind:
        return (p * sin(xn) + q * cos(xn)) * _SQ2OPI / sqrt(x)
    return (p * cos(xn) - q * sin(xn)) * _SQ2OPI / sqrt(x)


def _j0(x: X) -> X:
    a = fabs(x)
    z = a * a
    small = where(a < 1e-5, 1.0 - z / 4.0,
                  (z - 5.78318596294678452118) * (z - 30.4712623436620863991) * polevl(z, T.J0["RP"])
                  / p1evl(z, T.J0["RQ"]))
    big = _hankel(where(a <= 5.0, 6.0, a), T.J0, math.pi / 4, False)
    return where(a <= 5.0, small, big)


def _j1(x: X) -> X:
    a = fabs(x)
    z = a * a
    small = (polevl(z, T.J1["RP"]) / p1evl(z, T.J1["RQ"]) * a * (z - 14.6819706421238932572)
             * (z - 49.2184563216946036703))
    big = _hankel(where(a <= 5.0, 6.0, a), T.J1, 3 * math.pi / 4, False)
    v = where(a <= 5.0, small, big)
    return where(x < 0.0, -v, v)


def _y_domain(x: X, v: X) -> X:
    """NaN for x < 0 and NaN, -inf at 0 (the sim's y0/y1)."""
    return where(isnan(x) | (x < 0.0), math.nan, where(x.eq(0.0), -math.inf, v))


def _y0(x: X) -> X:
    s = where(x <= 5.0, where(x > 0.0, x, 1.0), 1.0)
    z = s * s
    small = polevl(z, T.Y0["YP"]) / p1evl(z, T.Y0["YQ"]) + _TWOOPI * log(s) * _j0(s)
    big = _hankel(where(x <= 5.0, 6.0, x), T.Y0, math.pi / 4, True)
    return _y_domain(x, where(x <= 5.0, small, big))


def _y1(x: X) -> X:
    s = where(x <= 5.0, where(x > 0.0, x, 1.0), 1.0)
    z = s * s
    small = s * (polevl(z, T.Y1["YP"]) / p1evl(z, T.Y1["YQ"])) + _TWOOPI * (_j1(s) * log(s) - 1.0 / s)
    big = _hankel(where(x <= 5.0, 6.0, x), T.Y1, 3 * math.pi / 4, True)
    return _y_domain(x, where(x <= 5.0, small, big))


# -- modified Bessel functions (Cephes i0/k0/k1 Chebyshev series; i1e is CHLO's) --
def _i0e(x: X) -> X:
    a = fabs(x)
    small = chbevl(a / 2.0 - 2.0, T.I0["A"])
    big = chbevl(32.0 / where(a <= 8.0, 16.0, a) - 2.0, T.I0["B"]) / sqrt(a)
    return where(a <= 8.0, small, big)


def _i1e(x: X) -> X:
    return x.fn("chlo.bessel_i1e")


def _k_domain(x: X, v: X) -> X:
    """NaN for x < 0 and NaN, +inf at 0 (the sim's k0/k1)."""
    return where(isnan(x) | (x < 0.0), math.nan, where(x.eq(0.0), math.inf, v))


def _ke(x: X, nu: int) -> X:
    """exp(x) K_nu(x) for x > 0."""
    s = where(x <= 2.0, where(x > 0.0, x, 1.0), 1.0)
    if nu == 0:
        small = (chbevl(s * s - 2.0, T.K0["A"]) - log(0.5 * s) * _i0e(s) * exp(s)) * exp(s)
    else:
        small = (log(0.5 * s) * _i1e(s) * exp(s) + chbevl(s * s - 2.0, T.K1["A"]) / s) * exp(s)
    b = where(x <= 2.0, 4.0, x)
    big = chbevl(8.0 / b - 2.0, (T.K0 if nu == 0 else T.K1)["B"]) / sqrt(b)
    return _k_domain(x, where(x <= 2.0, small, big))


def _k(x: X, nu: int) -> X:
    return _k_domain(x, _ke(x, nu) * exp(-x))


# -- Airy Ai: the Maclaurin series on [-6, 2.09) (as the sim: Cephes' asymptotic form is off by ~1e-5 near
# -2.09), Cephes' asymptotic forms beyond --
def _airy_ai(x: X) -> X:
    neg = where(x < -6.0, x, -7.0)
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
    m = where((x >= -6.0) & (x < 2.09), x, 0.0)
    x3 = m * m * m
    f, g, tf, tg = m.like(1.0), m, m.like(1.0), m
    for k in range(1, 41):  # |x^3| <= 216: the terms fall below 1e-17 of the sum before k = 40
        tf = tf * x3 / float((3 * k - 1) * (3 * k))
        tg = tg * x3 / float((3 * k) * (3 * k + 1))
        f, g = f + tf, g + tg
    middle = 0.355028053887817239260 * f - 0.258819403792806798405 * g
    v = where(x < -6.0, left, where(x < 2.09, middle, where(x > 103.892, 0.0, right)))
    return where(isnan(x), x, where(fabs(x).eq(math.inf), 0.0, v))


# -- loops --
def while_loop(e: Emitter, init: Sequence[V], cond: Callable[[list[V]], V],
               body: Callable[[list[V]], Sequence[V]]) -> list[V]:
    """stablehlo.while over values of any shape; `cond` gives a 0-d bool."""

    def block(fn: Callable[[list[V]], Sequence[V]]) -> str:
        saved, saved_indent = e.lines, e._indent
        e.lines, e._indent = [], saved_indent + "    "
        args = [V(f"%w{e.fresh()[1:]}", v.shape, v.dtype) for v in init]
        results = list(fn(args))
        e.raw(f'"stablehlo.return"({", ".join(r.name for r in results)}) : '
              f'({", ".join(r.type for r in results)}) -> ()')
        inner, e.lines, e._indent = e.lines, saved, saved_indent
        header = ", ".join(f"{a.name}: {a.type}" for a in args)
        return "{\n" + f"{saved_indent}  ^bb0({header}):\n" + "\n".join(inner) + f"\n{saved_indent}}}"

    regions = f" ({block(lambda a: [cond(a)])}, {block(body)})"
    return e.op_multi("stablehlo.while", init, [(v.shape, v.dtype) for v in init], region=regions)


def _any(e: Emitter, flag: X) -> V:
    if not flag.v.shape:
        return flag.v
    init = e.const(False, (), "bool")
    return e.reduce([flag.v], [init], list(range(len(flag.v.shape))),
                    lambda a: [e.binary("stablehlo.or", a[0], a[1])])[0]


def _counted_loop(e: Emitter, limit: int, state: Sequence[X], step: Callable[[X, list[X]], tuple[list[X], X]]
                  ) -> list[X]:
    """Runs `step(i, state) -> (state, active)` for i = 1, 2, ... while some element is active and i <= limit."""
    one = e.const(1, (), "int64")
    go = e.const(True, (), "bool")

    def cond(a: list[V]) -> V:
        within = e.compare("LE", a[0], e.const(limit, (), "int64"))
        return e.binary("stablehlo.and", within, a[1])

    def body(a: list[V]) -> list[V]:
        i = a[0]
        xs = [X(e, v) for v in a[2:]]
        fi = X(e, e.splat(e.convert(i, xs[0].v.dtype), xs[0].v.shape))
        new, active = step(fi, xs)
        return [e.binary("stablehlo.add", i, e.const(1, (), "int64")), _any(e, active), *[n.v for n in new]]

    outs = while_loop(e, [one, go, *[s.v for s in state]], cond, body)
    return [X(e, v) for v in outs[2:]]


# -- incomplete gamma (the sim's series for x < a + 1, Lentz's continued fraction beyond) --
def _igamma(a: X, x: X, upper: bool) -> X:
    e = a.e
    f64 = a.v.dtype == "float64"
    tiny, eps = (1e-300, 1e-17) if f64 else (1e-30, 1e-8)
    use_series = x < a + 1.0
    bad = isnan(a) | isnan(x) | (a < 0.0) | (x < 0.0) | a.eq(0.0) | x.eq(0.0) | fabs(a).eq(math.inf) \
        | fabs(x).eq(math.inf)
    sa, sx = where(bad | ~use_series, 1.0, a), where(bad | ~use_series, 0.5, x)
    ca, cx = where(bad | use_series, 1.0, a), where(bad | use_series, 2.0, x)

    def step(i: X, st: list[X]) -> tuple[list[X], X]:
        r, c, s, act_s, b, cc, d, h, act_f = st
        r2 = r + 1.0
        c2 = c * sx / r2
        s2 = s + c2
        new_act_s = act_s & ~(c2 <= eps * s2)
        an = -i * (i - ca)
        b2 = b + 2.0
        d2 = an * d + b2
        d2 = where(fabs(d2) < tiny, tiny, d2)
        c3 = b2 + an / cc
        c3 = where(fabs(c3) < tiny, tiny, c3)
        d2 = 1.0 / d2
        delta = d2 * c3
        h2 = h * delta
        new_act_f = act_f & ~(fabs(delta - 1.0) < 1e-16)
        keep = lambda new, old, act: where(act, new, old)  # noqa: E731
        return ([keep(r2, r, act_s), keep(c2, c, act_s), keep(s2, s, act_s), new_act_s,
                 keep(b2, b, act_f), keep(c3, cc, act_f), keep(d2, d, act_f), keep(h2, h, act_f), new_act_f],
                new_act_s | new_act_f)

    t = X(e, e.const(True, a.v.shape, "bool"))
    b0 = cx + 1.0 - ca
    init = [sa, sa.like(1.0), sa.like(1.0), t, b0, b0.like(1.0 / tiny), 1.0 / b0, 1.0 / b0, t]
    _, _, s, _, _, _, _, h, _ = _counted_loop(e, 2000, init, step)
    lg = lambda v: v.fn("chlo.lgamma")  # noqa: E731
    p = exp(sa * log(sx) - sx - lg(sa)) * s / sa
    q = exp(ca * log(cx) - cx - lg(ca)) * h
    v = where(use_series, 1.0 - p if upper else p, q if upper else 1.0 - q)
    # the sim's special cases, in its order of precedence
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
    v = where(fabs(x).eq(math.inf), hi, v)
    v = where(fabs(a).eq(math.inf), where(fabs(x).eq(math.inf), a.like(math.nan), lo), v)
    v = where(x.eq(0.0), lo, v)
    v = where(a.eq(0.0), where(x > 0.0, a.like(hi), math.nan), v)
    return where(isnan(a) | isnan(x) | (a < 0.0) | (x < 0.0), math.nan, v)


# -- orthogonal polynomials of a tensor degree n (the sim's recurrences and ATen's closed forms) --
def _chebyshev(x: X, n: X, kind: int) -> X:
    """T (0), U (1), V (2), W (3)."""
    e = x.e
    odd = fabs(n - 2.0 * (n / 2.0).fn("floor")).eq(1.0)
    pos = x > 0.0
    if kind == 0:
        at1 = where(pos | ~odd, x.like(1.0), -1.0)
    elif kind == 1:
        at1 = where(pos | ~odd, n + 1.0, -(n + 1.0))
    elif kind == 2:
        at1 = where(pos, 1.0, where(~odd, n + n + 1.0, -(n + n + 1.0)))
    else:
        at1 = where(pos, n + n + 1.0, where(~odd, x.like(1.0), -1.0))
    inside = (fabs(x) < 1.0) & (n > (6.0 if kind == 0 else 8.0))
    th = where(inside, x, 0.5).fn("chlo.acos")
    if kind == 0:
        trig = cos(n * th)
    elif kind == 1:
        st = sin(th)
        trig = where(st.ne(0.0), sin((n + 1.0) * th) / st, (n + 1.0) * cos((n + 1.0) * th) / x)
    elif kind == 2:
        trig = cos((n + 0.5) * th) / cos(th / 2.0)
    else:
        trig = sin((n + 0.5) * th) / sin(th / 2.0)
    first = (x, x + x, x + x - 1.0, x + x + 1.0)[kind]
    rec = _recurrence(e, x, n, ~inside & fabs(x).ne(1.0), first, lambda k, p, q: (x + x) * q - p)
    v = where(n.eq(0.0), 1.0, rec)
    v = where(inside, trig, v)
    v = where(fabs(x).eq(1.0), at1, v)
    return where(n < 0.0, 0.0, v)


def _recurrence(e: Emitter, x: X, n: X, used: X, first: X, nxt: Callable[[X, X, X], X]) -> X:
    """q_n from p = q_0 = 1, q = q_1 = `first`, q_(k+1) = nxt(k, q_(k-1), q_k), for k = 1 .. n-1 (n >= 1);
    the loop runs to the largest degree among the elements that `used` selects."""
    deg = where(used & (n >= 1.0) & fabs(n).ne(math.inf), n, 0.0)
    top = e.reduce([deg.v], [e.const(0.0, (), deg.v.dtype)], list(range(len(deg.v.shape))),
                   lambda a: [e.binary("stablehlo.maximum", a[0], a[1])])[0] if deg.v.shape else deg.v
    limit = e.convert(top, "int64")
    one = e.const(1, (), "int64")

    def cond(a: list[V]) -> V:
        return e.compare("LT", a[0], a[1])

    def body(a: list[V]) -> list[V]:
        k, p, q = X(e, a[0]), X(e, a[2]), X(e, a[3])
        kf = X(e, e.splat(e.convert(k.v, p.v.dtype), p.v.shape))
        active = kf < n
        r = nxt(kf, p, q)
        return [e.binary("stablehlo.add", a[0], e.const(1, (), "int64")), a[1], where(active, q, p).v,
                where(active, r, q).v]

    outs = while_loop(e, [one, limit, x.like(1.0).v, first.v], cond, body)
    return X(e, outs[3])


def _polynomial(fn: str, x: X, nf: X) -> X:
    nan = isnan(x) | isnan(nf)
    n = _trunc(nf)
    if fn.startswith("shifted_chebyshev_"):
        v = _chebyshev(x + x - 1.0, n, "tuvw".index(fn[-1]))
    elif fn.startswith("chebyshev_"):
        v = _chebyshev(x, n, "tuvw".index(fn[-1]))
    else:
        e = x.e
        if fn == "hermite_h":
            rec = _recurrence(e, x, n, n >= 1.0, x + x, lambda k, p, q: (x + x) * q - 2.0 * k * p)
        elif fn == "hermite_he":
            rec = _recurrence(e, x, n, n >= 1.0, x, lambda k, p, q: x * q - k * p)
        elif fn == "laguerre_l":
            rec = _recurrence(e, x, n, n >= 1.0, 1.0 - x, lambda k, p, q: ((2.0 * k + 1.0 - x) * q - k * p) / (k + 1.0))
            rec = where(x.eq(0.0), 1.0, rec)
        else:  # legendre_p
            rec = _recurrence(e, x, n, n >= 1.0, x, lambda k, p, q: ((2.0 * k + 1.0) * x * q - k * p) / (k + 1.0))
            even = fabs(n - 2.0 * (n / 2.0).fn("floor")).eq(0.0)
            rec = where(fabs(x).eq(1.0), where((x > 0.0) | even, x.like(1.0), -1.0), rec)
        v = where(n < 0.0, 0.0, where(n.eq(0.0), 1.0, rec))
    return where(nan, math.nan, v)


def _trunc(x: X) -> X:
    """Toward zero (the sim's int(n)); +-inf stay (as huge degrees)."""
    return where(x < 0.0, -(-x).fn("floor"), x.fn("floor"))


_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)


def _zeta(x: X, q: X) -> X:
    """Hurwitz zeta as the sim (Cephes' Euler-Maclaurin summation, as ATen): direct terms in a while loop until
    9 terms are summed and q + i > 9, then 12 Bernoulli tail terms (without Cephes' early exits, which only
    skip terms below 1e-16 of the sum). Negative q is allowed for integer x (polygamma of negative x)."""
    e = x.e
    pw = lambda a, b: X(e, e.binary("stablehlo.power", a.v, b.v))  # noqa: E731
    bad = isnan(x) | isnan(q) | (x <= 1.0) | ((q <= 0.0) & (q.fn("floor").eq(q) | x.fn("floor").ne(x)))
    sx, sq = where(bad, 2.0, x), where(bad, 1.0, q)

    def step(i: X, st: list[X]) -> tuple[list[X], X]:
        cnt, a, acc, b = st
        act = (cnt < 9.0) | (a <= 9.0)
        a2 = a + 1.0
        b2 = pw(a2, -sx)
        new = [where(act, cnt + 1.0, cnt), where(act, a2, a), where(act, acc + b2, acc), where(act, b2, b)]
        return new, (new[0] < 9.0) | (new[1] <= 9.0)

    init = [sq.like(0.0), sq, pw(sq, -sx), sq.like(0.0)]
    _, a, acc, b = _counted_loop(e, 100000, init, step)
    w = a
    acc = acc + b * w / (sx - 1.0) - 0.5 * b
    a, k = sq.like(1.0), 0.0
    for coef in _ZETA_A:
        a = a * (sx + k)
        b = b / w
        acc = acc + a * b / coef
        k += 1.0
        a = a * (sx + k)
        b = b / w
        k += 1.0
    v = where(x.eq(1.0) | ((q <= 0.0) & q.fn("floor").eq(q) & (x > 1.0)), x.like(math.inf), acc)
    return where(isnan(x) | isnan(q) | (x < 1.0) | ((q <= 0.0) & q.fn("floor").ne(q) & x.fn("floor").ne(x)),
                 math.nan, v)


def _digamma(x: X) -> X:
    """Reflection below 0, recurrence up to 10, the asymptotic series (ATen's calc_digamma, as the sim)."""
    neg = x < 0.0
    result = where(neg, -math.pi / (math.pi * x).fn("tan"), x.like(0.0))
    y = where(neg, 1.0 - x, x)
    for _ in range(10):
        small = y < 10.0
        result = where(small, result - 1.0 / y, result)
        y = where(small, y + 1.0, y)
    f = 1.0 / (y * y)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))))
    v = result + log(y) - 0.5 / y - series
    v = where(neg & (x.fn("floor")).eq(x), math.nan, v)
    zero = where(x.eq(0.0), x, 1.0)  # the sign of a zero picks the infinity
    return where(x.eq(0.0), where(sign_bit(zero), x.like(math.inf), -math.inf), v)


def sign_bit(x: X) -> X:
    return (1.0 / x) < 0.0


def _trigamma(x: X) -> X:
    """ATen's trigamma (as the sim): reflection below 0.5, six recurrence steps, the asymptotic series."""
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


def _special_math(e: Emitter, fn: str, vs: list[V]) -> V:
    xs = [X(e, v) for v in vs]
    x = xs[0]
    unary: dict[str, Callable[[], X]] = {
        "bessel_j0": lambda: _j0(x), "bessel_j1": lambda: _j1(x), "bessel_y0": lambda: _y0(x),
        "bessel_y1": lambda: _y1(x), "bessel_i0e": lambda: _i0e(x), "bessel_i0": lambda: _i0e(x) * exp(fabs(x)),
        "bessel_i1e": lambda: _i1e(x), "bessel_i1": lambda: _i1e(x) * exp(fabs(x)),
        "bessel_k0": lambda: _k(x, 0), "bessel_k0e": lambda: _ke(x, 0), "bessel_k1": lambda: _k(x, 1),
        "bessel_k1e": lambda: _ke(x, 1), "airy_ai": lambda: _airy_ai(x),
    }
    if fn in unary:
        return unary[fn]().v
    if fn == "spherical_bessel_j0":
        y = x * x
        small = 1.0 - y / 6.0 * (1.0 - y / 20.0 * (1.0 - y / 42.0 * (1.0 - y / 72.0 * (1.0 - y / 110.0))))
        big = sin(x) / where(fabs(x) < 0.5, 1.0, x)
        return where(fabs(x).eq(math.inf), 0.0, where(fabs(x) < 0.5, small, big)).v
    if fn == "erfcx":  # exp(x^2) erfc(x); the asymptotic series from 25 on (where erfc underflows)
        big = where(x < 25.0, 25.0, x)
        y = 1.0 / (2.0 * big * big)
        acc, term = y.like(1.0), y.like(1.0)
        for k in range(1, 12):
            term = term * -(2.0 * k - 1.0) * y
            acc = acc + term
        near = exp(x * x) * x.fn("chlo.erfc")
        return where(x < 25.0, near, acc / (big * math.sqrt(math.pi))).v
    if fn == "ndtri":
        v = e.binary("stablehlo.subtract", e.binary("stablehlo.multiply", x.v, e.like(2, x.v)), e.like(1, x.v))
        return e.binary("stablehlo.multiply", e.unary("chlo.erf_inv", v), e.like(math.sqrt(2.0), x.v))
    if fn == "zeta":
        return _zeta(xs[0], xs[1]).v
    if fn == "polygamma":  # the sim's (ATen's) digamma and trigamma; chlo.polygamma for n >= 2
        n = xs[0]
        k = where(n >= 2.0, n, 2.0)
        lg = (k + 1.0).fn("chlo.lgamma")
        odd = fabs(k - 2.0 * (k / 2.0).fn("floor")).eq(1.0)
        big = where(odd, 1.0, -1.0 * k.like(1.0)) * exp(lg) * _zeta(k + 1.0, xs[1])
        return where(n.eq(0.0), _digamma(xs[1]), where(n.eq(1.0), _trigamma(xs[1]), big)).v
    if fn in ("igamma", "igammac"):
        return _igamma(xs[0], xs[1], fn == "igammac").v
    return _polynomial(fn, xs[0], xs[1]).v


@emits("special_unary", "special_binary")
def _emit_special(e: Emitter, op: Op, args: list[V]) -> list[V]:
    fn = op.attr("function")
    if fn not in SPECIAL_EMITTED:
        raise NotImplementedError(f"the pjrt driver has no StableHLO expansion of the special function {fn!r} "
                                  f"(IR op {op.name}); supported: {', '.join(SPECIAL_EMITTED)}")
    wide = "float64" if e.platform == "cpu" else "float32"
    xs = [e.convert(a, wide) for a in args]
    return [e.convert(_special_math(e, fn, xs), op.outputs[0].dtype)]
