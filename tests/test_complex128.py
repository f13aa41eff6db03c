"""complex128 on the tpu device: a compute dtype beside complex64, with float64 parts, exact on the simulator as
float64 is (matmuls are four float64 products, never the bf16 MXU passes). Each result is compared with CPU
PyTorch; the eager modes and torch.compile must give the same bits as plain eager."""

from __future__ import annotations

import warnings

import pytest
import torch
from torchtpu.drivers import ir
from torchtpu.sim import cost

import torchtpu
from torchtpu import dtypes
from torchtpu.ops.tracing import TORCH_TO_IR

C128 = torch.complex128
R = torch.Generator().manual_seed(128)
TIGHT = {"rtol": 1e-13, "atol": 1e-13}  # float64 rounding; complex64 (float32 parts) is ~1e-7 at best


def _c(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=C128, generator=R)


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The float64 parts' bit patterns (NaN-safe, -0.0 distinct from 0.0)."""
    return torch.view_as_real(t.resolve_conj()).contiguous().view(torch.int64) if t.is_complex() else \
        t.contiguous().view(torch.int64 if t.element_size() == 8 else torch.int32)


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(_bits(a.cpu()), _bits(b.cpu()))


def test_complex128_is_a_compute_dtype_of_every_table():
    assert C128 in dtypes.COMPUTE and TORCH_TO_IR[C128] == "complex128"
    assert "complex128" in ir.DTYPES and ir.ITEMSIZE["complex128"] == 16 == cost.dtype_bytes(C128)
    assert C128 in dtypes.FAMILIES["matmul, conv (MXU)"] and C128 in dtypes.NOTES
    assert torch.complex32 in dtypes.STORAGE and torch.float8_e4m3fnuz not in dtypes.STORAGE


def test_round_trip_is_bit_exact(tpu):
    x = torch.tensor([1 + 2j, -0.0 - 0.0j, complex("nan+infj"), 1e-310 - 1e308j, -3.5 + 0j], dtype=C128)
    for host in (x, _c(3, 4), _c(2, 3, 4).transpose(0, 2)):
        t = host.to(tpu)
        assert t.dtype == C128 and t.device.type == "tpu"
        assert _same_bits(t.cpu(), host)
    assert _same_bits(x.to(tpu, non_blocking=True).cpu(), x)
    assert _same_bits(x.to(tpu).to(torch.complex64).cpu(), x.to(torch.complex64))
    assert _same_bits(x.to(torch.complex64).to(tpu).to(C128).cpu(), x.to(torch.complex64).to(C128))
    assert _same_bits(x.real.to(tpu).to(C128).cpu(), x.real.to(C128))


def test_factories_make_complex128(tpu):
    cases = {
        "zeros": lambda d: torch.zeros(2, 3, dtype=C128, device=d),
        "ones": lambda d: torch.ones(4, dtype=C128, device=d),
        "full": lambda d: torch.full((2, 2), 1 / 3 - 2j, dtype=C128, device=d),
        "tensor": lambda d: torch.tensor([1 + 2j, 0.1 - 0.3j], dtype=C128, device=d),
        "eye": lambda d: torch.eye(3, dtype=C128, device=d),
        "zeros_like": lambda d: torch.zeros_like(torch.ones(2, dtype=C128, device=d)),
        "full_like": lambda d: torch.full_like(torch.ones(3, dtype=C128, device=d), 2.5j),
        "complex": lambda d: torch.complex(torch.tensor([0.1, 2.0], dtype=torch.float64, device=d),
                                           torch.tensor([-0.3, 1e-300], dtype=torch.float64, device=d)),
        "polar": lambda d: torch.polar(torch.tensor([2.0, 0.5], dtype=torch.float64, device=d),
                                       torch.tensor([0.3, -1.0], dtype=torch.float64, device=d)),
    }
    for name, make in cases.items():
        got, want = make(tpu), make("cpu")
        assert got.device.type == "tpu" and got.dtype == C128, name
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, msg=name)
    e = torch.empty(2, 5, dtype=C128, device=tpu)
    assert e.shape == (2, 5) and e.dtype == C128
    r = torch.randn(64, dtype=C128, device=tpu)
    assert r.dtype == C128 and bool(r.isfinite().all()) and float(r.real.std()) > 0.3


