"""cholesky_inverse as LAPACK potri computes it (ops/linalg.py's lowering calls `potri`): trtri inverts the
factor's triangle, lauum forms W^H W (W W^H for upper) from the real parts of W's diagonal except the last
element (lauu2 scales the last row by the real AII: Re(w) * w), and ATen mirrors the triangle (fuzz seeds 47,
50, 52; tests/test_fuzz_silent_s48.py).
"""

from __future__ import annotations

from torchtpu.ops import prims as P
from torchtpu.ops.linalg import _diag, _eye, _h, _t, tri_solve
from torchtpu.ops.tracing import Sym


def potri(x: Sym, upper: bool) -> Sym:
    """The inverse of the Hermitian matrix whose Cholesky factor is x's lower (upper) triangle, float or complex."""
    n = x.shape[-1]
    eye = _eye(n, x.shape[:-2], x.dtype)
    if x.numel() == 0:
        return eye
    nb = x.ndim - 2
    row, col = P.iota(x.shape, nb), P.iota(x.shape, nb + 1)
    on_diag = P.compare("EQ", row, col)
    inside = P.compare("LE" if upper else "GE", row, col)
    w = _trtri_columns(x, upper)
    # trtri: the diagonal is 1 / a_jj, the other triangle stays zero
    inv_diag = P.true_divide(P.full(1, x.shape[:-1], x.dtype), _diag(x))
    w = P.where(on_diag, P.broadcast_to(P.reshape(inv_diag, (*x.shape[:-2], 1, n)), x.shape),
                P.where(inside, w, P.zeros_like(w)))
    w_last = P.slice_dim(inv_diag, nb, n - 1, n)
    if x.dtype.is_complex:
        w = P.where(on_diag, _real_part(w), w)
        w_last = _real_part(w_last) * w_last
    else:
        w_last = w_last * w_last
    # r[i, j] = sum over k >= max(i, j) of v[i, k] * conj(v[j, k]) with v = W (upper) or W^H: lauum's sums,
    # no 0 * NaN from the other triangle
    v = w if upper else _h(w)
    shape = (*x.shape, n)
    prod = P.broadcast_to(P.reshape(v, (*x.shape[:-1], 1, n)), shape) * \
        P.broadcast_to(P.reshape(_h(_t(v)), (*x.shape[:-2], 1, n, n)), shape)  # conj(v)
    i, j, k = (P.iota(shape, nb + d) for d in range(3))
    keep = P.emit1("and", [P.compare("GE", k, i), P.compare("GE", k, j)])
    r = P.reduce(P.where(keep, prod, P.zeros_like(prod)), "sum", (nb + 2,))
    if x.dtype.is_complex:
        r = P.where(on_diag, _real_part(r), r)
    last = P.emit1("and", [on_diag, P.compare("EQ", row, n - 1)])
    return P.where(last, P.broadcast_to(P.reshape(w_last, (*x.shape[:-2], 1, 1)), x.shape), r)


def _trtri_columns(x: Sym, upper: bool) -> Sym:
    """The inverse of x's triangle, column j solved on the block trtri reads for it (rows and columns from j on,
    or up to j for upper; the identity elsewhere): one solve of the whole triangle multiplies a NaN or inf of
    another block by a structural zero of the inverse (fuzz seed 50). A batch of n systems (n^3 elements)."""
    n, nb = x.shape[-1], x.ndim - 2
    shape = (*x.shape[:-2], n, n, n)  # (system j, row, column)
    j, r, c = (P.iota(shape, nb + d) for d in range(3))
    if upper:
        block = P.emit1("and", [P.compare("LE", r, j), P.compare("LE", c, j)])
    else:
        block = P.emit1("and", [P.compare("GE", r, j), P.compare("GE", c, j)])
    one = P.convert(P.compare("EQ", r, c), x.dtype)
    a = P.where(block, P.broadcast_to(P.reshape(x, (*x.shape[:-2], 1, n, n)), shape), one)
    e = P.slice_dim(P.convert(P.compare("EQ", r, j), x.dtype), nb + 2, 0, 1)  # (j, row, 1): e_j
    cols = tri_solve(a, e, lower=not upper)  # (j, row, 1): column j of the inverse
    return _t(P.reshape(cols, x.shape))


def _real_part(x: Sym) -> Sym:
    """x's real part, as x's complex dtype."""
    from torchtpu.ops.complex import make_complex, real

    return make_complex(real(x), P.zeros_like(real(x)))
