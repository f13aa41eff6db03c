"""linalg_matrix_exp as ATen computes it (aten/src/ATen/native/LinearAlgebra.cpp: mexp, compute_T1..T18,
compute_T18_scale_square; Bader, Blanes, Casas 2019), so that tpu and CPU agree to a few ulp.

- n = 0: the (empty) input; n = 1: exp elementwise.
- The 1-norm (max column sum of |A|) picks the Taylor degree 1, 2, 4, 8, 12 from `_THETAS` (float32/complex64
  use the float table, everything else the double one) for a single matrix; a norm >= theta_12 (and every
  matrix of a batch of more than one, as ATen does) takes degree 18 on A / 2^s, s = max(0, ceil(log2(norm /
  theta_18))), then s squarings. The degree is data here, so a single matrix computes every candidate and
  selects; the squarings are masked steps (each matrix stops at its own s).
- The polynomials are ATen's products and linear combinations in ATen's order (`_lincomb` accumulates
  c_0 A_0 + c_1 A_1 + ... from zero, as _compute_linear_combination), with its coefficients rounded to the
  working precision the way its constexpr arithmetic does. Matmuls are float32/float64 arithmetic (ATen
  holds a NoTF32Guard; see `_mm`).
- A non-finite norm (NaN or inf in the matrix) gives a NaN matrix, as CPU does.
- Squarings are unrolled up to `MAX_SQUARINGS` (127: every finite float32 norm, and float64 norms below
  theta_18 * 2^127 ~ 1.9e38); a float64 matrix that would need more gives NaN (fail closed, never a silently
  truncated scaling).
bfloat16 and float16 compute in float32 (CPU's own bfloat16 result is inf/NaN for ordinary inputs).
"""

from __future__ import annotations

import numpy as np
import torch

from torchtpu.ops import prims as P
from torchtpu.ops.registry import lower
from torchtpu.ops.tracing import Sym

aten = torch.ops.aten

MAX_SQUARINGS = 127

_THETAS = {  # degrees 1, 2, 4, 8, 12, 18
    "float": (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02, 5.800524627688768e-01,
              1.461661507209034e+00, 3.010066362817634e+00),
    "double": (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04, 4.991228871115323e-02,
               2.996158913811580e-01, 1.090863719290036e+00),
}

