"""The iterative linear algebra as IR lowerings over primitives, so both drivers and a real TPU (which has no
LAPACK) run one definition: QR by Householder reflections, eigh by parallel (Brent-Luk round-robin) Jacobi
rotations to convergence, and the SVD by one-sided (Hestenes) Jacobi over the same rotations, its U completed
by a Householder QR.

The loops are IR op `while_array` (drivers/ir_ops.py): whole arrays carried through region bodies of any IR ops.
A Householder step or a Jacobi round touches whole rows and columns picked by masks (iota == j) or by one
index_select along the pairing, so every step is O(rows x cols) element-wise work and reductions: no
per-element loop, no matmul (the sim's float32 matmul goes through the MXU model; these updates must be float32
exact). Each lowering computes in float32 (float64 and complex operands in their own dtype). Complex takes the
same Jacobi with complex rotations (the pair's phase removed, then the real rotation of its moduli) and the
complex Householder of drivers/ir_lowerings_linalg_complex.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from torchtpu.drivers.ir_lowerings import _F, where

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Builder, Value

JACOBI_SWEEPS = 24  # the bound on Jacobi sweeps (convergence is quadratic: 6-12 sweeps in practice)
_EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52}
# CPU's LAPACK (MKL 2024.2, probed) picks a pivot column's first NaN when the matrix has more than 16 rows or
# columns; up to 16 it compares |a| > max as reference isamax, so a NaN is the pivot only as the first candidate
NAN_FIRST_ABOVE = 16
REAL_OF = {"complex64": "float32", "complex128": "float64"}  # a complex dtype's parts
COMPLEX = tuple(REAL_OF)


def _wide(b: Builder, x: Value) -> Value:
    """x in the dtype the lowerings compute in: float64 and the complex dtypes as they are, others as float32."""
    wide = x.dtype if x.dtype in ("float64", *COMPLEX) else "float32"
    return x if x.dtype == wide else b.emit("convert", [x], dtype=wide)[0]


def _re(x: _F) -> _F:
    return _F(x.b, x.b.emit("real", [x.v])[0])


def _im(x: _F) -> _F:
    return _F(x.b, x.b.emit("imag", [x.v])[0])


def _cx(re: _F, im: _F) -> _F:
    return _F(re.b, re.b.emit("complex", [re.v, im.v])[0])


def _conj(x: _F) -> _F:
    return _cx(_re(x), -_im(x))


def _is_complex(x: _F) -> bool:
    return x.v.dtype in COMPLEX


def _abs2(x: _F) -> _F:
    """|x|^2, real."""
    return _re(x) * _re(x) + _im(x) * _im(x) if _is_complex(x) else x * x


def _real_part(x: _F) -> _F:
    return _re(x) if _is_complex(x) else x


def _const(b: Builder, value: float, shape: Sequence[int], dtype: str) -> _F:
    return _F(b, b.emit("constant", [], value=value, shape=tuple(shape), dtype=dtype)[0])


def _iota(b: Builder, shape: Sequence[int], dim: int, dtype: str) -> _F:
    return _F(b, b.emit("iota", [], shape=tuple(shape), dtype=dtype, dimension=dim)[0])


def _bc(x: _F, shape: Sequence[int], dims: Sequence[int]) -> _F:
    """x broadcast to `shape`, its axes landing on `dims`."""
    if tuple(x.v.shape) == tuple(shape):
        return x
    return _F(x.b, x.b.emit("broadcast_in_dim", [x.v], shape=tuple(shape), broadcast_dimensions=tuple(dims))[0])


def _sum(x: _F, dims: Sequence[int]) -> _F:
    return _F(x.b, x.b.emit("reduce", [x.v], kind="sum", dimensions=tuple(dims))[0])


def _lead(x: _F, shape: Sequence[int]) -> _F:
    """x (its shape a prefix of `shape`) broadcast along the trailing axes."""
    return _bc(x, shape, range(len(x.v.shape)))


def _slice(x: _F, limit: Sequence[int]) -> _F:
    if tuple(limit) == tuple(x.v.shape):
        return x
    r = len(limit)
    return _F(x.b, x.b.emit("slice", [x.v], start=(0,) * r, limit=tuple(limit), strides=(1,) * r)[0])


def _eye(b: Builder, shape: Sequence[int], dtype: str) -> _F:
    r = len(shape)
    eq = _iota(b, shape, r - 2, "int32").eq(_iota(b, shape, r - 1, "int32"))
    return where(eq, _const(b, 1.0, shape, dtype), 0.0)


def _triangle(x: _F, upper: bool) -> _F:
    r = len(x.v.shape)
    rows, cols = _iota(x.b, x.v.shape, r - 2, "int32"), _iota(x.b, x.v.shape, r - 1, "int32")
    return where(rows <= cols if upper else rows >= cols, x, 0.0)


def _transpose(x: _F) -> _F:
    r = len(x.v.shape)
    perm = (*range(r - 2), r - 1, r - 2)
    return _F(x.b, x.b.emit("transpose", [x.v], permutation=perm)[0])


def while_array(state: Sequence[_F], cond: Callable[[list[_F]], _F], body: Callable[[list[_F]], Sequence[_F]],
                limit: int) -> list[_F]:
    """IR op `while_array`: `state = body(state)` while `cond(state)` (a 0-d bool) holds, at most `limit` trips;
    the regions see the state's full arrays, so what they need from outside travels in the state."""
    from torchtpu.drivers.ir import Builder, Region

    def region(fn: Callable[[list[_F]], Sequence[_F]]) -> Region:
        rb = Builder()
        args = [_F(rb, rb.input(s.v.shape, s.v.dtype)) for s in state]
        return Region(rb.finish([o.v for o in fn(args)], name="region"))

    b = state[0].b
    outs = b.emit("while_array", [s.v for s in state], cond=region(lambda a: [cond(a)]), body=region(body),
                  limit=limit)
    return [_F(b, v) for v in outs]


