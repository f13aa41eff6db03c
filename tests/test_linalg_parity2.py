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


def _raised(fn: Callable[[], Any]) -> tuple[type, str]:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the class and words are what is compared
        return type(exc), str(exc)
    return type(None), ""


T = torch.ones
BAD: dict[str, Callable[[str], Any]] = {  # each raises on CPU; the fuzzer's findings and ATen's checks
    "geqrf 1-d": lambda d: torch.geqrf(T(3, device=d)),
    "cross dtypes": lambda d: torch.linalg.cross(T(3, dtype=torch.uint8, device=d),
                                                 T(3, dtype=torch.bfloat16, device=d)),
    "cross float/double": lambda d: torch.linalg.cross(T(3, device=d), T(3, dtype=torch.float64, device=d)),
    "cross length": lambda d: torch.linalg.cross(T(4, device=d), T(4, device=d)),
    "eig bool": lambda d: torch.linalg.eig(T(1, 1, 1, dtype=torch.bool, device=d)),
    "eig long": lambda d: torch.linalg.eig(T(2, 2, dtype=torch.int64, device=d)),
    "lstsq dtypes": lambda d: torch.linalg.lstsq(T(4, 4, device=d), T(4, 4, dtype=torch.bfloat16, device=d)),
    "lstsq 1-d": lambda d: torch.linalg.lstsq(T(1, dtype=torch.int8, device=d), T(3, dtype=torch.int8, device=d)),
    "lstsq rows": lambda d: torch.linalg.lstsq(T(3, 3, device=d), T(4, device=d)),
    "lstsq rows 2-d": lambda d: torch.linalg.lstsq(T(3, 3, device=d), T(4, 3, device=d)),
    "lstsq ranks": lambda d: torch.linalg.lstsq(T(3, 3, device=d), T(3, 3, 3, 3, device=d)),
    "lstsq int": lambda d: torch.linalg.lstsq(T(3, 3, dtype=torch.int32, device=d),
                                              T(3, 3, dtype=torch.int32, device=d)),
    "lstsq driver": lambda d: torch.linalg.lstsq(T(3, 3, device=d), T(3, 3, device=d), driver="foo"),
    "solve_triangular 3x5": lambda d: torch.linalg.solve_triangular(T(0, 3, 5, device=d), T(0, 3, 5, device=d),
                                                                     upper=False),
    "solve_triangular A 1-d": lambda d: torch.linalg.solve_triangular(T(3, device=d), T(3, 3, device=d), upper=False),
    "solve_triangular B 1-d": lambda d: torch.linalg.solve_triangular(T(3, 3, device=d), T(3, device=d), upper=False),
    "solve_triangular AX=B": lambda d: torch.linalg.solve_triangular(T(3, 3, device=d), T(4, 3, device=d), upper=False),
    "solve_triangular XA=B": lambda d: torch.linalg.solve_triangular(T(3, 3, device=d), T(3, 4, device=d), upper=False,
                                                                      left=False),
    "triangular_solve square": lambda d: torch.triangular_solve(T(3, 3, device=d), T(3, 4, device=d)),
    "triangular_solve dtypes": lambda d: torch.triangular_solve(T(3, 2, device=d), T(3, 3, dtype=torch.float64,
                                                                                      device=d)),
    "triangular_solve b 1-d": lambda d: torch.triangular_solve(T(3, device=d), T(3, 3, device=d)),
    "slogdet half": lambda d: torch.linalg.slogdet(T(3, 3, dtype=torch.half, device=d)),
    "householder_product 1-d": lambda d: torch.linalg.householder_product(T(3, device=d), T(1, device=d)),
    "householder_product tau": lambda d: torch.linalg.householder_product(T(3, 3, device=d), T(4, device=d)),
    "householder_product wide": lambda d: torch.linalg.householder_product(T(2, 3, device=d), T(1, device=d)),
    "householder_product dtypes": lambda d: torch.linalg.householder_product(T(3, 2, device=d),
                                                                             T(2, dtype=torch.float64, device=d)),
    "householder_product batch": lambda d: torch.linalg.householder_product(T(2, 3, 2, device=d), T(3, 1, device=d)),
    "ormqr 1-d": lambda d: torch.ormqr(T(10, device=d), T(2, device=d), T(2, device=d)),
    "ormqr other 1-d": lambda d: torch.ormqr(T(2, 2, device=d), T(2, device=d), T(2, device=d)),
    "ormqr tau": lambda d: torch.ormqr(T(10, 6, device=d), T(20, device=d), T(10, 6, device=d)),
    "ormqr rows": lambda d: torch.ormqr(T(6, 6, device=d), T(5, device=d), T(5, 5, device=d)),
    "ormqr tau batch": lambda d: torch.ormqr(T(1, 2, 2, device=d), T(2, 2, device=d), T(1, 2, 2, device=d)),
    "ormqr other batch": lambda d: torch.ormqr(T(1, 2, 2, device=d), T(1, 2, device=d), T(2, 2, 2, device=d)),
    "ormqr dtypes": lambda d: torch.ormqr(T(6, 4, device=d), T(4, dtype=torch.float64, device=d),
                                          T(6, 3, dtype=torch.float64, device=d)),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(BAD))