_B12 = ((9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
        (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031, 0.01108844528519167989),
        (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968, 0.00610700528898058230),
        (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079, -0.00675951846863086359))

_B18 = ((0., -1.00365581030144618291e-01, -8.02924648241156932449e-03, -8.92138498045729985177e-04, 0.),
        (0., 3.97849749499645077844e-01, 1.36783778460411720168e+00, 4.98289622525382669416e-01,
         -6.37898194594723280150e-04),
        (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
         -6.98210122488052056106e-03, 3.34975017086070470649e-05),
        (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
         2.95552570429315521194e-02, -1.39180257516060693404e-05),
        (0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02, -1.40086798182036094347e-05))


def _t8_coefficients(single: bool) -> tuple[float, ...]:
    """compute_T8's constexpr scalar_t values: each rounded to scalar_t, the arithmetic between in double."""
    r = (lambda v: float(np.float32(v))) if single else float
    sqrt_177 = r(0.1330413469565007072504e+2)
    x3 = r(2. / 3.)
    x1 = r(x3 * ((1. + sqrt_177) / 88.))
    x2 = r(x3 * ((1. + sqrt_177) / 352.))
    x4 = r((-271. + 29. * sqrt_177) / (315. * x3))
    x5 = r((-11. + 11. * sqrt_177) / (1260. * x3))
    x6 = r((-99. + 11. * sqrt_177) / (5040. * x3))
    x7 = r((89. - sqrt_177) / (5040. * x3))
    y2 = r((857. - 58. * sqrt_177) / 630.)
    return x1, x2, x3, x4, x5, x6, x7, y2


BROADCAST_PRODUCT_MAX = 32  # sizes whose products run as multiply + sum (CPU's bits); larger: a float64 product


def _mm(a: Sym, b: Sym) -> Sym:
    """a @ b as multiply + sum: each product and sum rounded as CPU's small-matrix kernel does (the MXU's bf16
    passes, even six, are not float32 arithmetic, host BLAS blocks and fuses differently, and the squarings
    amplify each ulp 2^s-fold). Complex: complex products summed, as a complex gemm."""
    nd = a.ndim
    *batch, m, k = a.shape
    cols = b.shape[-1]
    if k > BROADCAST_PRODUCT_MAX:  # m*k*cols products in memory no longer pay: a float64 product rounded once
        wide = torch.complex128 if a.dtype.is_complex else torch.float64
        return P.convert(P.matmul(P.convert(a, wide), P.convert(b, wide)), a.dtype)
    full = (*batch, m, k, cols)
    prod = P.broadcast_to(P.reshape(a, (*batch, m, k, 1)), full) * \
        P.broadcast_to(P.reshape(b, (*batch, 1, k, cols)), full)
    return P.reduce(prod, "sum", (nd - 1,))


def _lincomb(mats: list[Sym], coeffs: tuple[float, ...]) -> Sym:
    acc = P.zeros_like(mats[0])
    for m, c in zip(mats, coeffs):
        acc = acc + m * P.full(c, m.shape, m.dtype)
    return acc


class _Taylor:
    """ATen's compute_T* for one working dtype: coefficients rounded to its real precision."""

    def __init__(self, dtype: torch.dtype) -> None:
        self.single = dtype in (torch.float32, torch.complex64)
        self.r = (lambda v: float(np.float32(v))) if self.single else float

    def rows(self, b: tuple[tuple[float, ...], ...]) -> list[tuple[float, ...]]:
        return [tuple(self.r(v) for v in row) for row in b]

    def t1(self, eye: Sym, a: Sym) -> Sym:
        return eye + a

    def t2(self, eye: Sym, a: Sym, a2: Sym) -> Sym:
        return eye + a + a2 * P.full(0.5, a2.shape, a2.dtype)

    def t4(self, eye: Sym, a: Sym, a2: Sym) -> Sym:
        r = self.r
        x = _mm(a2, _lincomb([eye, a, a2], (r(1 / 2.0), r(1 / 6.0), r(1 / 24.0))))
        return _lincomb([eye, a, a2, x], (1.0, 1.0, 0.0, 1.0))

    def t8(self, eye: Sym, a: Sym, a2: Sym) -> Sym:
        x1, x2, x3, x4, x5, x6, x7, y2 = _t8_coefficients(self.single)
        a4 = _mm(a2, _lincomb([a, a2], (x1, x2)))
        a8 = _mm(_lincomb([a2, a4], (x3, 1.0)), _lincomb([eye, a, a2, a4], (x4, x5, x6, x7)))
        return _lincomb([eye, a, a2, a4, a8], (1.0, 1.0, y2, 0.0, 1.0))

    def t12(self, eye: Sym, a: Sym, a2: Sym, a3: Sym) -> Sym:
        bs = [_lincomb([eye, a, a2, a3], row) for row in self.rows(_B12)]
        bs[2] = bs[2] + _mm(bs[3], bs[3])
        return bs[0] + _mm(bs[1] + bs[2], bs[2])

    def t18(self, eye: Sym, a: Sym, a2: Sym, a3: Sym) -> Sym:
        a6 = _mm(a3, a3)
        bs = [_lincomb([eye, a, a2, a3, a6], row) for row in self.rows(_B18)]
        bs[3] = bs[3] + _mm(bs[0], bs[4])
        return bs[1] + _mm(bs[2] + bs[3], bs[3])


def _per_matrix(v: Sym, like: Sym) -> Sym:
    """(B,) values broadcast over (B, n, n)."""
    return P.broadcast_to(P.reshape(v, (v.shape[0], 1, 1)), like.shape)


def _t18_scale_square(x: Sym, norm: Sym, theta: float, eye: Sym, taylor: _Taylor) -> Sym:
    real = norm.dtype
    s = P.emit1("ceil", [P.emit1("log2", [norm / P.full(theta, norm.shape, real)])])
    s = P.where(P.compare("LT", s, 0.0), P.full(0.0, s.shape, real), s)  # max(0, s); NaN stays NaN
    scale = P.emit1("exp2", [-s])
    a = x * P.convert(_per_matrix(scale, x), x.dtype)
    a2 = _mm(a, a)
    p = taylor.t18(eye, a, a2, _mm(a, a2))
    s_mat = _per_matrix(s, p)
    for k in range(MAX_SQUARINGS):
        p = P.where(P.compare("GT", s_mat, float(k)), _mm(p, p), p)
    return P.where(P.compare("GT", s_mat, float(MAX_SQUARINGS)), P.full(float("nan"), p.shape, p.dtype), p)


def mexp(x: Sym) -> Sym:
    """exp of a (B, n, n) batch, n >= 2, in float32/float64/complex64/complex128."""
    taylor = _Taylor(x.dtype)
    thetas = _THETAS["float" if taylor.single else "double"]
    b, n = x.shape[0], x.shape[-1]
    absx = P.emit1("abs", [x])
    if absx.dtype.is_complex:
        absx = P.emit1("real", [absx])
    norm = P.reduce(P.reduce(absx, "sum", (1,)), "max", (1,))  # max column sum: (B,)
    real = norm.dtype
    th = [taylor.r(t) for t in thetas]
    eye = P.broadcast_to(P.convert(P.compare("EQ", P.iota((n, n), 0), P.iota((n, n), 1)), x.dtype), x.shape)
    t18 = _t18_scale_square(x, norm, th[5], eye, taylor)
    out = t18
    if b == 1:  # ATen picks the degree per matrix only when the batch holds one (mexp_impl)
        a2 = _mm(x, x)
        candidates = (taylor.t1(eye, x), taylor.t2(eye, x, a2), taylor.t4(eye, x, a2), taylor.t8(eye, x, a2),
                      taylor.t12(eye, x, a2, _mm(x, a2)))
        for low, high, value in zip((-1.0, *th[:4]), th[:5], candidates):
            inside = P.emit1("and", [P.compare("LT", P.full(low, norm.shape, real), norm),
                                     P.compare("LE", norm, P.full(high, norm.shape, real))])
            out = P.where(_per_matrix(inside, out), value, out)
        # norm >= theta_12 takes degree 18 (ATen writes it last: at norm == theta_12 it wins over degree 12)
        out = P.where(_per_matrix(P.compare("GE", norm, P.full(th[4], norm.shape, real)), out), t18, out)
    finite = P.emit1("is_finite", [norm])
    return P.where(_per_matrix(finite, out), out, P.full(float("nan"), out.shape, out.dtype))


@lower(aten.linalg_matrix_exp.default)
def matrix_exp(self: Sym) -> Sym:
    x = self if self.dtype in (torch.float32, torch.float64, torch.complex64, torch.complex128) else \
        P.convert(self, torch.float32)
    n = x.shape[-1]
    if x.numel() == 0:
        return P.convert(x, self.dtype)
    if n == 1:
        return P.convert(P.float_unary("exponential", x), self.dtype)
    flat = P.reshape(x, (-1, n, n))
    return P.convert(P.reshape(mexp(flat), x.shape), self.dtype)