def column_at(j: _F, r: _F, index_dtype: str) -> tuple[_F, _F, _F, _F]:
    """Column j of r (..., m, n) as (x (..., m), the mask of row j, the mask of the rows below it, x[j])."""
    *batch, m, n = r.v.shape
    b, nb = j.b, len(batch)
    col = _iota(b, (n,), 0, index_dtype).eq(_bc(j, (n,), ()))
    row_i = _iota(b, (m,), 0, index_dtype)
    jm = _bc(j, (m,), ())
    x = _sum(where(_bc(col, r.v.shape, (nb + 1,)), r, 0.0), (nb + 1,))
    vshape = (*batch, m)
    at_j = _bc(row_i.eq(jm), vshape, (nb,))
    below = _bc(row_i > jm, vshape, (nb,))
    return x, at_j, below, _sum(where(at_j, x, 0.0), (nb,))


def _householder(r0: _F, q0: _F, steps: int) -> tuple[_F, _F]:
    """`steps` Householder reflections H_j (LAPACK's dlarfg convention: beta = -sign(alpha) |x|, no reflection
    where the column is already zero below the diagonal) applied to r0 (..., m, n) from the left and
    accumulated into q0 (..., m, m) from the right: (Q H_0 ... H_k-1, H_k-1 ... H_0 R)."""
    *batch, m, n = r0.v.shape
    dt, nb = r0.v.dtype, len(batch)
    if steps == 0:
        return q0, r0

    def step(s: list[_F]) -> list[_F]:
        j, r, q = s
        x, at_j, below, alpha = column_at(j, r, dt)
        sub = _sum(where(below, x * x, 0.0), (nb,))
        norm = (alpha * alpha + sub).fn("sqrt")
        beta = where(alpha >= 0.0, -norm, norm)
        reflect = sub > 0.0
        v = where(below, x, 0.0) + where(at_j, _lead(alpha - beta, below.v.shape), 0.0)
        vv = _sum(v * v, (nb,))
        tau = where(reflect, 2.0 / where(reflect, vv, 1.0), 0.0)
        vr = _sum(_bc(v, r.v.shape, (*range(nb), nb)) * r, (nb,))  # v^T R: (..., n)
        r = r - _bc(tau, r.v.shape, range(nb)) * _bc(v, r.v.shape, (*range(nb), nb)) \
            * _bc(vr, r.v.shape, (*range(nb), nb + 1))
        qshape = q.v.shape
        qv = _sum(q * _bc(v, qshape, (*range(nb), nb + 1)), (nb + 1,))  # Q v: (..., m)
        q = q - _bc(tau, qshape, range(nb)) * _bc(qv, qshape, (*range(nb), nb)) \
            * _bc(v, qshape, (*range(nb), nb + 1))
        return [j + 1.0, r, q]

    j0 = _const(r0.b, 0.0, (), dt)
    _, r, q = while_array([j0, r0, q0], lambda s: s[0] < float(steps), step, steps)
    return q, r


