"""The FMA twin of the exact MXU kernel (sim/mxu_kernel.py `tile_block_fma`, chosen per call by `fma_exact`)
gives the unfused kernel's bits wherever it is chosen: the rounding-and-range pass against `round_bf16`, the
decision at its thresholds (products at FLT_MAX and around FLT_MIN = 2^-126, zeros, inf, NaN, non-bf16 values),
two sums where the FMA would be wrong and the check refuses it, and random shapes through every entry point
(2-D eager mm, batched, `dot_exact`, every precision of `mxu.matmul`) against the unfused kernel forced, with
values scaled to both sides of the thresholds. NaN outputs are compared as NaN (their sign is not part of the
order, see sim/mxu_kernel.py)."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.sim import mxu
from torchtpu.sim import mxu_kernel as mk
from torchtpu.sim.numerics import round_bf16

_FLT_MIN = 2.0 ** -126
_BF16_MAX = np.uint32(0x7F7F0000).view(np.float32)  # the largest finite bf16 value, 1.9921875 * 2^127


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype == np.float32
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])


def _f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def _unfused3(a: np.ndarray, b: np.ndarray, tile: int) -> np.ndarray:
    """The unfused kernel on (batch, M, K) @ (batch, K, N) operands holding bf16 values."""
    return mk._dot_exact3_serial_fused(np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32),
                                       tile, False)


def _fused_for(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(mk._fused_for(np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)))


def test_rounding_pass_is_round_bf16() -> None:
    rng = np.random.default_rng(0)
    special = np.array([0, 0x80000000, 1, 0x007FFFFF, 0x00800000, 0x007F8000, 0x007F7FFF, 0x00808000,
                        0x3F808000, 0x3F818000, 0x3F807FFF, 0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF, 0x7F800000,
                        0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0xFF800000, 0xFFFFFFFF, 0xFF7F8000], np.uint32)
    halves = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    bits = np.concatenate([special, special | np.uint32(0x80000000), rng.integers(0, 1 << 32, 1 << 20,
                                                                                 dtype=np.uint32),
                           halves, halves | np.uint32(0x8000), halves | np.uint32(0x7FFF), halves | np.uint32(1)])
    dst = np.empty_like(bits)
    hi, lo = mk._rounded_scan(bits, dst)
    want = round_bf16(bits.view(np.float32)).view(np.uint32)
    assert np.array_equal(dst, want)
    mag = want & np.uint32(0x7FFFFFFF)
    assert hi == mag.max() and lo + np.uint32(1) == mag[mag != 0].min()


@pytest.mark.parametrize(("a", "b", "fused"), [
    (_f32(_BF16_MAX, 1.0), _f32(1.0), True),            # the largest product: bf16 max, below FLT_MAX
    (_f32(_BF16_MAX), _f32(1.0078125), False),          # just above FLT_MAX: inf
    (_f32(2.0 ** 64), _f32(2.0 ** 63), True),           # 2^127
    (_f32(2.0 ** 64), _f32(-(2.0 ** 64)), False),       # 2^128 overflows
    (_f32(2.0 ** -63), _f32(2.0 ** -63, 5.0), True),    # 2^-126 = FLT_MIN exactly
    (_f32(2.0 ** -63), _f32(2.0 ** -64), False),        # 2^-127: subnormal
    (_f32(1.5 * 2.0 ** -64), _f32(1.5 * 2.0 ** -63), True),  # 1.125 * 2^-126
    (_f32(1.0078125 * 2.0 ** -64), _f32(2.0 ** -63), False),  # 1.0078125 * 2^-127: just below FLT_MIN
    (_f32(0.0, -0.0), _f32(_BF16_MAX, 2.0 ** -126), True),     # all-zero A: every product 0
    (_f32(0.0, 1.0), _f32(0.0), True),
    (_f32(np.inf), _f32(1.0), False),
    (_f32(1.0), _f32(-np.inf), False),
    (_f32(np.nan), _f32(0.0), False),
    (_f32(1.0), _f32(1.0 + 2.0 ** -20), False),         # not a bf16 value (dot_exact's operands)
    (_f32(2.0 ** -126), _f32(1.0), True),               # FLT_MIN operand times 1
    (_f32(2.0 ** -130), _f32(2.0 ** 10), True),         # a subnormal operand (dot_exact): product 2^-120, exact
    (_f32(2.0 ** -130), _f32(2.0 ** 3), False),         # 2^-127
])
def test_decision_at_the_thresholds(a: np.ndarray, b: np.ndarray, fused: bool) -> None:
    exact = bool(np.all(np.isfinite(np.multiply.outer(a.astype(np.float64), b.astype(np.float64))))) and \
        all(p == 0 or (abs(p) >= _FLT_MIN and abs(p) <= np.finfo(np.float32).max and np.float32(p) == p)
            for p in np.multiply.outer(a.astype(np.float64), b.astype(np.float64)).ravel())
    assert _fused_for(a, b) is fused
    if fused:  # never chosen where a product is inexact
        assert exact


def _cases_where_fma_differs() -> list[tuple[np.ndarray, np.ndarray, float]]:
    """(a row, b column, the unfused sum): the FMA gives another float32 in both."""
    # s = 2^-125 (ulp 2^-148), then a product of 1.25 * 2^-149: unfused it rounds to 2^-149 first and the sum
    # ties back to even (2^-125); fused, s + 0.625 ulp rounds up.
    under = (_f32(2.0 ** -62, 1.25 * 2.0 ** -75), _f32(2.0 ** -63, 2.0 ** -74), 2.0 ** -125)
    # s = -2^127, then a product of 2^128: unfused inf + (-2^127) = inf; fused 2^127
    over = (_f32(-(2.0 ** 64), 2.0 ** 64), _f32(2.0 ** 63, 2.0 ** 64), np.inf)
    return [under, over]


@pytest.mark.parametrize("case", range(2))
def test_the_check_refuses_where_the_fma_would_differ(case: int) -> None:
    row, col, want = _cases_where_fma_differs()[case]
    a, b = row.reshape(1, 1, -1), col.reshape(1, -1, 1)
    assert float(_unfused3(a, b, 128)[0, 0, 0]) == want
    forced = mk._dot_exact3_serial_fused(a, b, 128, True)[0, 0, 0]
    assert float(forced) != want  # the FMA would be wrong here ...
    assert not _fused_for(a, b)  # ... so it is not chosen
    _same(mk._dot_exact3_serial(a, b, 128), _unfused3(a, b, 128))
    _same(mk.dot_exact(a, b, 128), _unfused3(a, b, 128))
    out = np.empty((1, 1), np.float32)
    mk._mm_into(row.reshape(1, -1), col.reshape(-1, 1), out, 128)
    _same(out, _unfused3(a, b, 128)[0])
    # 64 x 64 operands holding the case in their first row and column (the blocked kernel, not the loop nest)
    a64, b64 = np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32)
    a64[0, :2], b64[:2, 0] = row, col
    out = np.full((64, 64), np.nan, np.float32)
    mk._mm_into(a64, b64, out, 128)
    _same(out, _unfused3(a64[None], b64[None], 128)[0])
    assert float(out[0, 0]) == want


def _operand(rng: np.random.Generator, shape: tuple[int, ...], kind: str) -> np.ndarray:
    """float32 values; `kind`: normal, huge (products near FLT_MAX), tiny (products near 2^-126), special."""
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == "huge":
        x *= np.float32(2.0 ** 62)
    elif kind == "tiny":
        x *= np.float32(2.0 ** -62)
    elif kind == "special":
        flat = x.reshape(-1)
        picks = rng.integers(0, flat.size, max(1, flat.size // 20))
        flat[picks] = rng.choice(_f32(np.inf, -np.inf, np.nan, -0.0, 0.0, 2.0 ** -140, 3e38), picks.size)
    return x


_KINDS = ("normal", "huge", "tiny", "special")


@pytest.mark.parametrize("seed", range(8))
def test_random_mm_matches_the_unfused_kernel(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    chosen = set()
    for _ in range(12):
        m, k, n = (int(v) for v in rng.integers(1, 150, 3))
        if rng.random() < 0.3:
            m, k, n = 64, 64, 64
        tile = int(rng.choice([1, 7, 32, 128, 256]))
        a = _operand(rng, (m, k), str(rng.choice(_KINDS)))
        b = _operand(rng, (k, n), str(rng.choice(_KINDS)))
        ar, br = round_bf16(a), round_bf16(b)
        want = _unfused3(ar[None], br[None], tile)[0]
        chosen.add(_fused_for(ar, br))
        _same(mk._mm_rounded_serial(a, b, tile), want)
        out = np.empty((m, n), np.float32)
        mk._mm_into(a, b, out, tile)
        _same(out, want)
        strided = np.empty((n, m), np.float32).T
        mk.mm_small_bf16_rounded_into(a, b, strided, tile)
        _same(strided, want)
        _same(mk.dot_exact(ar, br, tile), want)
        _same(mk.dot_exact_bf16_rounded(a, b, tile), want)
    assert chosen == {True, False} or seed > 3  # both kernels ran (seeds 0-3 are checked to mix them)


@pytest.mark.parametrize("seed", range(3))
def test_batched_and_parallel_match(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    for kind in _KINDS:
        batch, m, k, n = 3, int(rng.integers(1, 90)), int(rng.integers(1, 300)), int(rng.integers(1, 90))
        a = round_bf16(_operand(rng, (batch, m, k), kind))
        b = round_bf16(_operand(rng, (batch, k, n), kind))
        want = _unfused3(a, b, 128)
        _same(mk._dot_exact3_serial(a, b, 128), want)
        _same(mk._dot_exact3(a, b, 128), want)
        _same(mk.dot_small_bf16_rounded3(a, b, 128), want)


@pytest.mark.parametrize("precision", ["DEFAULT", "HIGH", "HIGHEST"])
@pytest.mark.parametrize("kind", _KINDS)
def test_every_precision_pass(precision: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(len(kind) * 7 + len(precision))
    a, b = _operand(rng, (2, 40, 70), kind), _operand(rng, (2, 70, 24), kind)
    got = mxu.matmul(a, b, precision=precision, mode="exact")

    def unfused(x: np.ndarray, y: np.ndarray, tile: int = 128) -> np.ndarray:
        return _unfused3(x, y, tile)

    monkeypatch.setattr(mxu, "dot_exact", unfused)
    monkeypatch.setattr(mxu, "dot_exact_bf16_rounded", lambda x, y, t: unfused(round_bf16(x), round_bf16(y), t))
    _same(got, mxu.matmul(a, b, precision=precision, mode="exact"))


@pytest.mark.sim_only("the native mm kernel is the sim driver's")
@pytest.mark.usefixtures("launch_cache_live")
@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("shape", [(64, 64, 64), (41, 72, 48)])  # (41: padded rows)
def test_eager_mm_through_the_native_entry(tpu, kind: str, shape: tuple[int, int, int]) -> None:
    """An eager mm above the loop nest's size on "tpu" (the C++ launch cache's native entry once cached): the
    unfused kernel's bits, FMA chosen or not."""
    import torch

    from torchtpu import runtime
    from torchtpu.execution import fast_launch

    m, k, n = shape
    rng = np.random.default_rng(len(kind) + m)
    a, b = _operand(rng, (m, k), kind), _operand(rng, (k, n), kind)
    want = _unfused3(round_bf16(a)[None], round_bf16(b)[None], mxu.DEFAULT_ARRAY)[0]
    at, bt = torch.from_numpy(a).to(tpu), torch.from_numpy(b).to(tpu)
    drv = runtime.driver()
    real, calls = drv.launcher, []

    def launcher(exe):  # noqa: ANN001, ANN202 - counts the Python launches
        launch = real(exe)

        def counted(*args):  # noqa: ANN002, ANN202
            calls.append(1)
            return launch(*args)

        if hasattr(launch, "native"):
            counted.native = launch.native
        return counted

    drv.launcher = launcher
    fast_launch.clear()
    try:
        got = [torch.mm(at, bt).cpu().numpy() for _ in range(4)]
    finally:
        del drv.launcher
        fast_launch.clear()
    assert len(calls) <= 1  # the cached calls ran the native kernel
    for g in got:
        _same(g, want)
