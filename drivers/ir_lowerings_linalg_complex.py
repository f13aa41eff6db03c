"""Complex linear algebra as IR lowerings over primitives (the real ones are drivers/ir_lowerings_linalg.py,
whose helpers these share): QR by complex Householder reflections with LAPACK's zlarfg convention, so both
drivers run one definition. The arithmetic is complex element-wise work and reductions, as the real code's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchtpu.drivers.ir_lowerings import _F, where
from torchtpu.drivers.ir_lowerings_linalg import (
    REAL_OF,
    _bc,
    _conj,
    _const,
    _cx,
    _eye,
    _im,
    _lead,
    _re,
    _slice,
    _sum,
    _triangle,
    column_at,
    while_array,
)

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Builder, Value


def householder(r0: _F, q0: _F, steps: int) -> tuple[_F, _F]:
    """`steps` complex Householder reflections H_j = I - tau_j v_j v_j^H (LAPACK's zlarfg: beta =
    -sign(Re alpha) |(alpha, x)| real, tau = (beta - alpha) / beta; no reflection where the column is zero below
    the diagonal and alpha is real), R <- H_j^H R and Q <- Q H_j: (Q H_0 ... H_k-1, H_k-1^H ... H_0^H R)."""
    *batch, m, n = r0.v.shape
    nb, real = len(batch), REAL_OF[r0.v.dtype]
    if steps == 0:
        return q0, r0

    def step(s: list[_F]) -> list[_F]:
        j, r, q = s
        x, at_j, below, alpha = column_at(j, r, real)
        xr, xi = _re(x), _im(x)
        sub = _sum(where(below, xr * xr + xi * xi, 0.0), (nb,))
        ar, ai = _re(alpha), _im(alpha)
        norm = (ar * ar + ai * ai + sub).fn("sqrt")
        beta = where(ar >= 0.0, -norm, norm)
        reflect = (sub > 0.0) | ai.ne(0.0)
        dr = ar - beta
        d2 = dr * dr + ai * ai
        v = where(below, x, 0.0) + where(at_j, _lead(_cx(dr, ai), below.v.shape), 0.0)
        # tau v' v'^H with v' = v / (alpha - beta) is t v v^H, t = -(alpha - beta) / (beta |alpha - beta|^2)
        den = where(reflect, beta * d2, 1.0)
        tr, ti = where(reflect, -dr / den, 0.0), where(reflect, -ai / den, 0.0)
        t, tc = _cx(tr, ti), _cx(tr, -ti)
        vb = _bc(v, r.v.shape, (*range(nb), nb))
        vhr = _sum(_bc(_conj(v), r.v.shape, (*range(nb), nb)) * r, (nb,))  # v^H R: (..., n)
        r = r - _bc(tc, r.v.shape, range(nb)) * vb * _bc(vhr, r.v.shape, (*range(nb), nb + 1))
        qshape = q.v.shape
        qv = _sum(q * _bc(v, qshape, (*range(nb), nb + 1)), (nb + 1,))  # Q v: (..., m)
        q = q - _bc(t, qshape, range(nb)) * _bc(qv, qshape, (*range(nb), nb)) \
            * _bc(_conj(v), qshape, (*range(nb), nb + 1))
        return [j + 1.0, r, q]

    j0 = _const(r0.b, 0.0, (), real)
    _, r, q = while_array([j0, r0, q0], lambda s: s[0] < float(steps), step, steps)
    return q, r


def qr(b: Builder, x_in: Value, full_matrices: bool) -> list[Value]:
    """Complex Householder QR (as LAPACK zgeqrf + zungqr): R upper triangular with a real diagonal of
    LAPACK's signs, Q (..., m, m) when `full_matrices`, else its first min(m, n) columns."""
    x = _F(b, x_in)
    *batch, m, n = x.v.shape
    k = min(m, n)
    q, r = householder(x, _eye(b, (*batch, m, m), x.v.dtype), k)
    cols = m if full_matrices else k
    return [_slice(q, (*batch, m, cols)).v, _triangle(_slice(r, (*batch, cols, n)), upper=True).v]