def qr(b: Builder, x_in: Value, full_matrices: bool) -> list[Value]:
    """Householder QR (as LAPACK geqrf + orgqr): R upper triangular with LAPACK's diagonal signs, Q (..., m, m)
    when `full_matrices`, else its first min(m, n) columns with R's first min(m, n) rows."""
    if x_in.dtype in COMPLEX:
        from torchtpu.drivers.ir_lowerings_linalg_complex import qr as complex_qr

        return complex_qr(b, x_in, full_matrices)
    x = _F(b, _wide(b, x_in))
    *batch, m, n = x.v.shape
    k = min(m, n)
    q, r = _householder(x, _eye(b, (*batch, m, m), x.v.dtype), k)
    cols = m if full_matrices else k
    q, r = _slice(q, (*batch, m, cols)), _triangle(_slice(r, (*batch, cols, n)), upper=True)
    return [_narrow(q, x_in.dtype), _narrow(r, x_in.dtype)]


def _narrow(y: _F, dtype: str) -> Value:
    return y.v if y.v.dtype == dtype else y.b.emit("convert", [y.v], dtype=dtype)[0]


def _index(x: _F, index: _F, dim: int) -> _F:
    return _F(x.b, x.b.emit("index_select", [x.v, index.v], dimension=dim)[0])


def _pairing(r: _F, size: int) -> tuple[_F, _F]:
    """Round r of the round-robin tournament on `size` (even) indices: each index's partner (int32) and whether it
    is the pair's first (smaller) index. Index size-1 meets r; the others a meet (2r - a) mod (size - 1)."""
    b, dt, top = r.b, r.v.dtype, float(size - 1)
    a = _iota(b, (size,), 0, dt)
    rr = _bc(r, (size,), ())
    other = (2.0 * rr - a + top).fn("floor")
    other = other - top * (other / top).fn("floor")
    partner = where(a.eq(rr), _const(b, top, (size,), dt), where(a.eq(top), rr, other))
    return _F(b, b.emit("convert", [partner.v], dtype="int32")[0]), a < partner


def _rotation(app: _F, aqq: _F, apq: _F) -> tuple[_F, _F]:
    """The Jacobi rotation (c, s) that zeroes apq of [[app, apq], [apq, aqq]] (Golub & Van Loan 8.5.2, the
    smaller angle); (1, 0) where apq is 0."""
    zero = apq.eq(0.0)
    safe = where(zero, 1.0, apq)
    tau = (aqq - app) / (2.0 * safe)
    t = where(tau >= 0.0, tau.like(1.0), -1.0) / (tau.fn("abs") + (1.0 + tau * tau).fn("sqrt"))
    t = where(tau.fn("abs") > 1e150 if app.v.dtype == "float64" else tau.fn("abs") > 1e18, 0.5 / tau, t)
    t = where(zero, 0.0, t)
    c = (1.0 + t * t).fn("rsqrt")
    return c, t * c


def _pair_values(v: _F, partner: _F, first: _F, dim: int) -> tuple[_F, _F]:
    """(v at the pair's first index, v at its second) for every index, read identically by both members."""
    other = _index(v, partner, dim)
    return where(first, v, other), where(first, other, v)


def _sorted_by(keys: _F, cols: list[_F], descending: bool) -> tuple[_F, list[_F]]:
    """keys (..., n) sorted along the last axis, and each (..., rows, n) of `cols` with its columns in that order."""
    b = keys.b
    nd = len(keys.v.shape)
    vals, idx = b.emit("sort", [keys.v], dimension=nd - 1, descending=descending, stable=True)
    out = []
    for c in cols:
        shape = c.v.shape
        index = b.emit("broadcast_in_dim", [idx], shape=shape, broadcast_dimensions=(*range(nd - 1), nd))[0]
        out.append(_F(b, b.emit("gather_axis", [c.v, index], dimension=nd)[0]))
    return _F(b, vals), out


