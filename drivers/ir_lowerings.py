"""IR ops written once as lowerings over other IR ops (as JAX writes digamma over lax primitives): the Builder
expands them where they are emitted, so every driver and a real TPU run the same definition and no driver has a
kernel or emitter of its own for them. An op's record names its lowering (`define(..., lowering=...)`).

Each lowering computes in float32 (float64 for float64 operands) and converts back to the operand's dtype, as the
drivers' own kernels do for narrow floats and integers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Builder, Value


class _F:
    """A float value in a lowering, with arithmetic that emits IR ops (Python numbers become constants)."""

    __slots__ = ("b", "v")

    def __init__(self, b: Builder, v: Value) -> None:
        self.b, self.v = b, v

    def _of(self, other: _F | float) -> Value:
        if isinstance(other, _F):
            return other.v
        return self.b.emit("constant", [], value=float(other), shape=self.v.shape, dtype=self.v.dtype)[0]

    def _op(self, name: str, *others: _F | float, **attrs: object) -> _F:
        return _F(self.b, self.b.emit(name, [self.v, *(self._of(o) for o in others)], **attrs)[0])

    def __add__(self, o: _F | float) -> _F:
        return self._op("add", o)

    __radd__ = __add__

    def __sub__(self, o: _F | float) -> _F:
        return self._op("subtract", o)

    def __rsub__(self, o: float) -> _F:
        return _F(self.b, self._of(o))._op("subtract", self)

    def __mul__(self, o: _F | float) -> _F:
        return self._op("multiply", o)

    __rmul__ = __mul__

    def __truediv__(self, o: _F | float) -> _F:
        return self._op("divide", o)

    def __rtruediv__(self, o: float) -> _F:
        return _F(self.b, self._of(o))._op("divide", self)

    def fn(self, name: str) -> _F:
        return self._op(name)

    def cmp(self, direction: str, o: _F | float) -> Value:
        return self.b.emit("compare", [self.v, self._of(o)], direction=direction)[0]

    def where(self, pred: Value, other: _F | float) -> _F:
        """This value where `pred` holds, else `other`."""
        return _F(self.b, self.b.emit("select", [pred, self.v, self._of(other)])[0])


def _widen(b: Builder, x: Value) -> _F:
    wide = "float64" if x.dtype == "float64" else "float32"
    return _F(b, x if x.dtype == wide else b.emit("convert", [x], dtype=wide)[0])


def _narrow(b: Builder, y: _F, dtype: str) -> list[Value]:
    return [y.v if y.v.dtype == dtype else b.emit("convert", [y.v], dtype=dtype)[0]]


def digamma(b: Builder, x_in: Value) -> list[Value]:
    """psi(x), as ATen's calc_digamma: below 0 the reflection psi(x) = psi(1 - x) - pi / tan(pi r), r = x minus
    its nearest integer (exact, so that large negative x and x near a pole keep their accuracy); then
    psi(y) = psi(y + 10) - sum 1/(y + k) for k < 10 (always ten steps: no loop needed), then the asymptotic
    series at y + 10 >= 10 (Abramowitz & Stegun 6.3.18, five Bernoulli terms). psi(+-0) = -+inf and
    psi(negative integer) = nan, as torch."""
    x = _widen(b, x_in)
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
    return _narrow(b, at_zero.where(x.cmp("EQ", 0.0), psi), x_in.dtype)


_LANCZOS_G = 7.0
_LANCZOS = (676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def lgamma(b: Builder, x_in: Value) -> list[Value]:
    """log|Gamma(x)|, as XLA's chlo.lgamma expansion: the Lanczos approximation (g = 7, n = 9) at
    z = x - 1 from 1/2 up, and below 1/2 the reflection log(pi) - log|sin(pi r)| - lgamma(1 - x), r the distance
    of |x| to its nearest integer (exact). Poles (0, -1, -2, ...) and +-inf give +inf, as torch."""
    x = _widen(b, x_in)
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
    return _narrow(b, _F(b, x._of(math.inf)).where(infinite, result), x_in.dtype)
