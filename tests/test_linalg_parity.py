"""Linear algebra against CPU where PyTorch's test_linalg.py found tpu-only failures: cholesky_ex's info (the order
of the first leading minor that is not positive-definite, not 1), check_errors=True of cholesky_ex and inv_ex
(torch.linalg.LinAlgError, ATen's words), ATen's shape and dtype checks before the lowerings (cholesky,
cholesky_inverse, inv, eig, eigh, eigvalsh, qr), and dot's dtype check; in every eager mode, and compiled."""

from __future__ import annotations

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
DTYPES = [torch.float32, torch.float64, torch.complex64]


def _not_pd(dtype: torch.dtype) -> list[torch.Tensor]:
    a = torch.eye(3, dtype=dtype)
    a[-1, -1] = 0
    b = torch.eye(3, dtype=dtype).repeat(5, 1, 1)
    b[3, -2, -2] = 0
    c = torch.eye(4, dtype=dtype).repeat(2, 1, 1)
    c[1, 1, 1] = -2
    return [a, b, c, -torch.eye(2, dtype=dtype)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_ex_info_is_the_failing_order(mode: str, dtype: torch.dtype) -> None:
    for a in _not_pd(dtype):
        for upper in (False, True):
            want = torch.linalg.cholesky_ex(a, upper=upper).info
            with torch.tpu.eager_mode(mode):
                got = torch.linalg.cholesky_ex(a.to("tpu"), upper=upper).info.cpu()
            assert torch.equal(got, want), (a, got, want)


def test_cholesky_ex_info_compiled() -> None:
    fn = torch.compile(lambda a: torch.linalg.cholesky_ex(a).info, backend="tpu")
    for a in _not_pd(torch.float32):
        assert torch.equal(fn(a.to("tpu")).cpu(), torch.linalg.cholesky_ex(a).info)


def _raised(fn) -> tuple[type, str]:  # noqa: ANN001
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the class and words are what is compared
        return type(exc), str(exc)
    return type(None), ""


CALLS = {
    "cholesky_ex check_errors": lambda a: torch.linalg.cholesky_ex(a, check_errors=True),
    "inv_ex check_errors": lambda a: torch.linalg.inv_ex(a, check_errors=True),
    "cholesky": torch.linalg.cholesky,
    "inv": torch.linalg.inv,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CALLS))
def test_check_errors_raise_linalg_error(mode: str, name: str) -> None:
    for a in _not_pd(torch.float32)[:2]:  # singular and not positive-definite
        want = _raised(lambda: CALLS[name](a))  # noqa: B023
        assert want[0] is torch.linalg.LinAlgError
        with torch.tpu.eager_mode(mode):
            got = _raised(lambda: CALLS[name](a.to("tpu")))  # noqa: B023
        assert got == want


BAD = {
    "linalg.cholesky 2x3": (torch.linalg.cholesky, torch.ones(2, 3)),
    "linalg.cholesky 1-d": (torch.linalg.cholesky, torch.ones(3)),
    "linalg.cholesky long": (torch.linalg.cholesky, torch.ones(2, 2, dtype=torch.long)),
    "cholesky 2x3": (torch.cholesky, torch.ones(2, 3)),
    "cholesky_inverse 2x3": (torch.cholesky_inverse, torch.ones(2, 3)),
    "cholesky_inverse 1-d": (torch.cholesky_inverse, torch.ones(2)),
    "inv 2x3x4x3": (torch.linalg.inv, torch.ones(2, 3, 4, 3)),
    "inv 1-d": (torch.linalg.inv, torch.ones(3)),
    "inv long": (torch.linalg.inv, torch.ones(2, 2, dtype=torch.long)),
    "inverse 2x3": (torch.inverse, torch.ones(2, 3)),
    "eig 1-d": (torch.linalg.eig, torch.ones(2)),
    "eigh 2x3": (torch.linalg.eigh, torch.ones(2, 3)),
    "eigvalsh 2x3": (torch.linalg.eigvalsh, torch.ones(2, 3)),
    "eigh UPLO": (lambda a: torch.linalg.eigh(a, UPLO="R"), torch.eye(2)),
    "slogdet 2x3": (torch.linalg.slogdet, torch.ones(2, 3)),
    "slogdet 1-d": (torch.linalg.slogdet, torch.ones(3)),
    "slogdet long": (torch.linalg.slogdet, torch.ones(2, 2, dtype=torch.long)),
    "det 2x3": (torch.linalg.det, torch.ones(2, 3)),
    "qr 1-d": (torch.linalg.qr, torch.ones(5)),
    "qr long": (torch.linalg.qr, torch.ones(2, 2, dtype=torch.long)),
    "qr mode": (lambda a: torch.linalg.qr(a, mode="hello"), torch.ones(5, 7)),
    "dot dtypes": (lambda a: torch.dot(a, torch.ones(3, dtype=torch.float64, device=a.device)), torch.ones(1)),
    "vdot dtypes": (lambda a: torch.vdot(a, torch.ones(3, dtype=torch.float64, device=a.device)), torch.ones(1)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(BAD))
def test_argument_checks_as_aten(mode: str, name: str) -> None:
    fn, a = BAD[name]
    want = _raised(lambda: fn(a))
    assert want[0] is RuntimeError
    with torch.tpu.eager_mode(mode):
        got = _raised(lambda: fn(a.to("tpu")))
    assert got == want
