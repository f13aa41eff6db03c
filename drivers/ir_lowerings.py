"""IR ops written once as lowerings over other IR ops (as JAX writes digamma over lax primitives): the Builder
expands them where they are emitted, so every driver and a real TPU run the same definition and no driver has a
kernel or emitter of its own for them. An op's record names its lowering (`define(..., lowering=...)`).

Each lowering computes in float32 (float64 for float64 operands) and converts back to the operand's dtype, as the
drivers' own kernels do for narrow floats and integers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Builder, Value


class _F:
    """A value in a lowering, with arithmetic that emits IR ops (Python numbers become constants of its shape and
    dtype); comparisons give bool values, which combine with `&`, `|` and `~`."""

    __slots__ = ("b", "v")

    def __init__(self, b: Builder, v: Value) -> None:
        self.b, self.v = b, v

    def _of(self, other: _F | float) -> Value:
        if isinstance(other, _F):
            return other.v
        return self.b.emit("constant", [], value=float(other), shape=self.v.shape, dtype=self.v.dtype)[0]

    def like(self, value: float) -> _F:
        return _F(self.b, self._of(value))

    def _op(self, name: str, *others: _F | float, **attrs: object) -> _F:
        return _F(self.b, self.b.emit(name, [self.v, *(self._of(o) for o in others)], **attrs)[0])

    def __add__(self, o: _F | float) -> _F:
        return self._op("add", o)

    __radd__ = __add__

    def __sub__(self, o: _F | float) -> _F:
        return self._op("subtract", o)

    def __rsub__(self, o: float) -> _F:
        return self.like(o)._op("subtract", self)

    def __mul__(self, o: _F | float) -> _F:
        return self._op("multiply", o)

    __rmul__ = __mul__

    def __truediv__(self, o: _F | float) -> _F:
        return self._op("divide", o)

    def __rtruediv__(self, o: float) -> _F:
        return self.like(o)._op("divide", self)

    def __neg__(self) -> _F:
        return self._op("negate")

    def __pow__(self, o: _F | float) -> _F:
        return self._op("power", o)

    def __and__(self, o: _F) -> _F:
        return self._op("and", o)

    def __or__(self, o: _F) -> _F:
        return self._op("or", o)

    def __invert__(self) -> _F:
        return self._op("not")

    def fn(self, name: str) -> _F:
        return self._op(name)

    def cmp(self, direction: str, o: _F | float) -> Value:
        return self.b.emit("compare", [self.v, self._of(o)], direction=direction)[0]

    def _c(self, direction: str, o: _F | float) -> _F:
        return _F(self.b, self.cmp(direction, o))

    def __lt__(self, o: _F | float) -> _F:
        return self._c("LT", o)

    def __le__(self, o: _F | float) -> _F:
        return self._c("LE", o)

    def __gt__(self, o: _F | float) -> _F:
        return self._c("GT", o)

    def __ge__(self, o: _F | float) -> _F:
        return self._c("GE", o)

    def eq(self, o: _F | float) -> _F:
        return self._c("EQ", o)

    def ne(self, o: _F | float) -> _F:
        return self._c("NE", o)

    def where(self, pred: Value | _F, other: _F | float) -> _F:
        """This value where `pred` holds, else `other`."""
        p = pred.v if isinstance(pred, _F) else pred
        return _F(self.b, self.b.emit("select", [p, self.v, self._of(other)])[0])


def where(c: _F, a: _F | float, b: _F | float) -> _F:
    """`a` where `c` holds, else `b` (one of them a value; numbers become constants like it)."""
    ref = a if isinstance(a, _F) else b
    if not isinstance(ref, _F):
        raise TypeError("where() needs one value operand (use x.like(c) for a constant)")
    return _F(c.b, c.b.emit("select", [c.v, ref._of(a), ref._of(b)])[0])


def exp(x: _F) -> _F:
    return x.fn("exponential")


def log(x: _F) -> _F:
    return x.fn("log")


def sqrt(x: _F) -> _F:
    return x.fn("sqrt")


def sin(x: _F) -> _F:
    return x.fn("sine")


def cos(x: _F) -> _F:
    return x.fn("cosine")


def fabs(x: _F) -> _F:
    return x.fn("abs")


def isnan(x: _F) -> _F:
    return x.ne(x)


def odd(n: _F) -> _F:
    """n (integral) is odd: |n - 2 floor(n / 2)| == 1."""
    return fabs(n - 2.0 * (n / 2.0).fn("floor")).eq(1.0)


def polevl(x: _F, coefs: Sequence[float]) -> _F:
    """Horner (Cephes' polevl): coefs[0] x^(n-1) + ... + coefs[-1]."""
    acc = x.like(coefs[0])
    for c in coefs[1:]:
        acc = acc * x + c
    return acc


def p1evl(x: _F, coefs: Sequence[float]) -> _F:
    """Horner with an implied leading 1 (Cephes' p1evl)."""
    return polevl(x, (1.0, *coefs))


def chbevl(y: _F, coefs: Sequence[float]) -> _F:
    """Cephes' Chebyshev series sum (Clenshaw): 0.5 (b0 - b2)."""
    b0, b1, b2 = y.like(coefs[0]), y.like(0.0), y.like(0.0)
    for c in coefs[1:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return 0.5 * (b0 - b2)


def loop(state: Sequence[_F], cond: Callable[[list[_F]], _F], body: Callable[[list[_F]], Sequence[_F]],
         limit: int) -> list[_F]:
    """IR op `while` (drivers/ir_ops.py): each element's `state` runs `body` while `cond` holds, at most `limit`
    times; `cond` and `body` see 0-d values (the regions), so what they need from outside travels in the state."""
    from torchtpu.drivers.ir import Builder, Region

    def region(fn: Callable[[list[_F]], Sequence[_F]]) -> Region:
        rb = Builder()
        args = [_F(rb, rb.input((), s.v.dtype)) for s in state]
        return Region(rb.finish([o.v for o in fn(args)], name="region"))

    b = state[0].b
    outs = b.emit("while", [s.v for s in state], cond=region(lambda a: [cond(a)]), body=region(body), limit=limit)
    return [_F(b, v) for v in outs]


def widen(b: Builder, x: Value) -> _F:
    """x as the dtype a lowering computes in: float64 stays, everything else float32."""
    wide = "float64" if x.dtype == "float64" else "float32"
    return _F(b, x if x.dtype == wide else b.emit("convert", [x], dtype=wide)[0])


def narrow(y: _F, dtype: str) -> list[Value]:
    """y converted back to the operand's dtype."""
    return [y.v if y.v.dtype == dtype else y.b.emit("convert", [y.v], dtype=dtype)[0]]


def digamma(b: Builder, x_in: Value) -> list[Value]:
    """psi(x), as ATen's calc_digamma: below 0 the reflection psi(x) = psi(1 - x) - pi / tan(pi r), r = x minus
    its nearest integer (exact, so that large negative x and x near a pole keep their accuracy); then
    psi(y) = psi(y + 10) - sum 1/(y + k) for k < 10 (always ten steps: no loop needed), then the asymptotic
    series at y + 10 >= 10 (Abramowitz & Stegun 6.3.18, five Bernoulli terms). psi(+-0) = -+inf and
    psi(negative integer) = nan, as torch."""
    x = widen(b, x_in)
    negative = x.cmp("LT", 0.0)
    frac = x - x.fn("trunc")
    centred = frac - frac.fn("round_nearest_even")  # in [-1/2, 1/2], exact: tan(pi r) keeps its accuracy
    reflection = math.pi / (centred * math.pi).fn("tan")
    y = (1.0 - x).where(negative, x)
    shift = y.fn("reciprocal")
    for k in range(1, 10):
        shift = shift + (y + float(k)).fn("reciprocal")
    z = y + 10.0
    f = 1.0 / (z * z)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))))
    psi = z.fn("log") - 0.5 / z - series - shift
    psi = (psi - reflection).where(negative, psi)
    pole = b.emit("and", [negative, frac.cmp("EQ", 0.0)])[0]
    psi = _F(b, x._of(math.nan)).where(pole, psi)
    at_zero = _F(b, x._of(math.inf))._op("copysign", x)._op("negate")  # +0 -> -inf, -0 -> +inf
    return narrow(at_zero.where(x.cmp("EQ", 0.0), psi), x_in.dtype)