def _coefficients(apq: _F, c: _F, sn: _F, first: _F) -> tuple[_F, _F, _F]:
    """The rotation of a pair as per-index coefficients (own, partner's along columns, partner's along rows): a
    column becomes own * itself + partner's * its partner's. Real: (c, -s | s, the same). complex: the pair's phase
    w = apq / |apq| is removed first, U = [[c, s w], [-s conj(w), c]], so the first index takes -s conj(w) and
    the second s w along columns, and the rows (U^H from the left) the conjugates."""
    if not _is_complex(apq):
        ss = where(first, -sn, sn)
        return c, ss, ss
    mag = _abs2(apq).fn("sqrt")
    nonzero = mag > 0.0
    den = where(nonzero, mag, 1.0)
    w_re, w_im = where(nonzero, _re(apq) / den, 1.0), where(nonzero, _im(apq) / den, 0.0)
    ss_re, ss_im = where(first, -sn, sn) * w_re, sn * w_im
    zero = c.like(0.0)
    return _cx(c, zero), _cx(ss_re, ss_im), _cx(ss_re, -ss_im)


def _jacobi(a: _F, v: _F, gram: Callable[[_F, _F], tuple[_F, _F]], ratio: Callable[[_F, _F, _F, _F], _F],
            scale: _F, two_sided: bool) -> tuple[_F, _F]:
    """Round-robin Jacobi: each round rotates every pair of the pairing at once (a's rows and columns when
    `two_sided`, else a's columns only) and accumulates the rotations into v's columns. `gram(a, partner)` gives
    the diagonal (..., n), real, and the entries at (i, partner(i)) (..., n) of the symmetric (Hermitian) matrix
    being diagonalised; a sweep (n - 1 rounds, every pair once) whose largest `ratio(app, aqq, |apq|, scale)` is
    below (n eps) ends the loop, as does JACOBI_SWEEPS sweeps (`scale`, (...,), travels in the loop's state)."""
    b, real = a.b, _real_of(a.v.dtype)
    size = a.v.shape[-1]
    nd = len(a.v.shape)
    nb = nd - 2
    rounds = size - 1
    bshape = (*a.v.shape[:-2], size)

    def go(s: list[_F]) -> _F:
        return (s[0] < float(JACOBI_SWEEPS * rounds)) & s[5].eq(0.0)

    def step(s: list[_F]) -> list[_F]:
        count, r, mat, vec, worst, _, sc = s
        b = count.b
        partner, first = _pairing(r, size)
        first_b = _bc(first, bshape, (nb,))
        diag, cross = gram(mat, partner)
        app, aqq = _pair_values(diag, partner, first_b, nb)
        apq, _ = _pair_values(cross, partner, first_b, nb)
        pivot = _abs2(apq).fn("sqrt") if _is_complex(apq) else apq
        worst = _maximum(worst, _F(b, b.emit("reduce", [ratio(app, aqq, pivot, sc).v], kind="max",
                                              dimensions=tuple(range(nb + 1)))[0]))
        c, sn = _rotation(app, aqq, pivot)
        cc, ss_cols, ss_rows = _coefficients(apq, c, sn, first_b)

        def along(x: _F, dim: int, ss: _F) -> _F:
            shape = x.v.shape
            dims = (*range(nb), dim)
            return x * _bc(cc, shape, dims) + _index(x, partner, dim) * _bc(ss, shape, dims)

        if two_sided:
            mat = along(mat, nb, ss_rows)
        mat, vec = along(mat, nb + 1, ss_cols), along(vec, nb + 1, ss_cols)
        nxt = r + 1.0
        wrapped = nxt.eq(float(rounds))
        done = where(wrapped & (worst <= size * _EPS[real]), count.like(1.0), 0.0)
        return [count + 1.0, where(wrapped, 0.0, nxt), mat, vec, where(wrapped, 0.0, worst), done, sc]

    zero = _const(b, 0.0, (), real)
    state = [zero, zero, a, v, zero, zero, scale]
    _, _, mat, vec, _, _, _ = while_array(state, go, step, JACOBI_SWEEPS * rounds)
    return mat, vec


def _maximum(x: _F, y: _F) -> _F:
    return x._op("maximum", y)


def _diag_and_cross(mat: _F, partner: _F) -> tuple[_F, _F]:
    """A symmetric (Hermitian) matrix's diagonal (real) and its entries A[i, partner(i)]."""
    b = mat.b
    nd = len(mat.v.shape)
    col = (*mat.v.shape[:-1], 1)
    idx = _iota(b, col, nd - 2, "int32")
    part = b.emit("broadcast_in_dim", [partner.v], shape=col, broadcast_dimensions=(nd - 2,))[0]
    diag = b.emit("gather_axis", [mat.v, idx.v], dimension=nd - 1)[0]
    cross = b.emit("gather_axis", [mat.v, part], dimension=nd - 1)[0]
    shape = mat.v.shape[:-1]
    diag = _F(b, b.emit("reshape", [diag], shape=shape)[0])
    return _real_part(diag), _F(b, b.emit("reshape", [cross], shape=shape)[0])


