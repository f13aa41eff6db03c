"""qr, eigh and svd, written once as IR lowerings over primitives (drivers/ir_lowerings_linalg.py, IR op
`while_array`), against torch CPU in float32, float64 and complex64: reconstruction (A = QR, A = V diag(w) V^T,
A = U diag(s) V^H), orthogonality, values (R with LAPACK's signs, eigenvalues ascending, singular values
descending), over batched, tall, wide, square, odd, rank-deficient, ill-conditioned and 0-size inputs, on the sim
and on pjrt(cpu); through torch on the tpu device with gradients equal to CPU's."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim.driver import SimDriver

EPS = {"float32": 1.2e-7, "float64": 2.3e-16}
SHAPES = [(4, 4), (5, 3), (3, 5), (2, 6, 4), (2, 3, 7), (1, 1), (7, 7), (1, 4), (4, 1)]


def _matrices(dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    low_rank = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 5))  # rank 2
    u, _, vt = np.linalg.svd(rng.standard_normal((6, 6)))
    ill = (u * np.logspace(0, -5 if dtype == "float32" else -12, 6)) @ vt  # condition number 1e5 / 1e12
    zero_col = rng.standard_normal((5, 4))
    zero_col[:, 1] = 0
    return [*out, low_rank.astype(dtype), ill.astype(dtype), zero_col.astype(dtype), np.zeros((3, 3), dtype)]


def _run(driver, program, inputs) -> list[np.ndarray]:
    outs = [np.empty(v.shape, v.dtype) for v in program.outputs]
    driver.execute(driver.compile(program), [a.copy() for a in inputs], outs)
    return outs


def _program(xs: list[np.ndarray]) -> tuple:
    """One program: qr (reduced and complete), svd (reduced and full) of each x, eigh of each square x + x^T."""
    b = Builder()
    outs = []
    for x in xs:
        v = b.input(x.shape, str(x.dtype))
        for full in (False, True):
            outs += b.emit("qr", [v], full_matrices=full)
            outs += b.emit("svd", [v], full_matrices=full)
    syms = [x + np.swapaxes(x, -1, -2) for x in xs if x.shape[-1] == x.shape[-2]]
    for s in syms:
        v = b.input(s.shape, str(s.dtype))
        outs += b.emit("eigh", [v], lower=True)
        outs += b.emit("eigh", [v], lower=False)
    return b.finish(outs), [*xs, *syms]


def _h(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


def _close(got: np.ndarray, want: np.ndarray, tol: float, what: str) -> None:
    err = np.abs(got.astype(np.complex128) - want).max(initial=0.0)
    assert err <= tol, f"{what}: max error {err:.3g} > {tol:.3g}"


def _check_all(got: list[np.ndarray], xs: list[np.ndarray], dtype: str) -> None:
    it = iter(got)
    for x in xs:
        x64 = x.astype(np.float64)
        m, n = x.shape[-2:]
        scale = max(np.abs(x64).max(initial=0.0), 1.0)
        tol = 30 * max(m, n) * EPS[dtype] * scale
        for full in (False, True):
            q, r = next(it), next(it)
            what = f"qr {x.shape} {dtype} full={full}"
            k = m if full else min(m, n)
            assert q.shape == (*x.shape[:-2], m, k) and r.shape == (*x.shape[:-2], k, n), what
            _close(q @ r, x64, tol, what + " A = QR")
            _close(_h(q) @ q, np.eye(k), tol, what + " Q^T Q = I")
            _close(r, np.triu(r), 0.0, what + " R upper")
            want_r = torch.linalg.qr(torch.from_numpy(x64), mode="complete" if full else "reduced").R.numpy()
            if np.linalg.matrix_rank(x64.reshape(-1, m, n)).min(initial=min(m, n)) == min(m, n):
                _close(r, want_r, tol * 10, what + " R vs torch")  # full rank: R is unique given LAPACK's signs
            u, s, vh = next(it), next(it), next(it)
            what = f"svd {x.shape} {dtype} full={full}"
            kk = min(m, n)
            _close(s, torch.linalg.svdvals(torch.from_numpy(x64)).numpy(), tol, what + " values vs torch")
            assert np.all(np.diff(s, axis=-1) <= 0), what + " descending"
            _close((u[..., :kk] * s[..., None, :]) @ vh[..., :kk, :], x64, tol, what + " A = U S V^H")
            _close(_h(u) @ u, np.eye(u.shape[-1]), tol, what + " U^T U = I")
            _close(vh @ _h(vh), np.eye(vh.shape[-2]), tol, what + " V^H V = I")
    for x in xs:
        if x.shape[-1] != x.shape[-2]:
            continue
        sym = (x + _h(x)).astype(np.float64)
        n = x.shape[-1]
        tol = 30 * n * EPS[dtype] * max(np.abs(sym).max(initial=0.0), 1.0)
        for lower in (True, False):
            w, v = next(it), next(it)
            what = f"eigh {x.shape} {dtype} lower={lower}"
            _close(w, torch.linalg.eigvalsh(torch.from_numpy(sym)).numpy(), tol, what + " values vs torch")
            _close((v * w[..., None, :]) @ _h(v), sym, tol, what + " A = V W V^T")
            _close(_h(v) @ v, np.eye(n), tol, what + " V^T V = I")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sim_matches_torch_cpu(dtype: str):
    xs = _matrices(dtype)
    program, inputs = _program(xs)
    _check_all(_run(SimDriver(), program, inputs), xs, dtype)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="the pjrt driver needs jax")
def test_pjrt_matches_torch_cpu_and_the_sim():
    from torchtpu.drivers.pjrt.driver import PjrtDriver

    xs = _matrices("float32")[:6] + _matrices("float32")[-4:]
    program, inputs = _program(xs)
    got = _run(PjrtDriver("cpu"), program, inputs)
    _check_all(got, xs, "float32")
    want = _run(SimDriver(), program, inputs)
    # the same definition: equal up to rounding where the result is unique (values; the reduced QR of a full-rank
    # input; completions of rank-deficient or full factors are any orthonormal basis and may differ)
    unique = [i * 10 + j for i in range(6) for j in (0, 1, 3, 8)]
    unique += [len(xs) * 10 + 2 * e for e in range(sum(x.shape[-1] == x.shape[-2] for x in xs) * 2)]
    for i in unique:
        np.testing.assert_allclose(got[i], want[i], rtol=1e-4, atol=1e-4, err_msg=f"pjrt vs sim, output {i}")


def test_zero_size():
    b = Builder()
    shapes = [(0, 3), (3, 0), (0, 0), (0, 2, 2)]
    outs = []
    for s in shapes:
        v = b.input(s, "float32")
        outs += b.emit("qr", [v], full_matrices=True) + b.emit("svd", [v], full_matrices=True)
    v = b.input((0, 0), "float32")
    outs += b.emit("eigh", [v], lower=True)
    got = _run(SimDriver(), b.finish(outs), [np.zeros(s, np.float32) for s in [*shapes, (0, 0)]])
    for k, s in enumerate(shapes):
        want = torch.linalg.qr(torch.zeros(s), mode="complete")
        assert got[5 * k].shape == want.Q.shape and np.array_equal(got[5 * k], want.Q.numpy())
        assert got[5 * k + 1].shape == want.R.shape


def test_the_loops_are_not_unrolled():
    """The expansion's size does not grow with n: one `while_array` per factorisation."""
    sizes = []
    for n in (4, 64):
        b = Builder()
        v = b.input((n, n), "float32")
        program = b.finish(b.emit("svd", [v], full_matrices=False) + b.emit("eigh", [v], lower=True))
        sizes.append(len(program.ops))
        assert sum(op.name == "while_array" for op in program.ops) == 3  # svd: Jacobi + QR; eigh: Jacobi
    assert sizes[0] == sizes[1]


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 6, 4), (2, 3, 7), (1, 1)])
@pytest.mark.parametrize("full", [False, True])
def test_complex_qr_equals_cpu(shape: tuple, full: bool):
    """complex64 QR (zlarfg's convention) gives torch CPU's Q and R entry for entry, R's diagonal real."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype("complex64")
    b = Builder()
    v = b.input(shape, "complex64")
    program = b.finish(b.emit("qr", [v], full_matrices=full))
    q, r = _run(SimDriver(), program, [x])
    if importlib.util.find_spec("jax") is not None:
        from torchtpu.drivers.pjrt.driver import PjrtDriver

        for got, sim in zip(_run(PjrtDriver("cpu"), program, [x]), (q, r)):
            _close(got, sim, 1e-5, "pjrt vs sim")
    want = torch.linalg.qr(torch.from_numpy(x), mode="complete" if full else "reduced")
    assert q.shape == want.Q.shape and r.shape == want.R.shape
    _close(q, want.Q.numpy(), 1e-5, "Q")
    _close(r, want.R.numpy(), 1e-5, "R")
    _close(q @ r, x, 1e-5, "QR")
    assert np.abs(np.diagonal(r, axis1=-2, axis2=-1).imag).max() < 1e-6


def _adjoint(a: np.ndarray) -> np.ndarray:
    return np.conj(_h(a))


COMPLEX_SHAPES = [(4, 4), (5, 3), (3, 5), (2, 6, 4), (2, 3, 7), (1, 1), (1, 4), (4, 1), (5, 5)]


def _complex_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    out = [(rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype("complex64") for s in COMPLEX_SHAPES]
    low = (rng.standard_normal((6, 2)) + 1j * rng.standard_normal((6, 2))) @ rng.standard_normal((2, 5))
    unitary, _ = np.linalg.qr(rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4)))
    repeated = unitary @ np.diag([1.0, 1.0, 2.0, 2.0]) @ _adjoint(unitary)  # two doubled eigenvalues
    nearly_diagonal = np.diag([1.0, 2, 3, 4]) + 1e-3j * np.triu(np.ones((4, 4)), 1)
    return [*out, low.astype("complex64"), repeated.astype("complex64"), nearly_diagonal.astype("complex64"),
            np.eye(3, dtype="complex64") * 3, np.zeros((3, 3), "complex64")]


def _complex_program(xs: list[np.ndarray]):
    b = Builder()
    outs = []
    for x in xs:
        v = b.input(x.shape, "complex64")
        for full in (False, True):
            outs += b.emit("svd", [v], full_matrices=full)
        if x.shape[-1] == x.shape[-2]:
            outs += b.emit("eigh", [v], lower=True) + b.emit("eigh", [v], lower=False)
    return b.finish(outs)


def _check_complex(got: list[np.ndarray], xs: list[np.ndarray]) -> None:
    it = iter(got)
    for x in xs:
        x128 = x.astype(np.complex128)
        m, n = x.shape[-2:]
        tol = 60 * max(m, n) * EPS["float32"] * max(np.abs(x128).max(initial=0.0), 1.0)
        for full in (False, True):
            u, s, vh = next(it), next(it), next(it)
            what = f"complex svd {x.shape} full={full}"
            k = min(m, n)
            assert u.dtype == vh.dtype == np.complex64 and s.dtype == np.float32, what
            assert u.shape[-1] == (m if full else k) and vh.shape[-2] == (n if full else k), what
            _close(s, torch.linalg.svdvals(torch.from_numpy(x128)).numpy(), tol, what + " values vs torch")
            _close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], x128, tol, what + " A = U S V^H")
            _close(_adjoint(u) @ u, np.eye(u.shape[-1]), tol, what + " U^H U = I")
            _close(vh @ _adjoint(vh), np.eye(vh.shape[-2]), tol, what + " V^H V = I")
        if m != n:
            continue
        for lower in (True, False):
            w, v = next(it), next(it)
            what = f"complex eigh {x.shape} lower={lower}"
            # LAPACK reads one triangle and takes the diagonal's real part: the Hermitian matrix it decomposes
            tri = np.tril(x128, -1) if lower else np.triu(x128, 1)
            herm = tri + _adjoint(tri) + np.real(np.diagonal(x128, axis1=-2, axis2=-1))[..., None] * np.eye(n)
            want = torch.linalg.eigvalsh(torch.from_numpy(x128), UPLO="L" if lower else "U").numpy()
            assert w.dtype == np.float32 and v.dtype == np.complex64, what
            _close(w, want, tol, what + " values vs torch")
            _close((v * w[..., None, :]) @ _adjoint(v), herm, tol, what + " A = V W V^H")
            _close(_adjoint(v) @ v, np.eye(n), tol, what + " V^H V = I")


def test_complex_eigh_and_svd_equal_cpu_on_both_drivers():
    """complex64 eigh (Hermitian, from either triangle) and svd by the complex Jacobi: torch CPU's eigenvalues
    and singular values, unitary factors that reconstruct A, over tall, wide, batched, rank-deficient, repeated-
    eigenvalue and nearly diagonal inputs; pjrt(cpu) runs the same definition to the same values."""
    xs = _complex_inputs()
    program = _complex_program(xs)
    sim = _run(SimDriver(), program, xs)
    _check_complex(sim, xs)
    if importlib.util.find_spec("jax") is not None:
        from torchtpu.drivers.pjrt.driver import PjrtDriver

        got = _run(PjrtDriver("cpu"), program, xs)
        _check_complex(got, xs)
        for p, s in zip(got, sim):
            if p.dtype == np.float32:  # the values are unique; the factors up to phases
                np.testing.assert_allclose(p, s, rtol=1e-4, atol=1e-4)


def test_complex_gradients_equal_cpu_at_highest():
    import torchtpu  # noqa: F401

    g = torch.Generator().manual_seed(0)
    a = torch.randn(4, 4, dtype=torch.complex64, generator=g)
    herm, b = a + a.mH, torch.randn(5, 3, dtype=torch.complex64, generator=g)

    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        w, v = torch.linalg.eigh(x)
        u, s, vh = torch.linalg.svd(y, full_matrices=False)
        # invariant under each column's phase
        return (w * w).sum() + ((v.abs() ** 2) @ w).sum() + s.sum() \
            + (u @ torch.diag_embed(s).to(u.dtype) @ vh).abs().pow(2).sum()

    grads = []
    with torch.tpu.precision("HIGHEST"):
        for dev in ("cpu", "tpu"):
            x, y = herm.clone().to(dev).requires_grad_(), b.clone().to(dev).requires_grad_()
            out = loss(x, y)
            out.backward()
            grads.append((out.detach().cpu(), x.grad.cpu(), y.grad.cpu()))
    for c, t in zip(*grads):
        torch.testing.assert_close(t, c, rtol=2e-5, atol=2e-5)


def test_through_torch_with_gradients_equal_to_cpu():
    import torchtpu  # noqa: F401

    torch.manual_seed(0)
    a = torch.randn(2, 5, 3, dtype=torch.float64)
    s = torch.randn(4, 4, dtype=torch.float64)
    s = s + s.T

    def loss(x: torch.Tensor, sym: torch.Tensor) -> torch.Tensor:
        q, r = torch.linalg.qr(x)
        w, v = torch.linalg.eigh(sym)
        u, sv, vh = torch.linalg.svd(x, full_matrices=False)
        # gauge-invariant functions of the factors (signs of columns cancel)
        return (q @ r).sum() + (r.diagonal(dim1=-2, dim2=-1) ** 2).sum() + w.sum() + (w * w).sum() \
            + ((v * v) @ w).sum() + sv.sum() + (u @ torch.diag_embed(sv) @ vh).pow(2).sum()

    grads = []
    for dev in ("cpu", "tpu"):
        x, sym = a.clone().to(dev).requires_grad_(), s.clone().to(dev).requires_grad_()
        out = loss(x, sym)
        out.backward()
        grads.append((out.detach().cpu(), x.grad.cpu(), sym.grad.cpu()))
    for c, t in zip(*grads):
        torch.testing.assert_close(t, c, rtol=1e-8, atol=1e-8)
    for dev_a in (torch.randn(3, 6), torch.randn(6, 6)):
        got = torch.linalg.svdvals(dev_a.to("tpu")).cpu()
        torch.testing.assert_close(got, torch.linalg.svdvals(dev_a), rtol=1e-5, atol=1e-5)


def _lu_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    singular = rng.standard_normal((4, 4)).astype(np.float32)
    singular[:, 1] = 0
    shapes = [(4, 4), (5, 3), (3, 5), (2, 4, 4), (1, 1)]
    cplx = (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))).astype(np.complex64)
    return [*(rng.standard_normal(s).astype(np.float32) for s in shapes), singular, rng.standard_normal((6, 6)), cplx,
            np.zeros((3, 3), np.float32), np.zeros((0, 3), np.float32), np.zeros((2, 0, 0), np.float32)]


def test_lu_equals_torch_cpu_factors_pivots_and_info():
    xs = _lu_inputs()
    b = Builder()
    outs = []
    for x in xs:
        outs += b.emit("lu", [b.input(x.shape, str(x.dtype))])
    got = _run(SimDriver(), b.finish(outs), xs)
    for k, x in enumerate(xs):
        lu, piv, info = torch.linalg.lu_factor_ex(torch.from_numpy(x))
        what = f"lu {x.shape} {x.dtype}"
        _close(got[3 * k], lu.numpy(), 1e-5 if x.dtype != np.float64 else 1e-12, what)
        assert np.array_equal(got[3 * k + 1], piv.numpy()) and got[3 * k + 1].dtype == np.int32, what
        assert np.array_equal(got[3 * k + 2], info.numpy()), what