_LANCZOS_G = 7.0
_LANCZOS = (676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def lgamma(b: Builder, x_in: Value) -> list[Value]:
    """log|Gamma(x)|, as XLA's chlo.lgamma expansion: the Lanczos approximation (g = 7, n = 9) at
    z = x - 1 from 1/2 up, and below 1/2 the reflection log(pi) - log|sin(pi r)| - lgamma(1 - x), r the distance
    of |x| to its nearest integer (exact). Poles (0, -1, -2, ...) and +-inf give +inf, as torch."""
    x = widen(b, x_in)
    reflect = x.cmp("LT", 0.5)
    z = (0.0 - x).where(reflect, x - 1.0)  # lgamma(1 - x) = lgamma(1 + z) with z = -x
    a = z._of(0.99999999999980993)
    acc = _F(b, a)
    for i, coeff in enumerate(_LANCZOS):
        acc = acc + coeff / (z + float(i + 1))
    t = z + (_LANCZOS_G + 0.5)
    log_t = math.log(_LANCZOS_G + 0.5) + (z / (_LANCZOS_G + 0.5)).fn("log_plus_one")
    log_y = (z + 0.5) * log_t - t + acc.fn("log") + 0.5 * math.log(2.0 * math.pi)
    ax = x.fn("abs")
    frac = ax - ax.fn("floor")
    reduced = (1.0 - frac).where(frac.cmp("GT", 0.5), frac)
    denom = (reduced * math.pi).fn("sine").fn("log")
    reflection = math.log(math.pi) - denom - log_y
    finite = b.emit("is_finite", [denom.v])[0]
    result = reflection.where(finite, 0.0 - denom).where(reflect, log_y)
    infinite = ax.cmp("EQ", math.inf)
    return narrow(_F(b, x._of(math.inf)).where(infinite, result), x_in.dtype)
