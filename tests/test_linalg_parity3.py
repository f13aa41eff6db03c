"""Linear algebra against CPU, third part (issue 17): linalg.eig's check that the input holds no inf or NaN (CPU's
RuntimeError, raised on tpu when the program runs, without a host read), and torch.full's dtype for a complex fill
value (complex64, the default float dtype's complex counterpart; it was int64's overflow error), which
linalg.pinv's complex rtol/atol/rcond refusals need; in every eager mode, and compiled where the call reaches a
graph."""

from __future__ import annotations

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
EIG_MESSAGE = "torch.linalg.eig: input tensor should not contain infs or NaNs."


def _with(value: complex | float, dtype: torch.dtype, batch: tuple[int, ...]) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(*batch, 5, 5, dtype=dtype, generator=g)
    a[..., -1, -1] = value
    return a


def _cpu_error(fn, *args) -> str:  # noqa: ANN001
    with pytest.raises(RuntimeError) as info:
        fn(*args)
    return str(info.value)


_BAD = [(d, v) for d in (torch.float32, torch.float64) for v in (float("inf"), float("nan"))] + [
    (d, v) for d in (torch.complex64, torch.complex128) for v in (float("inf"), complex(0.0, float("nan")))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("dtype", "value"), _BAD)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_eig_refuses_inf_and_nan(mode: str, dtype: torch.dtype, value: complex | float, batch: tuple[int, ...]
                                 ) -> None:
    a = _with(value, dtype, batch)
    assert EIG_MESSAGE in _cpu_error(torch.linalg.eig, a)
    with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="input tensor should not contain infs"):
        torch.linalg.eig(a.to("tpu"))[0].cpu()


@pytest.mark.parametrize("mode", MODES)
def test_eigvals_of_inf_is_nan_as_cpu(mode: str) -> None:
    """CPU's eigvals (no gradient wanted) skips eig's check: an inf gives NaN values (a NaN input crashes CPU's
    LAPACK, so only inf is compared)."""
    a = _with(float("inf"), torch.float32, ())
    want = torch.linalg.eigvals(a)
    with torch.tpu.eager_mode(mode):
        got = torch.linalg.eigvals(a.to("tpu")).cpu()
    torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128])
def test_eig_of_finite_input_unchanged(mode: str, dtype: torch.dtype) -> None:
    a = _with(0.5, dtype, (2,))
    want = torch.linalg.eigvals(a)
    with torch.tpu.eager_mode(mode):
        got = torch.linalg.eigvals(a.to("tpu")).cpu()
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_eig_refuses_nan_compiled() -> None:
    a = _with(float("nan"), torch.float64, ())
    fn = torch.compile(lambda x: torch.linalg.eig(x)[0], backend="tpu")
    with pytest.raises(RuntimeError, match="input tensor should not contain infs"):
        fn(a.to("tpu")).cpu()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("default", [torch.float32, torch.float64])
@pytest.mark.parametrize("fill", [1j, 2.5 - 1j, True, 3, 1.5])
def test_full_dtype_of_fill_value(mode: str, default: torch.dtype, fill: complex | float | bool | int) -> None:
    old = torch.get_default_dtype()
    torch.set_default_dtype(default)
    try:
        want = torch.full((2,), fill)
        with torch.tpu.eager_mode(mode):
            got = torch.full((2,), fill, device="tpu").cpu()
    finally:
        torch.set_default_dtype(old)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["rcond", "atol", "rtol"])
def test_pinv_refuses_complex_tolerance(mode: str, name: str) -> None:
    a = torch.randn(3, 3)
    with pytest.raises(RuntimeError) as cpu:
        torch.linalg.pinv(a, **{name: torch.full((), 1j)})
    with torch.tpu.eager_mode(mode):
        tol = torch.full((), 1j, device="tpu")
        with pytest.raises(RuntimeError) as tpu:
            torch.linalg.pinv(a.to("tpu"), **{name: tol})
    assert str(tpu.value) == str(cpu.value)