def _column_gram(mat: _F, partner: _F) -> tuple[_F, _F]:
    """The Gram matrix A^H A's diagonal |a_i|^2 and its entries a_i^H a_partner(i), for the columns a_i."""
    nb = len(mat.v.shape) - 2
    left = _conj(mat) if _is_complex(mat) else mat
    return _sum(_abs2(mat), (nb,)), _sum(left * _index(mat, partner, nb + 1), (nb,))


def _adjoint(x: _F) -> _F:
    return _conj(_transpose(x)) if _is_complex(x) else _transpose(x)


def eigh(b: Builder, x_in: Value, lower: bool) -> list[Value]:
    """Symmetric (Hermitian) eigendecomposition from the `lower` (else upper) triangle by round-robin Jacobi
    (the diagonal's imaginary part ignored, as LAPACK's): eigenvalues ascending, unit eigenvectors as columns."""
    x = _F(b, _wide(b, x_in))
    *batch, n, _ = x.v.shape
    dt, real = x.v.dtype, _real_of(x_in.dtype)
    if 0 in x.v.shape:
        return [_narrow(_const(b, 0.0, (*batch, n), _real_of(dt)), real), _narrow(x, x_in.dtype)]
    diag = _diag_part(x)
    if _is_complex(diag):
        diag = _cx(_re(diag), _re(diag).like(0.0))
    strict = _triangle(x, upper=not lower) - _diag_part(x)
    sym = strict + _adjoint(strict) + diag
    size = n + (n % 2)
    if size != n:
        sym = _F(b, b.emit("pad", [sym.v], value=0.0, low=(0,) * len(x.v.shape),
                          high=(*(0,) * len(batch), 1, 1), interior=(0,) * len(x.v.shape))[0])
    scale = _sum(_abs2(sym), range(len(batch), len(batch) + 2)).fn("sqrt")
    mat, vec = _jacobi(sym, _eye(b, (*batch, size, size), dt), _diag_and_cross, _absolute_ratio, scale,
                       two_sided=True)
    w, _ = _diag_and_cross(mat, _iota(b, (size,), 0, "int32"))
    w, vec = _slice(w, (*batch, n)), _slice(vec, (*batch, n, n))
    w, (vec,) = _sorted_by(w, [vec], descending=False)
    return [_narrow(w, real), _narrow(vec, x_in.dtype)]


def _absolute_ratio(app: _F, aqq: _F, apq: _F, scale: _F) -> _F:
    """|apq| relative to the matrix's Frobenius norm `scale` (...,): eigh's convergence measure."""
    s = _lead(scale, apq.v.shape)
    return where(s > 0.0, apq.fn("abs") / where(s > 0.0, s, 1.0), 0.0)


def _relative_ratio(app: _F, aqq: _F, apq: _F, scale: _F) -> _F:
    """|a_p . a_q| / (|a_p| |a_q|): one-sided Jacobi's measure (the columns' cosine)."""
    den = (app * aqq).fn("sqrt")
    return where(den > 0.0, apq.fn("abs") / where(den > 0.0, den, 1.0), 0.0)


def _diag_part(x: _F) -> _F:
    return where(_eye(x.b, x.v.shape, x.v.dtype).ne(0.0), x, 0.0)


def _real_of(dtype: str) -> str:
    return REAL_OF.get(dtype, dtype)


def _qr_steps(mat: _F, q0: _F, steps: int) -> tuple[_F, _F]:
    if _is_complex(mat):
        from torchtpu.drivers.ir_lowerings_linalg_complex import householder

        return householder(mat, q0, steps)
    return _householder(mat, q0, steps)


