"""Lowerings of special functions onto the IR's `special_unary` / `special_binary`: Bessel (J, Y, I, K and
their exponentially scaled forms), Airy Ai, spherical J0, erfcx, ndtri, Hurwitz zeta, polygamma, the
regularized incomplete gamma functions and the orthogonal polynomials (Chebyshev T/U/V/W and their shifted
forms, Hermite H/He, Laguerre, Legendre)."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from typing import Any

import numpy as np
import torch

from torchtpu.ops import prims as P
from torchtpu.ops.prims import Kind
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten


def _unary(function: str) -> Any:
    def lowering(self: Sym) -> Sym:
        compute, result = P.result_dtype(self, kind=Kind.INT_TO_FLOAT)
        y = P.emit1("special_unary", [P.convert(self, compute)], function=function)
        return P.convert(y, result)

    lowering.__name__ = function
    return lowering


_UNARY = {
    aten.i0.default: "bessel_i0", aten.special_i0e.default: "bessel_i0e", aten.special_i1.default: "bessel_i1",
    aten.special_i1e.default: "bessel_i1e", aten.special_ndtri.default: "ndtri",
    aten.special_erfcx.default: "erfcx", aten.special_bessel_j0.default: "bessel_j0",
    aten.special_bessel_j1.default: "bessel_j1", aten.special_bessel_y0.default: "bessel_y0",
    aten.special_bessel_y1.default: "bessel_y1", aten.special_modified_bessel_i0.default: "bessel_i0",
    aten.special_modified_bessel_i1.default: "bessel_i1", aten.special_modified_bessel_k0.default: "bessel_k0",
    aten.special_modified_bessel_k1.default: "bessel_k1",
    aten.special_scaled_modified_bessel_k0.default: "bessel_k0e",
    aten.special_scaled_modified_bessel_k1.default: "bessel_k1e", aten.special_airy_ai.default: "airy_ai",
    aten.special_spherical_bessel_j0.default: "spherical_bessel_j0",
}
for _op, _fn in _UNARY.items():
    lower(_op)(_unary(_fn))


def _binary(function: str, a: Any, b: Any) -> Sym:
    compute, result = P.result_dtype(a, b, kind=Kind.INT_TO_FLOAT)
    x, y = P.prepare([a, b], compute)
    return P.convert(P.emit1("special_binary", [x, y], function=function), result)


def _binary_lowering(function: str) -> Any:
    def lowering(self: Any, other: Any) -> Sym:
        return _binary(function, self, other)

    lowering.__name__ = function
    return lowering


@lower(aten.special_zeta.default, aten.special_zeta.self_scalar, aten.special_zeta.other_scalar)
def zeta(self: Any, other: Any) -> Sym:
    """ATen's CPU zeta sums in acc_type (double for float32), so a float32 zeta is computed in float64 and
    rounded once: in float32 the tail terms overflow (zeta(79.3, 4) gave NaN where CPU gives 0). Its operands
    are float32 first (TensorIterator's cast to the common dtype: a Python scalar or an integer tensor is rounded
    to float32 before the kernel widens it; zeta(int64 x, -3.966) was 9e-6 off near the poles, fuzz seed 49)."""
    compute, result = P.result_dtype(self, other, kind=Kind.INT_TO_FLOAT)
    x, y = P.prepare([self, other], compute)
    if compute == torch.float32:
        x, y = P.convert(x, torch.float64), P.convert(y, torch.float64)
    return P.convert(P.emit1("special_binary", [x, y], function="zeta"), result)


lower(aten.igamma.default)(_binary_lowering("igamma"))
lower(aten.igammac.default)(_binary_lowering("igammac"))


@lower(aten.polygamma.default)
def polygamma(n: int, self: Sym) -> Sym:
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    compute, result = P.result_dtype(self, kind=Kind.INT_TO_FLOAT)
    if result == torch.float32 and n >= 2:
        return _polygamma_float(n, self)
    x = P.convert(self, compute)
    return P.convert(P.emit1("special_binary", [P.full(float(n), x.shape, compute), x], function="polygamma"),
                     result)


def _libm_float(name: str, x: float) -> float:
    """C's float function `name` (lgammaf, expf) at `x`, as ATen's float kernel calls it through std::; math's
    double function rounded to float where libm cannot be loaded."""
    try:
        fn = getattr(ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6"), name)
    except (OSError, AttributeError):
        return float(np.float32(getattr(math, name[:-1])(x)))
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return float(fn(x))


def _polygamma_float(n: int, self: Sym) -> Sym:
    """ATen's calc_polygamma<float> for n >= 2: (+-1) * std::exp(std::lgamma(float(n) + 1)) in float times
    zeta(n + 1, x), which sums in acc_type (double) and rounds to float once. In float32 throughout, polygamma
    (3, 1) was 6.493946 for CPU's 6.493939 (fuzz seed 25)."""
    factor = np.float32(_libm_float("expf", _libm_float("lgammaf", float(np.float32(n) + np.float32(1)))))
    factor = np.float32(np.float32(1.0 if n % 2 else -1.0) * factor)
    x = P.convert(P.convert(self, torch.float32), torch.float64)
    wide = P.binary("power", x, P.full(-float(n + 1), x.shape, torch.float64))
    first = P.convert(P.convert(wide, torch.float32), torch.float64)  # powf: the double power rounded to float
    z = P.emit1("special_binary", [P.full(float(n + 1), x.shape, torch.float64), x], function="zeta")
    z = P.where(P.compare("EQ", P.emit1("abs", [wide]), math.inf), z, z - wide + first)
    return P.convert(z, torch.float32) * P.full(float(factor), x.shape, torch.float32)


_POLYNOMIALS = {
    "chebyshev_polynomial_t": "chebyshev_t", "chebyshev_polynomial_u": "chebyshev_u",
    "chebyshev_polynomial_v": "chebyshev_v", "chebyshev_polynomial_w": "chebyshev_w",
    "shifted_chebyshev_polynomial_t": "shifted_chebyshev_t", "shifted_chebyshev_polynomial_u": "shifted_chebyshev_u",
    "shifted_chebyshev_polynomial_v": "shifted_chebyshev_v", "shifted_chebyshev_polynomial_w": "shifted_chebyshev_w",
    "hermite_polynomial_h": "hermite_h", "hermite_polynomial_he": "hermite_he",
    "laguerre_polynomial_l": "laguerre_l", "legendre_polynomial_p": "legendre_p",
}
for _name, _fn in _POLYNOMIALS.items():
    _packet = getattr(aten, f"special_{_name}")
    lower(_packet.default, _packet.x_scalar, _packet.n_scalar)(_binary_lowering(_fn))