ELEMENTWISE = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - 2 * b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    "exp": lambda a, b: a.exp(), "log": lambda a, b: a.log(), "sqrt": lambda a, b: a.sqrt(),
    "abs": lambda a, b: a.abs(), "angle": lambda a, b: a.angle(), "conj_physical": lambda a, b: a.conj_physical(),
    "conj_view": lambda a, b: a.conj() * 1, "real": lambda a, b: a.real + 0, "imag": lambda a, b: a.imag + 0,
    "neg": lambda a, b: -a, "reciprocal": lambda a, b: a.reciprocal(), "rsqrt": lambda a, b: a.rsqrt(),
    "sin": lambda a, b: a.sin(), "cos": lambda a, b: a.cos(), "tanh": lambda a, b: a.tanh(),
    "pow_scalar": lambda a, b: a ** 2.5, "pow": lambda a, b: a ** b, "square": lambda a, b: a.square(),
    "sgn": lambda a, b: a.sgn(), "sigmoid": lambda a, b: a.sigmoid(), "log1p": lambda a, b: a.log1p(),
    "eq": lambda a, b: a == torch.where(a.real > 0, a, b), "ne": lambda a, b: a != b,
    "isfinite": lambda a, b: (a / (b.real > 0)).isfinite(), "where": lambda a, b: torch.where(a.real > 0, a, b),
    "mul_float64": lambda a, b: a * b.real, "add_complex64": lambda a, b: a + b.to(torch.complex64),
    "to_complex64": lambda a, b: a.to(torch.complex64), "addcmul": lambda a, b: torch.addcmul(a, a, b, value=0.5),
    "lerp": lambda a, b: torch.lerp(a, b, 0.3), "cat": lambda a, b: torch.cat([a, b], 1),
    "flip_index": lambda a, b: a.flip(0)[[0, 2]], "fft": lambda a, b: torch.fft.fft(a),
    "ifft2": lambda a, b: torch.fft.ifft2(a), "rfft": lambda a, b: torch.fft.rfft(a.real),
    "irfft": lambda a, b: torch.fft.irfft(a),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_matches_cpu(tpu, name):
    a, b = _c(4, 6), _c(4, 6)
    want = ELEMENTWISE[name](a, b)
    got = ELEMENTWISE[name](a.to(tpu), b.to(tpu))
    assert got.device.type == "tpu" and got.dtype == want.dtype, (got.dtype, want.dtype)
    torch.testing.assert_close(got.cpu(), want, **TIGHT)
    assert torchtpu.fallback_counts() == {}


@pytest.mark.parametrize("scalar", [1 + 2j, -0.5j, 2.0, 3, 1e-300 + 1e300j], ids=repr)
def test_python_scalars_promote_as_on_cpu(tpu, scalar):
    a = _c(5)
    for f in (lambda x: x * scalar, lambda x: x + scalar, lambda x: scalar / x, lambda x: x - scalar):
        want, got = f(a), f(a.to(tpu))
        assert got.dtype == want.dtype == C128
        torch.testing.assert_close(got.cpu(), want, **TIGHT)
    f = torch.ones(3, dtype=torch.float64)  # a float64 tensor and a Python complex make complex128, as on CPU
    assert (f.to(tpu) * scalar).dtype == (f * scalar).dtype
    torch.testing.assert_close((f.to(tpu) * scalar).cpu(), f * scalar, rtol=0, atol=0)


def test_real_imag_and_view_as_real_alias_the_storage(tpu):
    host = _c(3, 4)
    x = host.clone().to(tpu)
    assert x.real.dtype == torch.float64 and x.imag.dtype == torch.float64
    x.real[0] = 5.0
    x.imag[:, 1] *= -2.0
    host.real[0] = 5.0
    host.imag[:, 1] *= -2.0
    assert _same_bits(x.cpu(), host)
    r = torch.view_as_real(x)
    assert r.dtype == torch.float64 and r.shape == (3, 4, 2)
    r[1, 2, 1] = 7.25
    host[1, 2] = complex(host[1, 2].real.item(), 7.25)
    assert _same_bits(x.cpu(), host)
    pairs = torch.randn(2, 3, 2, dtype=torch.float64, generator=R)
    z = torch.view_as_complex(pairs.to(tpu))
    assert z.dtype == C128 and _same_bits(z.cpu(), torch.view_as_complex(pairs))
    z.mul_(1j)
    assert _same_bits(z.cpu(), torch.view_as_complex(pairs) * 1j)