def svd(b: Builder, x_in: Value, full_matrices: bool) -> list[Value]:
    """One-sided (Hestenes) Jacobi on the columns of the tall one of A and A^H: the columns' rotations give V,
    their norms the singular values (descending), and U is the Householder QR of the rotated columns (so it is
    orthonormal, and completed to (m, m) when `full_matrices`, even where A is rank-deficient), its columns'
    signs matching the columns' (R's diagonal is real for complex64 too)."""
    x = _F(b, _wide(b, x_in))
    *batch, m, n = x.v.shape
    dt, nb = x.v.dtype, len(batch)
    k = min(m, n)
    real = _real_of(x_in.dtype)
    if 0 in x.v.shape:
        u = _eye(b, (*batch, m, m if full_matrices else k), dt)
        vh = _eye(b, (*batch, n if full_matrices else k, n), dt)
        return [_narrow(u, x_in.dtype), _narrow(_const(b, 0.0, (*batch, k), _real_of(dt)), real),
                _narrow(vh, x_in.dtype)]
    wide = m < n
    a = _adjoint(x) if wide else x
    rows, cols = (n, m) if wide else (m, n)
    size = cols + (cols % 2)
    if size != cols:
        a = _F(b, b.emit("pad", [a.v], value=0.0, low=(0,) * (nb + 2), high=(*(0,) * nb, 0, 1),
                         interior=(0,) * (nb + 2))[0])
    mat, vec = _jacobi(a, _eye(b, (*batch, size, size), dt), _column_gram, _relative_ratio,
                       _const(b, 0.0, batch, _real_of(dt)), two_sided=False)
    norms2, _ = _column_gram(mat, _iota(b, (size,), 0, "int32"))
    sigma, (mat, vec) = _sorted_by(norms2.fn("sqrt"), [mat, vec], descending=True)
    sigma, mat = _slice(sigma, (*batch, cols)), _slice(mat, (*batch, rows, cols))
    vec = _slice(vec, (*batch, cols, cols))
    q, r = _qr_steps(mat, _eye(b, (*batch, rows, rows), dt), cols)
    diag, _ = _diag_and_cross(_slice(r, (*batch, cols, cols)), _iota(b, (cols,), 0, "int32"))
    sign = where(diag < 0.0, diag.like(-1.0), 1.0)
    sign_full = _F(b, b.emit("pad", [sign.v], value=1.0, low=(0,) * (nb + 1), high=(*(0,) * nb, rows - cols),
                             interior=(0,) * (nb + 1))[0]) if rows > cols else sign
    if _is_complex(q):
        sign_full = _cx(sign_full, sign_full.like(0.0))
    q = q * _bc(sign_full, q.v.shape, (*range(nb), nb + 1))
    left = q if (full_matrices or rows == cols) else _slice(q, (*batch, rows, cols))  # the tall side's factor
    right = vec  # (cols, cols): the short side's factor, complete already
    if wide:
        u, vh = right, _adjoint(left)
    else:
        u, vh = left, _adjoint(right)
    return [_narrow(u, x_in.dtype), _narrow(sigma, real), _narrow(vh, x_in.dtype)]


