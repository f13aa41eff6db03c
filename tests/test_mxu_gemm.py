"""The fast mode's bf16 GEMM (sim/mxu_gemm.py): MKL's cblas_gemm_bf16bf16f32 from PyTorch's library, the bits a
product's shapes alone decide (layout, alignment, threads, batching), the rounding folded into its operand pass
equal to round_bf16's, the refusal of operands that are not bf16 values, and numpy's BLAS as the fallback."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from torchtpu.sim import mxu, mxu_gemm, mxu_round
from torchtpu.sim.mxu_round import LAST, STORE, USE, RoundMemo
from torchtpu.sim.numerics import round_bf16

SPECIALS = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-39, -1e-39, 1e-45, 3.0e38, -3.3e38,
                     1.1754942e-38, 65504.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-9], np.float32)
SHAPES = [(1, 7, 5, 3), (1, 64, 256, 64), (1, 300, 129, 77), (3, 33, 70, 1), (2, 1, 96, 40), (8, 64, 256, 64)]


def _bf16(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return round_bf16(np.random.default_rng(seed).standard_normal(shape, dtype=np.float32))


def test_this_machine_uses_mkl() -> None:
    assert mxu_gemm.available(), mxu_gemm.REASON
    assert mxu_gemm.backend() == "mkl-bf16"


def test_exact_sums_are_exact() -> None:
    """Small integers: every product and partial sum is exact in float32, so any order gives the exact result."""
    rng = np.random.default_rng(0)
    a = rng.integers(-8, 9, (5, 37, 300)).astype(np.float32)
    b = rng.integers(-8, 9, (5, 300, 41)).astype(np.float32)
    np.testing.assert_array_equal(mxu_gemm.gemm(a, b), (a.astype(np.float64) @ b).astype(np.float32))


@pytest.mark.parametrize("batch, m, k, n", SHAPES)
def test_close_to_the_float64_product(batch: int, m: int, k: int, n: int) -> None:
    a, b = _bf16((batch, m, k), 1), _bf16((batch, k, n), 2)
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = k * 2.0**-23 * (np.abs(a).astype(np.float64) @ np.abs(b))
    assert np.all(np.abs(mxu_gemm.gemm(a, b) - want) <= bound)


@pytest.mark.parametrize("batch, m, k, n", SHAPES)
def test_bits_depend_on_the_shapes_only(batch: int, m: int, k: int, n: int) -> None:
    a, b = _bf16((batch, m, k), 3), _bf16((batch, k, n), 4)
    ref = mxu_gemm.gemm(a, b)
    at = np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2)
    bt = np.ascontiguousarray(b.swapaxes(-1, -2)).swapaxes(-1, -2)
    for x, y in ((at, b), (a, bt), (at, bt)):
        if m > 1 and n > 1:  # MKL's gemv (M or N = 1) sums differently with a transpose flag
            np.testing.assert_array_equal(mxu_gemm.gemm(x, y), ref)
        # the MXU's fast path probes each shape (mxu_layout.same_bits) before it keeps a transposed layout
        np.testing.assert_array_equal(mxu.matmul(x, y, mode="fast"), ref)
    for shift in (1, 2, 3, 8):  # operands and result at every alignment (2-byte steps for the bf16 copies)
        xa = np.empty(a.size + shift, np.float32)[shift:].reshape(a.shape)
        xb = np.empty(b.size + shift, np.float32)[shift:].reshape(b.shape)
        out = np.empty(ref.size + shift, np.float32)[shift:].reshape(ref.shape)
        xa[...], xb[...] = a, b
        assert mxu_gemm.gemm(xa, xb, out) is out
        np.testing.assert_array_equal(out, ref)
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    try:
        for t in (1, 2):
            torch.set_num_threads(t)
            np.testing.assert_array_equal(mxu.matmul(a, b, mode="fast"), ref)
    finally:
        torch.set_num_threads(threads)
    for i in range(batch):
        np.testing.assert_array_equal(mxu_gemm.gemm(a[i], b[i]), ref[i])
    np.testing.assert_array_equal(mxu_gemm.gemm(a, b), ref)


def test_batch_items_at_every_alignment() -> None:
    """Batch item i of a (5, 129) @ (129, 7) batch starts 1290 * i (lhs) and 1806 * i (rhs) bytes into the
    16-bit copies MKL reads, so 32 items cover every even address mod 64; each equals the item computed alone
    (from a 64-byte-aligned copy)."""
    a, b = _bf16((32, 5, 129), 8), _bf16((32, 129, 7), 9)
    together = mxu_gemm.gemm(a, b)
    for i in range(32):
        np.testing.assert_array_equal(mxu_gemm.gemm(a[i], b[i]), together[i])


def test_rounding_pass_equals_round_bf16_then_the_product() -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 40, 300), dtype=np.float32)
    b = rng.standard_normal((2, 300, 50), dtype=np.float32)
    a.reshape(-1)[rng.choice(a.size, 45, replace=False)] = np.resize(SPECIALS, 45)
    b.reshape(-1)[rng.choice(b.size, 45, replace=False)] = np.resize(SPECIALS, 45)
    with np.errstate(invalid="ignore", over="ignore"):
        want = mxu_gemm.gemm(round_bf16(a), round_bf16(b))
        at = np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2)
        for keep in ((False, False), (True, False), (False, True), (True, True)):
            got = mxu_gemm.gemm(at if keep[0] else a, b, rounding=keep)
            np.testing.assert_array_equal(got, want)
        got = RoundMemo().call(mxu_gemm.gemm, (None, None), (a, b), {"rounding": (False, False)})
        np.testing.assert_array_equal(got, want)


def test_a_kept_rounding_serves_bf16_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """RoundMemo keeps x's rounding as bf16 bits: x @ w stores it, x^T @ g takes it transposed (MKL's flag) and
    again gathered into C order; each product has the bits of the unshared one, and the last reader drops it."""
    served = []
    memo_round = mxu_round._memo_round

    def counting(*args):  # noqa: ANN002, ANN202
        out = memo_round(*args)
        if args[1] == "lhs":  # the rhs has no role here
            served.append(None if out is None else out.dtype)
        return out

    monkeypatch.setattr(mxu_round, "_memo_round", counting)
    x, w, g = _bf16((97, 300), 10) * np.float32(1 + 2.0**-10), _bf16((300, 131), 11), _bf16((97, 45), 12)
    memo = RoundMemo()
    got = [memo.call(mxu_gemm.gemm, (("x", role), None), args, {"rounding": keep})
           for role, args, keep in ((STORE, (x, w), (False, False)), (USE, (x.T, g), (True, False)),
                                    (LAST, (x.T, g), (False, False)))]
    assert served == [np.uint16] * 3 and memo.kept() == 0
    np.testing.assert_array_equal(got[0], mxu_gemm.gemm(round_bf16(x), w))
    np.testing.assert_array_equal(got[1], mxu_gemm.gemm(round_bf16(x).T, g))
    np.testing.assert_array_equal(got[2], got[1])


def test_fast_matmul_goes_through_it() -> None:
    a, b = _bf16((4, 96, 130), 6), _bf16((4, 130, 70), 7)
    np.testing.assert_array_equal(mxu.matmul(a, b, mode="fast"), mxu_gemm.gemm(a, b))


def test_subnormal_products_flush_to_zero() -> None:
    """vdpbf16ps flushes a float32 subnormal product (2^-70 * 2^-70 = 2^-140) to zero: documented in mxu.py."""
    a = np.array([[2.0**-70, 2.0**-70]], np.float32)
    b = np.array([[2.0**-70], [2.0**-70]], np.float32)
    assert mxu_gemm.gemm(a, b)[0, 0] == 0.0
    assert mxu_gemm.gemm(a * np.float32(2.0**40), b)[0, 0] == np.float32(2.0**-99)


def test_empty_sizes() -> None:
    assert mxu_gemm.gemm(np.zeros((2, 0, 4), np.float32), np.zeros((2, 4, 3), np.float32)).shape == (2, 0, 3)
    out = np.full((2, 3), np.nan, np.float32)
    mxu_gemm.gemm(np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32), out)
    np.testing.assert_array_equal(out, np.zeros((2, 3), np.float32))


def test_refuses_values_that_are_not_bf16() -> None:
    a = np.full((4, 4), 1.0 + 2.0**-20, np.float32)
    with pytest.raises(ValueError, match="not bf16 values"):
        mxu_gemm.gemm(a, np.ones((4, 4), np.float32))


def test_disabled_process_uses_numpy_blas() -> None:
    code = (
        "import numpy as np\n"
        "from torchtpu.sim import mxu, mxu_gemm\n"
        "from torchtpu.sim.numerics import round_bf16\n"
        "mxu_gemm.ENABLED = False\n"
        "rng = np.random.default_rng(0)\n"
        "a, b = rng.standard_normal((64, 256), dtype=np.float32), rng.standard_normal((256, 64), dtype=np.float32)\n"
        "got = mxu.matmul(a, b, mode='fast')\n"
        "assert mxu_gemm.backend() == 'numpy-blas', mxu_gemm.backend()\n"
        "assert 'disabled' in mxu_gemm.REASON\n"
        "assert np.array_equal(got, np.matmul(round_bf16(a), round_bf16(b)))\n"
        "print('ok')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
