"""logcumsumexp of a complex tensor as ATen's CPU kernel computes it: a sequential scan along the dimension in
acc_type (complex128 for complex64), `cum = _log_add_exp_helper(x[i], cum)` from `cum = -inf + 0j`.

The helper orders the two operands by real part (a NaN in either part of either gives NaN in both) and returns
`log1p(exp(min - max)) + max`, c10's complex log1p, so the imaginary part is the larger operand's plus a
principal angle at each step: it is not reduced to (-pi, pi], and a logarithm of the complex cumulative sum would
land on another branch. Both operands with a real part of -inf give `min` (its imaginary part), of +inf
`log(exp(min) + exp(max))`. The scan is unrolled (one step per element along the dimension); tpu gave the real
part only (the imaginary part dropped, fuzz seed 26)."""

from __future__ import annotations

import math

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.tracing import Sym

UNROLL_LIMIT = 2048  # steps; a longer dimension is refused rather than traced into a program this long

_Parts = tuple[Sym, Sym]


def _isnan(x: Sym) -> Sym:
    return P.compare("NE", x, x)


def _isinf(x: Sym) -> Sym:
    return P.compare("EQ", P.emit1("abs", [x]), math.inf)


def _pick(cond: Sym, a: _Parts, b: _Parts) -> _Parts:
    return P.where(cond, a[0], b[0]), P.where(cond, a[1], b[1])


def _exp(z: _Parts, real_inf: bool) -> _Parts:
    """C's cexp: (e^a cos b, e^a sin b); an imaginary part 0 stays itself, and (real_inf) an infinite real part
    with a non-finite imaginary part keeps an infinite real part."""
    a, b = z
    ea = P.emit1("exponential", [a])
    re = ea * P.emit1("cosine", [b])
    if real_inf:
        re = P.where(P.emit1("is_finite", [b]), re, P.full(math.inf, b.shape, b.dtype))
    im = P.where(P.compare("EQ", b, 0), b, ea * P.emit1("sine", [b]))
    return re, im


def _log1p(w: _Parts) -> _Parts:
    """c10::complex's log1p: (0.5 * log1p(x (2 + x) + y^2) below |w| 0.5, else log(hypot(x + 1, y)); atan2(y, x+1))."""
    x, y = w
    theta = P.emit1("atan2", [y, x + 1.0])
    small = P.compare("LT", P.emit1("hypot", [x, y]), 0.5)
    r = x * (x + 2.0) + y * y
    near = P.where(P.compare("EQ", r, 0), x, P.emit1("log_plus_one", [r]) * 0.5)
    far = P.emit1("log", [P.emit1("hypot", [x + 1.0, y])])
    return P.where(small, near, far), theta


def _step(x: _Parts, cum: _Parts) -> _Parts:
    """_log_add_exp_helper(x, cum) (ATen's argument order: the element first)."""
    cum_nan = P.emit1("or", [_isnan(cum[0]), _isnan(cum[1])])
    x_nan = P.emit1("or", [_isnan(x[0]), _isnan(x[1])])
    x_lower = P.compare("LT", x[0], cum[0])
    lo, hi = _pick(x_lower, x, cum), _pick(x_lower, cum, x)
    both_inf = P.emit1("and", [_isinf(lo[0]), P.compare("EQ", lo[0], hi[0])])
    # +inf real parts: log(exp(min) + exp(max))
    e1, e2 = _exp(lo, True), _exp(hi, True)
    s = (e1[0] + e2[0], e1[1] + e2[1])
    inf_sum = P.emit1("log", [P.emit1("hypot", [s[0], s[1]])]), P.emit1("atan2", [s[1], s[0]])
    inf_case = _pick(P.compare("LT", lo[0], 0), lo, inf_sum)
    d = lo[0] - hi[0], lo[1] - hi[1]
    w = _exp(d, False)
    minus_inf = P.compare("EQ", d[0], -math.inf)  # exp(-inf + iy) is 0 whatever y (C's cexp)
    w = P.where(minus_inf, P.zeros_like(w[0]), w[0]), P.where(minus_inf, P.zeros_like(w[1]), w[1])
    lg = _log1p(w)
    general = lg[0] + hi[0], lg[1] + hi[1]
    out = _pick(both_inf, inf_case, general)
    nan = P.full(math.nan, out[0].shape, out[0].dtype)
    return _pick(P.emit1("or", [cum_nan, x_nan]), (nan, nan), out)


def logcumsumexp(x: Sym, d: int) -> Sym:
    """ATen's logcumsumexp of complex `x` along dim `d` (canonical; x has at least one dim of size > 0)."""
    n = x.shape[d]
    if n > UNROLL_LIMIT:
        raise NotImplementedError(f"logcumsumexp of a complex tensor along a dimension of {n} elements: tpu scans "
                                  f"it step by step as CPU does, up to {UNROLL_LIMIT} elements")
    wide = torch.complex128
    part = P.COMPLEX_PART[wide]
    z = P.convert(x, wide)
    re, im = P.emit1("real", [z]), P.emit1("imag", [z])
    shape = list(x.shape)
    shape[d] = 1
    cum: _Parts = (P.full(-math.inf, shape, part), P.full(0.0, shape, part))
    outs = []
    for i in range(n):
        cum = _step((P.slice_dim(re, d, i, i + 1), P.slice_dim(im, d, i, i + 1)), cum)
        outs.append(P.convert(P.emit1("complex", [cum[0], cum[1]]), x.dtype))
    return outs[0] if n == 1 else P.concat(outs, d)