def lu(b: Builder, x_in: Value) -> list[Value]:
    """LU with partial pivoting (as LAPACK getrf, unblocked): packed L (unit, below the diagonal) and U, 1-based
    int32 pivots (row j was swapped with row piv[j] - 1 at step j) and int32 info (the 1-based first zero pivot,
    else 0; a zero pivot's column is left unscaled, the update still applied). Pivots by the largest |a| (|re| +
    |im| for complex, as LAPACK), the first of equals; a NaN only where it is the column's first candidate, or,
    above NAN_FIRST_ABOVE rows or columns, the column's first NaN (MKL's kernel). inf/NaN spread as in getrf: the
    update runs for zero multipliers (0 * inf = NaN), a complex pivot with an inf/NaN part gives NaN multipliers."""
    x = _F(b, _wide(b, x_in))
    *batch, m, n = x.v.shape
    k, nb, dt = min(m, n), len(batch), x.v.dtype
    real = _real_of(dt)
    if k == 0 or 0 in batch:
        return [_narrow(x, x_in.dtype), b.emit("constant", [], value=0, shape=(*batch, k), dtype="int32")[0],
                b.emit("constant", [], value=0, shape=tuple(batch), dtype="int32")[0]]

    def step(s: list[_F]) -> list[_F]:
        j, a, piv, info = s
        bb = j.b
        shape = a.v.shape
        rows = _iota(bb, shape, nb, real)
        cols = _iota(bb, shape, nb + 1, real)
        jj = _bc(j, shape, ())
        mag = a.fn("abs") if dt not in COMPLEX else (  # LAPACK's izamax: |re| + |im|
            _F(bb, bb.emit("real", [a.v])[0]).fn("abs") + _F(bb, bb.emit("imag", [a.v])[0]).fn("abs"))
        cand = where(cols.eq(jj) & (rows >= jj), mag, -1.0)
        best = _colmax(cand, nb)  # |a[i, j]| for rows i >= j, else -1: (..., m)
        i = _iota(bb, (*batch, m), nb, real)
        jv = _bc(j, (*batch, m), ())
        is_nan = best.ne(best)
        p = _argmax(where(is_nan, best.like(-1.0), best), nb, real)
        if max(m, n) > NAN_FIRST_ABOVE:  # MKL's kernel for larger matrices: the column's first NaN is the pivot
            has_nan = _F(bb, bb.emit("reduce", [where(is_nan, best.like(1.0), 0.0).v], kind="max",
                                     dimensions=(nb,))[0])
            p = where(has_nan > 0.0, _argmax(where(is_nan, best.like(1.0), 0.0), nb, real), p)
        else:  # isamax: a NaN never compares greater, so it is the pivot only where it is the first candidate
            first = _sum(where(i.eq(jv), best, 0.0), (nb,))
            p = where(first.ne(first), _bc(j, tuple(batch), ()), p)
        pv = _lead(p, (*batch, m))
        swap = where(i.eq(jv), pv, where(i.eq(pv), jv, i))
        index = bb.emit("broadcast_in_dim", [bb.emit("convert", [swap.v], dtype="int32")[0]], shape=shape,
                        broadcast_dimensions=tuple(range(nb + 1)))[0]
        a = _F(bb, bb.emit("gather_axis", [a.v, index], dimension=nb)[0])
        row_j = _sum(where(rows.eq(jj), a, 0.0), (nb,))  # (..., n)
        col_j = _sum(where(cols.eq(jj), a, 0.0), (nb + 1,))  # (..., m)
        ajj = _sum(where(_bc(_iota(bb, (n,), 0, real).eq(_bc(j, (n,), ())), (*batch, n), (nb,)), row_j, 0.0),
                   (nb,))
        zero = ajj.eq(0.0)
        # getf2/getrf2: a zero pivot's column is left unscaled, and the rank-1 update of the trailing rows runs
        # whatever the pivot and multipliers (0 * inf and inf - inf give NaN there, as in LAPACK/MKL)
        zero_m = _lead(zero, (*batch, m))
        l_ = where(zero_m, col_j, col_j / _lead(where(zero, ajj.like(1.0), ajj), (*batch, m)))
        if dt in COMPLEX:  # zgetrf scales by MKL's 1/pivot, which is NaN+NaNj for a pivot with an inf or NaN part
            size = _re(ajj).fn("abs") + _im(ajj).fn("abs")
            nan = _real_part(ajj).like(float("nan"))
            l_ = where(_lead(size < float("inf"), (*batch, m)), l_, _lead(_cx(nan, nan), (*batch, m)))
        lb = _bc(l_, shape, range(nb + 1))
        below = rows > jj
        update = below & (cols > jj)
        a = where(update, a - lb * _bc(row_j, shape, (*range(nb), nb + 1)), a)
        a = where(below & cols.eq(jj), lb, a)
        kk = _bc(_iota(bb, (k,), 0, real).eq(_bc(j, (k,), ())), (*batch, k), (nb,))
        piv = where(kk, _lead(p + 1.0, (*batch, k)), piv)
        info = where(zero & info.eq(0.0), _lead(j + 1.0, tuple(batch)), info)
        return [j + 1.0, a, piv, info]

    j0 = _const(b, 0.0, (), real)
    state = [j0, x, _const(b, 0.0, (*batch, k), real), _const(b, 0.0, tuple(batch), real)]
    _, a, piv, info = while_array(state, lambda s: s[0] < float(k), step, k)
    return [_narrow(a, x_in.dtype), b.emit("convert", [piv.v], dtype="int32")[0],
            b.emit("convert", [info.v], dtype="int32")[0]]


def _argmax(x: _F, nb: int, dtype: str) -> _F:
    """The first index of the largest entry along axis nb, in `dtype`."""
    am = x.b.emit("argreduce", [x.v], kind="max", dimension=nb)[0]
    return _F(x.b, x.b.emit("convert", [am], dtype=dtype)[0])


def _colmax(cand: _F, nb: int) -> _F:
    """The largest of each row's entries along the last axis: (..., m, n) -> (..., m)."""
    return _F(cand.b, cand.b.emit("reduce", [cand.v], kind="max", dimensions=(nb + 1,))[0])
