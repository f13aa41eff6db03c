"""Linear algebra against CPU, second part (issue 17): cholesky with upper=True reads the upper triangle (as LAPACK's
potrf 'U'), the column-major layouts of the LAPACK-style results (geqrf's reflectors, which ormqr's test asserts),
ATen's argument checks the schema fuzzer found missing (linalg_cross, linalg_eig, linalg_lstsq,
linalg_solve_triangular, geqrf, slogdet), and the out= resize warning and dtype words; in every eager mode, and
compiled where the call reaches a graph."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _non_symmetric(dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    b = torch.randn(2, 4, 4, dtype=dtype, generator=g)
    a = b @ b.mH + 4 * torch.eye(4, dtype=dtype)
    a[:, 0, 3] += 5.0  # the two triangles now differ: upper=True must read the upper one
    a[:, 3, 0] -= 1.0
    return a


CHOLESKY: dict[str, Callable[[torch.Tensor, bool], torch.Tensor]] = {
    "linalg.cholesky": lambda a, upper: torch.linalg.cholesky(a, upper=upper),
    "linalg.cholesky_ex": lambda a, upper: torch.linalg.cholesky_ex(a, upper=upper).L,
    "cholesky": lambda a, upper: torch.cholesky(a, upper=upper),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
@pytest.mark.parametrize("name", list(CHOLESKY))
def test_cholesky_reads_the_triangle_cpu_reads(mode: str, dtype: torch.dtype, name: str) -> None:
    a = _non_symmetric(dtype)
    for upper in (False, True):
        want = CHOLESKY[name](a, upper)
        with torch.tpu.eager_mode(mode):
            got = CHOLESKY[name](a.to("tpu"), upper).cpu()
        torch.testing.assert_close(got, want)


def test_cholesky_upper_compiled() -> None:
    a = _non_symmetric(torch.float64)
    fn = torch.compile(lambda x: torch.linalg.cholesky(x, upper=True), backend="tpu")
    torch.testing.assert_close(fn(a.to("tpu")).cpu(), torch.linalg.cholesky(a, upper=True))


LAYOUTS: dict[str, Callable[[torch.Tensor], Any]] = {
    "geqrf": lambda a: torch.geqrf(a)[0],
    "qr Q": lambda a: torch.linalg.qr(a).Q,
    "qr R": lambda a: torch.linalg.qr(a).R,
    "householder_product": lambda a: torch.linalg.householder_product(a, torch.geqrf(a)[1]),
    "ormqr": lambda a: torch.ormqr(*torch.geqrf(a), a),
    "lu_factor": lambda a: torch.linalg.lu_factor(a).LU,
    "cholesky": lambda a: torch.linalg.cholesky(a[..., :3, :] @ a[..., :3, :].mT + torch.eye(3, device=a.device)),
    "eigh": lambda a: torch.linalg.eigh(a.mT @ a).eigenvectors,
    "svd U": lambda a: torch.linalg.svd(a, full_matrices=False).U,
    "inv": lambda a: torch.linalg.inv(a[..., :3, :]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_lapack_results_are_column_major_as_on_cpu(mode: str, name: str) -> None:
    a = torch.randn(2, 5, 3, dtype=torch.float64)
    want = LAYOUTS[name](a)
    with torch.tpu.eager_mode(mode):
        got = LAYOUTS[name](a.to("tpu"))
        assert got.stride() == want.stride()
        if name in ("eigh", "svd U"):  # vectors up to sign
            got, want = got.abs(), want.abs()
        torch.testing.assert_close(got.cpu(), want)
        assert LAYOUTS[name](a.to("tpu")).stride() == want.stride()  # served again (launch cache)


def test_ormqr_of_geqrf_reflectors_as_pytorchs_test() -> None:
    """test_linalg's test_ormqr: the reflectors' mT is contiguous, and Q @ C matches ormqr (float64)."""
    a = torch.randn(2, 5, 2, dtype=torch.float64).to("tpu")
    reflectors, tau = torch.geqrf(a)
    assert reflectors.mT.is_contiguous()
    q = torch.linalg.qr(a, mode="complete").Q
    c = torch.randn(2, 5, 2, dtype=torch.float64).to("tpu")
    torch.testing.assert_close(torch.ormqr(reflectors, tau, c).cpu(), (q.cpu() @ c.cpu()))
