"""How the harness decides a tpu result equals CPU's: tolerances by dtype, `compare`, and when two different results
are equally right (ties in sort/topk-like index outputs, another valid SVD/eig factorization, random draws
compared by distribution with a Kolmogorov-Smirnov statistic robust to rounding)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

# Tolerances (rtol, atol) by the dtype of the compared tensor. Integer and bool compare exactly.
# float32 runs at Precision.HIGHEST (6 bf16 passes, about fp32 accuracy); the sim's transcendental functions are
# numpy's float32 ones, which differ from ATen's vectorized (SLEEF) ones by a few ulp, and reductions sum in a
# different order: rtol 1e-5 is about 100 ulp. bfloat16 runs at DEFAULT (bf16 products are exact on the MXU):
# one bf16 ulp is 2^-8 relative, and ATen rounds some intermediates to bf16 where the sim keeps f32, so two ulp.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-5, 1e-5), torch.complex64: (1e-5, 1e-5), torch.float64: (1e-7, 1e-7),
    torch.complex128: (1e-7, 1e-7), torch.bfloat16: (1.6e-2, 1e-2), torch.float16: (2e-3, 1e-3),
}
# Gradients accumulate more terms (and chains of ops) than forward outputs.
GRAD_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-4, 1e-5), torch.complex64: (1e-4, 1e-5), torch.float64: (1e-7, 1e-7),
    torch.complex128: (1e-7, 1e-7), torch.bfloat16: (3.2e-2, 2e-2), torch.float16: (4e-3, 2e-3),
}

# --- comparing ----------------------------------------------------------------------------------------------------

def _tol(dtype: torch.dtype, grad: bool) -> tuple[float, float]:
    if dtype.is_floating_point or dtype.is_complex:
        return (GRAD_TOLERANCES if grad else TOLERANCES).get(dtype, (1e-5, 1e-5))
    return 0.0, 0.0


def compare(actual: Any, expected: Any, what: str = "output", grad: bool = False,
            metadata_only: bool = False, atol_floor: float = 0.0) -> None:
    a_flat, a_spec = tree_flatten(actual)
    e_flat, e_spec = tree_flatten(expected)
    if len(a_flat) != len(e_flat):
        raise AssertionError(f"{what}: tpu returned {len(a_flat)} leaves ({a_spec}), cpu {len(e_flat)} ({e_spec})")
    for i, (a, e) in enumerate(zip(a_flat, e_flat)):
        where = f"{what}[{i}]" if len(e_flat) > 1 else what
        if isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                raise AssertionError(f"{where}: tpu returned {type(a).__name__}, cpu a tensor")
            if a.device.type != "tpu" and e.device.type == "cpu" and e.numel() and not e.is_meta:
                raise AssertionError(f"{where}: tpu result is on {a.device}, not on tpu")
            if metadata_only:
                if a.shape != e.shape or a.dtype != e.dtype:
                    raise AssertionError(f"{where}: tpu {a.dtype}{list(a.shape)} vs cpu {e.dtype}{list(e.shape)}")
                continue
            rtol, atol = _tol(e.dtype, grad)
            if e.dtype.is_floating_point or e.dtype.is_complex:
                atol = max(atol, atol_floor)
            torch.testing.assert_close(a.detach().cpu(), e.detach(), rtol=rtol, atol=atol, equal_nan=True,
                                       check_device=False, msg=lambda m, w=where: f"{w}: {m}")
        elif isinstance(e, float) and isinstance(a, float | int):
            if not (math.isclose(a, e, rel_tol=1e-5, abs_tol=1e-5) or (math.isnan(a) and math.isnan(e))):
                raise AssertionError(f"{where}: tpu {a} vs cpu {e}")
        elif isinstance(e, complex):
            if not (abs(a - e) <= 1e-5 + 1e-5 * abs(e)):
                raise AssertionError(f"{where}: tpu {a} vs cpu {e}")
        elif a != e:
            raise AssertionError(f"{where}: tpu {a!r} vs cpu {e!r}")


def _same_values(x: torch.Tensor, i: torch.Tensor, j: torch.Tensor) -> bool:
    """Whether indices i and j pick equal elements of x along some dimension (NaNs equal)."""
    for d in range(max(x.ndim, 1)):
        xx = x if x.ndim else x.reshape(1)
        ii, jj = (i, j) if i.ndim == xx.ndim else (i.unsqueeze(d), j.unsqueeze(d))
        if ii.ndim != xx.ndim or any(a > b for k, (a, b) in enumerate(zip(ii.shape, xx.shape)) if k != d):
            continue
        try:
            src = xx[tuple(slice(0, n) if k != d else slice(None) for k, n in enumerate(ii.shape))]
            a, b = src.gather(d, ii), src.gather(d, jj)
        except (RuntimeError, IndexError):
            continue
        if bool(((a == b) | (a.isnan() & b.isnan()) if a.is_floating_point() else (a == b)).all()):
            return True
    return False


def ties_only(x: Any, actual: Any, expected: Any) -> bool:
    """Outputs equal except integer index outputs that pick different but equal elements of the input."""
    if not isinstance(x, torch.Tensor):
        return False
    a_flat, e_flat = tree_flatten(actual)[0], tree_flatten(expected)[0]
    if len(a_flat) != len(e_flat):
        return False
    x = x.detach()
    for a, e in zip(a_flat, e_flat):
        if not isinstance(e, torch.Tensor) or not isinstance(a, torch.Tensor) or a.shape != e.shape:
            return False
        a_cpu = a.detach().cpu()
        if e.dtype in (torch.int64, torch.int32) and x.dtype not in (torch.int64, torch.int32):
            if not torch.equal(a_cpu, e) and not _same_values(x, a_cpu, e.detach()):
                return False
        else:
            rtol, atol = _tol(e.dtype, False)
            try:  # values only: the fuzzer's leaves are CPU copies of tpu results (compare checks the device)
                torch.testing.assert_close(a_cpu, e.detach(), rtol=rtol, atol=atol, equal_nan=True)
            except AssertionError:
                if not (e.dtype in (torch.int64, torch.int32) and _same_values(x, a_cpu, e.detach())):
                    return False
    return True


def same_decomposition(kind: str, a: Any, actual: Any, expected: Any) -> bool:
    """Whether two factorizations of the same matrix agree where they are unique: the singular values and the
    product U diag(S) Vh (svd), or the eigenvalues and A V = V diag(L) (eig)."""
    act = [t.detach().cpu().to(torch.complex128 if t.is_complex() else torch.float64)
           for t in tree_flatten(actual)[0] if isinstance(t, torch.Tensor)]
    exp = [t.detach().to(torch.complex128 if t.is_complex() else torch.float64)
           for t in tree_flatten(expected)[0] if isinstance(t, torch.Tensor)]
    if len(act) != len(exp) or any(x.shape != y.shape for x, y in zip(act, exp)):
        return False
    if kind in ("usv", "usvh"):
        (u1, s1, v1), (u2, s2, v2) = act[:3], exp[:3]
        if not torch.allclose(s1, s2, rtol=1e-4, atol=1e-5):
            return False
        k = s1.shape[-1]

        def recon(u: torch.Tensor, s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            vh = v.mH if kind == "usv" else v
            return (u[..., :k] * s.unsqueeze(-2).to(u.dtype)) @ vh[..., :k, :]

        if u1.numel() == 0:  # compute_uv=False
            return True
        r1, r2 = recon(u1, s1, v1), recon(u2, s2, v2)
        scale = max(1.0, float(s2.abs().max()) if s2.numel() else 1.0)
        return bool(torch.allclose(r1, r2, rtol=1e-4, atol=1e-4 * scale))
    if kind == "eig":
        lam1, v1 = act[0], act[1] if len(act) > 1 else None
        lam2 = exp[0]
        key = lambda x: x.real * 1e3 + x.imag  # noqa: E731
        s1 = lam1.gather(-1, key(lam1).argsort(-1))
        s2 = lam2.gather(-1, key(lam2).argsort(-1))
        if not torch.allclose(s1, s2, rtol=1e-4, atol=1e-4):
            return False
        if v1 is None or not isinstance(a, torch.Tensor):
            return True
        m = a.detach().to(torch.complex128)
        return bool(torch.allclose(m @ v1, v1 * lam1.unsqueeze(-2), rtol=1e-3, atol=1e-3))
    return False


def _ks_statistic(a: torch.Tensor, b: torch.Tensor) -> float:
    """Two-sample Kolmogorov-Smirnov statistic (ties handled on the pooled values)."""
    a, b = a.double().sort().values, b.double().sort().values
    pooled = torch.cat([a, b]).unique()
    ca = torch.searchsorted(a, pooled, right=True).double() / max(a.numel(), 1)
    cb = torch.searchsorted(b, pooled, right=True).double() / max(b.numel(), 1)
    return float((ca - cb).abs().max()) if pooled.numel() else 0.0


def _ks_statistic_shifted(a: torch.Tensor, b: torch.Tensor, tol: float) -> float:
    """KS statistic that lets each distribution's values move by up to `tol` (Levy's metric in its step form):
    max over x of F_a(x - tol) - F_b(x) and F_b(x - tol) - F_a(x). With tol = 0 it is `_ks_statistic`."""
    a, b = a.double().sort().values, b.double().sort().values
    points = torch.cat([a, b, a + tol, b + tol]).unique()
    if points.numel() == 0:
        return 0.0

    def cdf(v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.searchsorted(v, x, right=True).double() / max(v.numel(), 1)

    return float(torch.maximum(cdf(a, points - tol) - cdf(b, points),
                               cdf(b, points - tol) - cdf(a, points)).max().clamp(min=0))


def _random_statistic(a: torch.Tensor, b: torch.Tensor, rtol: float) -> float:
    """KS statistic of tpu draws `a` against CPU draws `b`, robust to rounding when `b` is discrete.

    Some random entries have per-call means that take only a few values: multi_head_attention_forward's OpInfo
    samples saturate the softmax (one-hot attention rows), so dropout keeps or drops whole value rows and a call's
    mean is one of 2^rows sums. Both devices compute those atoms up to rounding (1e-4 relative in float32 at
    HIGHEST, an ulp of a bf16 element in bfloat16), and a plain KS statistic between two step functions whose steps
    sit a rounding error apart counts each atom's whole mass as a difference. For discrete CPU draws the statistic
    lets values move by rtol * spread; a wrong scale or mask moves them by far more and still fails."""
    atoms = b.double().unique()
    if atoms.numel() == 0 or atoms.numel() * 4 > b.numel():
        return _ks_statistic(a, b)  # (nearly) continuous: rounding moves no mass across a step
    spread = float(torch.cat([a, b]).double().abs().max())
    return _ks_statistic_shifted(a, b, rtol * max(spread, 1.0))
