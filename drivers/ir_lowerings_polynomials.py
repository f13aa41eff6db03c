"""The orthogonal polynomials of a tensor degree n as IR lowerings: Chebyshev T, U, V, W and their shifted
forms, Hermite H and He, Laguerre L, Legendre P, with ATen's recurrences and closed forms (ATen/native/Math.h).

The degree is data, so the three-term recurrence is IR op `while` (ir_lowerings.py `loop`): each element runs
its own n - 1 steps. n is truncated toward zero (ATen's int64 cast; NaN, inf and |n| >= 2^63 become x86's
INT64_MIN); n < 0 gives 0, n = 0 gives 1, whatever x (NaN included). Degrees
above POLY_LIMIT, where the recurrence would run, give NaN (fail closed) instead of a loop of a million trips.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from torchtpu.drivers.ir_lowerings import _F, cos, fabs, loop, narrow, odd, sin, where, widen

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Builder, Value

POLY_LIMIT = 1 << 20
INT64_BOUND = float(1 << 63)

Step = Callable[[_F, _F, _F, _F], _F]  # (x, k, q_(k-1), q_k) -> q_(k+1)


def _recurrence(x: _F, n: _F, used: _F, first: _F, nxt: Step) -> _F:
    """q_n from q_0 = 1, q_1 = `first`, q_(k+1) = nxt(x, k, q_(k-1), q_k) for k = 1 .. n-1, where `used` (and
    n >= 1); elsewhere `first`."""
    deg = where(used & (n >= 1.0) & (n <= float(POLY_LIMIT)), n, 0.0)

    def more(s: list[_F]) -> _F:
        return s[2] < s[1]

    def step(s: list[_F]) -> list[_F]:
        px, pn, k, p, q = s
        return [px, pn, k + 1.0, q, nxt(px, k, p, q)]

    return loop([x, deg, x.like(1.0), x.like(1.0), first], more, step, POLY_LIMIT)[4]


# ATen switches from the recurrence to the trigonometric form inside (-1, 1) above these degrees
# (Math.h: T, U, V, W; the shifted forms have their own)
_CUTOFF = {False: (6.0, 8.0, 8.0, 8.0), True: (6.0, 6.0, 6.0, 4.0)}


def _chebyshev(x: _F, n: _F, kind: int, shifted: bool = False) -> _F:
    """T (0), U (1), V (2), W (3) at x (the shifted form's 2x - 1 when `shifted`): closed forms at |x| = 1 and
    above `_CUTOFF` inside (-1, 1), with ATen's fallbacks where the trigonometric form's denominator is 0 (U)
    or its half angle rounds to 0 (V, W); the recurrence elsewhere."""
    is_odd = odd(n)
    pos = x > 0.0
    two_n1 = n + n + 1.0
    parity1 = where(~is_odd, x.like(1.0), -1.0)  # (-1)^n
    parity_2n1 = where(~is_odd, two_n1, -two_n1)  # (-1)^n (2n + 1)
    if kind == 0:
        at1 = where(pos, 1.0, parity1)
    elif kind == 1:
        at1 = where(pos | ~is_odd, n + 1.0, -(n + 1.0))
    elif kind == 2:
        at1 = where(pos, 1.0, parity_2n1)
    else:
        at1 = where(pos, two_n1, parity1)
    inside = (fabs(x) < 1.0) & (n > _CUTOFF[shifted][kind])
    th = where(inside, x, 0.5).fn("acos")
    if kind == 0:
        trig = cos(n * th)
    elif kind == 1:
        st = sin(th)
        trig = where(st.ne(0.0), sin((n + 1.0) * th) / st, (n + 1.0) * cos((n + 1.0) * th) / x)
    elif kind == 2:
        half = th / 2.0
        trig = where(sin(half).ne(1.0), cos((n + 0.5) * th) / cos(half), parity_2n1)
    else:
        half = th / 2.0
        flat = parity1 if shifted else where(pos, two_n1, parity1)
        trig = where(cos(half).ne(1.0), sin((n + 0.5) * th) / sin(half), flat)
    first = (x, x + x, x + x - 1.0, x + x + 1.0)[kind]
    rec = _recurrence(x, n, ~inside & fabs(x).ne(1.0), first, lambda px, k, p, q: _fma(px + px, q, -p))
    v = where(n.eq(0.0), 1.0, rec)
    v = where(inside, trig, v)
    v = where(fabs(x).eq(1.0), at1, v)
    return where(n < 0.0, 0.0, v)


def _fma(a: _F, b: _F, c: _F) -> _F:
    """a * b + c rounded once, as CPU's compiled recurrence (the compiler contracts (x + x) * q - p into an FMA:
    fuzz seed 46, T_10(-1.0224) 4.1944442 where separate rounding gave 4.1944466); float32 through float64 (the
    product is exact there), float64 unfused (no wider type)."""
    if a.v.dtype != "float32":
        return a * b + c

    def conv(v: _F, dtype: str) -> _F:
        return _F(v.b, v.b.emit("convert", [v.v], dtype=dtype)[0])

    return conv(conv(a, "float64") * conv(b, "float64") + conv(c, "float64"), "float32")


def _limited(n: _F, v: _F) -> _F:
    return where(n > float(POLY_LIMIT), math.nan, v)


def polynomial(fn: str, x: _F, nf: _F) -> _F:
    # ATen casts n to int64 (static_cast) and checks nothing else: a NaN x gives 0 for n < 0 and 1 for n = 0
    # (NaN elsewhere, as the recurrence does); a NaN, infinite or out-of-range n converts (on x86, CPU's
    # reference) to INT64_MIN, so the result is 0
    valid = (nf >= -INT64_BOUND) & (nf < INT64_BOUND)
    n = where(valid, nf.fn("trunc"), -1.0)
    if fn.startswith("shifted_chebyshev_"):
        xs = x + x - 1.0
        v = _chebyshev(xs, n, "tuvw".index(fn[-1]), shifted=True)
        v = where((fabs(xs) < 1.0) | fabs(xs).eq(1.0), v, _limited(n, v))
    elif fn.startswith("chebyshev_"):
        v = _chebyshev(x, n, "tuvw".index(fn[-1]))
        v = where((fabs(x) < 1.0) | fabs(x).eq(1.0), v, _limited(n, v))
    else:
        if fn == "hermite_h":
            rec = _recurrence(x, n, n >= 1.0, x + x, lambda px, k, p, q: _fma(px + px, q, -(2.0 * k * p)))
        elif fn == "hermite_he":
            rec = _recurrence(x, n, n >= 1.0, x, lambda px, k, p, q: _fma(px, q, -(k * p)))
        elif fn == "laguerre_l":
            rec = _recurrence(x, n, n >= 1.0, 1.0 - x,
                              lambda px, k, p, q: ((2.0 * k + 1.0 - px) * q - k * p) / (k + 1.0))
            rec = where(x.eq(0.0), 1.0, _limited(n, rec))  # ATen returns 1 at x = 0 before any loop
        else:  # legendre_p
            rec = _recurrence(x, n, n >= 1.0, x, lambda px, k, p, q: ((2.0 * k + 1.0) * px * q - k * p) / (k + 1.0))
            rec = where(fabs(x).eq(1.0), where((x > 0.0) | ~odd(n), x.like(1.0), -1.0), _limited(n, rec))
        if fn.startswith("hermite"):
            rec = _limited(n, rec)
        v = where(n < 0.0, 0.0, where(n.eq(0.0), 1.0, rec))
    return v


NAMES = ("chebyshev_t", "chebyshev_u", "chebyshev_v", "chebyshev_w", "shifted_chebyshev_t", "shifted_chebyshev_u",
         "shifted_chebyshev_v", "shifted_chebyshev_w", "hermite_h", "hermite_he", "laguerre_l", "legendre_p")


def lower(b: Builder, x_in: Value, n_in: Value, function: str) -> list[Value]:
    """p_n(x) of the family `function`, in float32 (float64 for float64 operands), back in x's dtype."""
    return narrow(polynomial(function, widen(b, x_in), widen(b, n_in)), x_in.dtype)