REDUCTIONS = {
    "sum": lambda a: a.sum(), "sum_dim": lambda a: a.sum(1, keepdim=True), "mean": lambda a: a.mean(0),
    "prod": lambda a: a.prod(1), "cumsum": lambda a: a.cumsum(0), "var": lambda a: a.var(1),
    "std": lambda a: a.std(), "norm": lambda a: torch.linalg.vector_norm(a, dim=1),
    "norm_inf": lambda a: torch.linalg.vector_norm(a, float("inf")), "dot": lambda a: torch.vdot(a[0], a[1]),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_match_cpu(tpu, name):
    a = _c(5, 7)
    want, got = REDUCTIONS[name](a), REDUCTIONS[name](a.to(tpu))
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    torch.testing.assert_close(got.cpu(), want, **TIGHT)


MATMULS = {
    "mm": lambda a, b: a @ b, "bmm": lambda a, b: torch.bmm(a.reshape(2, 8, 32), torch.stack([b, b.flip(0)])),
    "einsum": lambda a, b: torch.einsum("ik,kj->ij", a, b), "mv": lambda a, b: a @ b[:, 0],
    "addmm": lambda a, b: torch.addmm(a[:, :16], a, b), "matmul_bcast": lambda a, b: a.reshape(2, 8, 32) @ b,
    "mH": lambda a, b: a @ a.mH,
}


@pytest.mark.parametrize("name", sorted(MATMULS))
def test_matmul_is_exact_as_float64(tpu, name):
    """Four float64 products: CPU's error level (~1e-15), not the bf16 MXU's (~1e-3 for complex64)."""
    a, b = _c(16, 32), _c(32, 16)
    want = MATMULS[name](a, b)
    got = MATMULS[name](a.to(tpu), b.to(tpu)).cpu()
    assert got.dtype == C128
    err = ((got - want).abs().max() / want.abs().max()).item()
    assert err < 1e-14, err
    c64 = MATMULS[name](a.to(torch.complex64).to(tpu), b.to(torch.complex64).to(tpu)).cpu()
    assert ((c64.to(C128) - want).abs().max() / want.abs().max()).item() > 100 * err  # the MXU's rounding


def _hermitian(n: int) -> torch.Tensor:
    m = _c(n, n)
    return m @ m.mH + n * torch.eye(n, dtype=C128)


def test_linalg_matches_cpu(tpu):
    a, h, rhs = _c(4, 4), _hermitian(4), _c(4, 2)
    t = {k: v.to(tpu) for k, v in {"a": a, "h": h, "rhs": rhs}.items()}
    close = {"rtol": 1e-11, "atol": 1e-11}
    for name, f in {
        "solve": lambda a, h, rhs: torch.linalg.solve(a, rhs), "det": lambda a, h, rhs: torch.linalg.det(a),
        "inv": lambda a, h, rhs: torch.linalg.inv(a), "slogdet": lambda a, h, rhs: torch.linalg.slogdet(a)[1],
        "cholesky": lambda a, h, rhs: torch.linalg.cholesky(h), "eigvalsh": lambda a, h, rhs: torch.linalg.eigvalsh(h),
        "svdvals": lambda a, h, rhs: torch.linalg.svdvals(a),
        "lu_factor": lambda a, h, rhs: torch.linalg.lu_factor(a)[0],
        "pinv": lambda a, h, rhs: torch.linalg.pinv(a), "matrix_exp": lambda a, h, rhs: torch.linalg.matrix_exp(a / 4),
    }.items():
        want, got = f(a, h, rhs), f(t["a"], t["h"], t["rhs"])
        assert got.dtype == want.dtype, name
        torch.testing.assert_close(got.cpu(), want, **close, msg=name)
    assert torchtpu.fallback_counts() == {}


def test_factorizations_reconstruct_and_match_cpu(tpu):
    a, h = _c(5, 3), _hermitian(4)
    eye3 = torch.eye(3, dtype=C128)
    close = {"rtol": 1e-11, "atol": 1e-11}
    q, r = (x.cpu() for x in torch.linalg.qr(a.to(tpu)))
    torch.testing.assert_close(q @ r, a, **close)
    torch.testing.assert_close(q.mH @ q, eye3, **close)
    assert torch.equal(r.tril(-1), torch.zeros_like(r))
    torch.testing.assert_close(r.diagonal().abs(), torch.linalg.qr(a)[1].diagonal().abs(), **close)
    w, v = (x.cpu() for x in torch.linalg.eigh(h.to(tpu)))
    assert w.dtype == torch.float64
    torch.testing.assert_close(w, torch.linalg.eigvalsh(h), **close)
    torch.testing.assert_close(v @ torch.diag(w).to(C128) @ v.mH, h, **close)
    u, s, vh = (x.cpu() for x in torch.linalg.svd(a.to(tpu), full_matrices=False))
    assert s.dtype == torch.float64
    torch.testing.assert_close(s, torch.linalg.svdvals(a), **close)
    torch.testing.assert_close(u @ torch.diag(s).to(C128) @ vh, a, **close)
    p, low, up = (x.cpu() for x in torch.linalg.lu(h.to(tpu)))
    for got, want in zip((p, low, up), torch.linalg.lu(h)):
        torch.testing.assert_close(got, want, **close)
    ew, ev = (x.cpu() for x in torch.linalg.eig(h.to(tpu)))
    assert ew.dtype == C128
    torch.testing.assert_close(h @ ev, ev * ew, **close)
    assert torchtpu.fallback_counts() == {}


def _loss(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = (x @ w).exp() / (1 + w.abs().sum())
    return (y * y.conj()).real.sum() + torch.view_as_real(w.sqrt()).sum()


def test_autograd_matches_cpu(tpu):
    x, w = _c(3, 4) * 0.3, _c(4, 2) * 0.3
    wc = w.clone().requires_grad_()
    _loss(x, wc).backward()
    wt = w.clone().to(tpu).requires_grad_()
    loss = _loss(x.to(tpu), wt)
    loss.backward()
    assert wt.grad.dtype == C128
    torch.testing.assert_close(loss.cpu(), _loss(x, w), **TIGHT)
    torch.testing.assert_close(wt.grad.cpu(), wc.grad, **TIGHT)


def _program(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    y = (a * b + 0.5j).exp() / (a.abs() + 1)
    z = (y @ b.mT).sum(1) + torch.complex(a.abs(), b.angle()).mean(1) * a.sqrt().prod(1)
    return z * z.conj_physical() - a.angle().sum(1) + torch.fft.fft(a).abs().sum(1)


def test_eager_modes_and_compile_give_the_same_bits(tpu):
    a, b = _c(4, 6).to(tpu), _c(4, 6).to(tpu)
    plain = _program(a, b)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        deferred = _program(a, b)
    assert _same_bits(deferred.cpu(), plain.cpu())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a graph the backend cannot lower warns and runs eagerly
        compiled = torch.compile(_program, backend="tpu", fullgraph=True)(a, b)
    assert compiled.device.type == "tpu" and _same_bits(compiled.cpu(), plain.cpu())
    torch.testing.assert_close(plain.cpu(), _program(a.cpu(), b.cpu()), **TIGHT)


def test_a_copy_past_the_conjugate_and_negative_keys_applies_the_bits_as_on_cpu():
    # DTensor's TP in autograd reached `_copy_from` with the Conjugate key excluded (TorchTitan's complex RoPE);
    # materializing the bit there re-entered the copy until RecursionError. CPU's copy applies the bits itself.
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.Conjugate) | torch._C.DispatchKeySet(
        torch._C.DispatchKey.Negative)
    got = {}
    for dev in ("cpu", "tpu"):
        a = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex128).to(dev).conj()
        n = torch.ops.aten._neg_view(torch.tensor([1.0, -2.0]).to(dev))
        b, m = torch.empty(2, dtype=torch.complex128, device=dev), torch.empty(2, device=dev)
        with torch._C._ExcludeDispatchKeyGuard(keys):
            b.copy_(a)
            m.copy_(n)
        got[dev] = (b.cpu(), m.cpu())
    assert torch.equal(got["tpu"][0], got["cpu"][0]) and torch.equal(got["tpu"][1], got["cpu"][1]), got
    assert torch.equal(got["cpu"][0], torch.tensor([1 - 2j, 3 + 4j], dtype=torch.complex128))