def test_aten_checks_as_cpu(mode: str, name: str) -> None:
    want = _raised(lambda: BAD[name]("cpu"))
    assert want[0] is not type(None)
    with torch.tpu.eager_mode(mode):
        got = _raised(lambda: BAD[name]("tpu"))
    assert got == want


def _spd() -> torch.Tensor:
    a = torch.randn(3, 3, dtype=torch.float64)
    return a @ a.T + 3 * torch.eye(3, dtype=torch.float64)


OUT_CALLS: dict[str, Callable[[torch.Tensor, torch.Tensor], Any]] = {
    "linalg.cholesky": lambda a, o: torch.linalg.cholesky(a, out=o),
    "cholesky_inverse": lambda a, o: torch.cholesky_inverse(a, out=o),
    "linalg.inv": lambda a, o: torch.linalg.inv(a, out=o),
    "linalg.eigh": lambda a, o: torch.linalg.eigh(a, out=(o, torch.empty_like(o))),
    "linalg.slogdet": lambda a, o: torch.linalg.slogdet(a, out=(o, torch.empty_like(o))),
    "add": lambda a, o: torch.add(a, 1, out=o),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(OUT_CALLS))
def test_out_resize_warning_as_cpu(mode: str, name: str) -> None:
    """ATen's resize_output warns once per out= tensor with elements and another shape; never for an empty one."""
    import warnings

    a = _spd()
    counts = {}
    for device in ("cpu", "tpu"):
        with torch.tpu.eager_mode(mode), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = a.to(device)
            OUT_CALLS[name](x, torch.empty(2, dtype=a.dtype, device=device))  # resized: warns
            OUT_CALLS[name](x, torch.empty(0, dtype=a.dtype, device=device))  # empty: no warning
        counts[device] = [str(w.message).split(" (Triggered internally")[0] for w in caught  # CPU names its file
                          if "was resized" in str(w.message)]
    assert sorted(counts["tpu"]) == sorted(counts["cpu"])  # (eigh: CPU resizes the eigenvectors first)
    assert counts["cpu"]


OUT_DTYPE: dict[str, Callable[[str], Any]] = {  # ATen's words for an out= tensor of a dtype it refuses
    "cholesky_inverse": lambda d: torch.cholesky_inverse(T(3, 3, device=d), out=T(0, dtype=torch.int32, device=d)),
    "eig values": lambda d: torch.linalg.eig(T(3, 3, device=d), out=(T(0, dtype=torch.float32, device=d),
                                                                     T(0, dtype=torch.complex64, device=d))),
    "householder_product": lambda d: torch.linalg.householder_product(T(3, 3, device=d), T(3, device=d),
                                                                       out=T(0, dtype=torch.int32, device=d)),
    "inv": lambda d: torch.linalg.inv(T(3, 3, device=d), out=T(0, dtype=torch.int32, device=d)),
    "cholesky": lambda d: torch.linalg.cholesky(torch.eye(3, device=d), out=T(0, dtype=torch.int32, device=d)),
    "triangular_solve": lambda d: torch.triangular_solve(T(3, 3, device=d), T(3, 3, device=d),
                                                         out=(T(0, dtype=torch.int32, device=d), T(0, device=d))),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(OUT_DTYPE))
def test_out_dtype_words_as_cpu(mode: str, name: str) -> None:
    want = _raised(lambda: OUT_DTYPE[name]("cpu"))
    with torch.tpu.eager_mode(mode):
        got = _raised(lambda: OUT_DTYPE[name]("tpu"))
    assert got[0] is want[0] is RuntimeError
    assert got[1].startswith(want[1]), (got, want)  # (the exact-dtype refusal adds which overload, in brackets)
