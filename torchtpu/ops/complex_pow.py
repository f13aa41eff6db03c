"""Complex powers as ATen's CPU kernel computes them (PowKernel.cpp), for pow's lowering (ops/elementwise.py): the
IR's power takes an integer exponent of a complex base as repeated products, which overflow where CPU's
exp(y * log(x)) does not (fuzz seed 24)."""

from __future__ import annotations

from typing import Any

from torchtpu.ops import prims as P
from torchtpu.ops.tracing import Sym


def complex_pow(self: Sym, exponent: Any) -> Sym | None:
    """A complex power as ATen's CPU kernel computes it (PowKernel.cpp): exponent 0 gives 1 and 1 a copy (pow_out),
    0.5, -0.5 and -1 are sqrt, 1 / sqrt and 1 / x, 2, 3 and -2 products (x * x, x * x * x, 1 / (x * x)), anything
    else std::pow, glibc's cpow: exp(y * log(x)), y times log(x) as complex numbers (0 ** -4 is inf+nanj, (1e30 +
    0.3j) ** -4 underflows to 0). The IR's power takes integer exponents as repeated products (fuzz seed 24:
    _foreach_pow.Scalar of 1e30+0.34j ** -4 gave nan+nanj, CPU -0j)."""
    if isinstance(exponent, bool):
        return None
    dtype = P.result_dtype(self, exponent)[1]
    if not dtype.is_complex:
        return None
    x = P.convert(self, dtype)
    if isinstance(exponent, Sym):
        y = P.convert(exponent, dtype)
    else:
        if exponent == 0 or exponent == 1:
            return None  # ones and a copy: the general path's
        one = P.full(1, self.shape, dtype)
        if exponent == 0.5:
            return P.emit1("sqrt", [x])
        if exponent == -0.5:
            return P.binary("divide", one, P.emit1("sqrt", [x]))
        if exponent == -1:
            return P.binary("divide", one, x)
        if exponent in (2, 3, -2):
            square = P.binary("multiply", x, x)
            return P.binary("multiply", square, x) if exponent == 3 else \
                square if exponent == 2 else P.binary("divide", one, square)
        y = P.full(complex(exponent), self.shape, dtype)
    return P.emit1("exponential", [P.binary("multiply", y, P.emit1("log", [x]))])
