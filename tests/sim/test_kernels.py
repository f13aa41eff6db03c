"""The sim driver's VPU kernels (drivers/sim/kernels*.py, the numerics reference the pjrt emitters are checked
against in tests/pjrt/test_parity_ops.py): float32 compute with bf16 rounding on store, reductions, scans,
transcendentals, data movement, sort. Each kernel runs on a one-op Program built by the IR Builder."""

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import kernels_data  # noqa: F401  (registers every kernel)
from torchtpu.drivers.sim.kernels import KERNELS
from torchtpu.sim.numerics import round_bf16

BF16 = ml_dtypes.bfloat16
IR = {np.dtype(np.float32): "float32", np.dtype(BF16): "bfloat16", np.dtype(np.float64): "float64",
      np.dtype(np.int64): "int64", np.dtype(np.int32): "int32", np.dtype(np.int8): "int8",
      np.dtype(np.bool_): "bool"}


def run(name: str, *args: np.ndarray, **attrs) -> list[np.ndarray]:
    b = Builder()
    b.emit(name, [b.input(a.shape, IR[a.dtype]) for a in args], **attrs)
    (op,) = b.ops
    with np.errstate(all="ignore"):
        return KERNELS[name](op, list(args))


def test_elementwise_rounds_bf16_on_store_and_flushes_subnormals():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1000).astype(BF16)
    b = rng.standard_normal(1000).astype(BF16)
    (out,) = run("multiply", a, b)
    assert out.dtype == BF16
    np.testing.assert_array_equal(out.astype(np.float32), round_bf16(a.astype(np.float32) * b.astype(np.float32)))
    (tiny,) = run("multiply", np.array([1e-20], BF16), np.array([1e-20], BF16))
    assert tiny.astype(np.float32)[0] == 0  # a bf16 subnormal result is flushed


def test_reductions():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run("reduce", x, kind="sum", dimensions=(0, 2))[0], x.sum((0, 2)))
    assert run("reduce", x, kind="max", dimensions=(0, 1, 2))[0] == 23
    assert run("reduce", np.ones((2, 2), BF16), kind="sum", dimensions=(0,))[0].dtype == BF16
    assert run("reduce", np.array([True, False]), kind="and", dimensions=(0,))[0] == np.False_
    assert run("reduce", np.array([True, False]), kind="or", dimensions=(0,))[0] == np.True_
    assert np.isnan(run("reduce", np.array([1, np.nan], np.float32), kind="max", dimensions=(0,))[0])


def test_argreduce_takes_the_first_index_and_nan():
    x = np.array([[1, 3, 3, 0], [2, np.nan, 5, np.nan]], np.float32)
    np.testing.assert_array_equal(run("argreduce", x, kind="max", dimension=1)[0], [1, 1])
    np.testing.assert_array_equal(run("argreduce", x, kind="min", dimension=1)[0], [3, 1])
    (first,) = run("argreduce", np.array([2, 2, 2], np.float32), kind="max", dimension=0)
    assert first == 0 and first.dtype == np.int64


def test_scans():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    np.testing.assert_array_equal(run("cumulative", x, kind="sum", dimension=1)[0], np.cumsum(x, 1))
    np.testing.assert_array_equal(run("cumulative", x, kind="prod", dimension=0)[0], np.cumprod(x, 0))
    np.testing.assert_array_equal(run("cumulative", x, kind="max", dimension=1)[0], [[1, 2, 3], [4, 5, 6]])
    assert run("cumulative", np.ones(3, BF16), kind="sum", dimension=0)[0].dtype == BF16


def test_transcendentals():
    x = np.linspace(-3, 3, 101).astype(np.float32)
    np.testing.assert_allclose(run("erf", x)[0], [math.erf(v) for v in x], rtol=1e-6, atol=1e-7)
    y = np.linspace(-0.999, 0.999, 201).astype(np.float32)
    np.testing.assert_allclose(run("erf", run("erfinv", y)[0])[0], y, atol=2e-6)
    assert run("erfinv", np.array([1.0], np.float32))[0][0] == np.inf
    # lgamma and digamma are IR lowerings, not kernels: tests/test_ir_ops.py checks them against torch CPU
    np.testing.assert_allclose(run("logistic", np.array([0, 2], np.float32))[0], [0.5, 1 / (1 + math.exp(-2))],
                               rtol=1e-6)
    assert run("exponential", np.ones(2, BF16))[0].dtype == BF16


def test_gather_scatter_index_select():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])
    np.testing.assert_array_equal(run("gather_axis", x, idx, dimension=0)[0], np.take_along_axis(x, idx, 0))
    np.testing.assert_array_equal(run("index_select", x, np.array([3, 0]), dimension=1)[0], x[:, [3, 0]])
    (out,) = run("scatter_axis", np.zeros((3, 4), np.float32), idx, np.ones((2, 4), np.float32), dimension=0,
                 reduce="add")
    want = np.zeros((3, 4), np.float32)
    np.add.at(want, (idx, np.arange(4)[None, :].repeat(2, 0)), 1)
    np.testing.assert_array_equal(out, want)


def test_movement_pad_concat_slice_transpose():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run("transpose", x, permutation=(1, 0))[0], x.T)
    np.testing.assert_array_equal(run("slice", x, start=(0, 1), limit=(2, 3), strides=(1, 2))[0], x[0:2, 1:3:2])
    (p,) = run("pad", x, value=-1.0, low=(1, 0), high=(0, -1), interior=(0, 1))
    assert p.shape == (3, 4)
    np.testing.assert_array_equal(p[1], [0, -1, 1, -1])
    np.testing.assert_array_equal(run("concatenate", x, x, dimension=0)[0], np.concatenate([x, x]))



@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_pad_matches_numpy_pad_then_crop_for_every_edge_sign(dtype):
    """Each dimension padded, untouched or cropped (negative edges), as np.pad then a crop gives it."""
    x = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    value = True if dtype is np.bool_ else -7
    for low in itertools.product((-1, 0, 2), repeat=3):
        for high in ((0, 0, 0), (1, -2, 0), (-1, 1, 3)):
            (got,) = run("pad", x, value=value, low=low, high=high, interior=(0, 0, 0))
            want = np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)], constant_values=value)
            want = want[tuple(slice(max(-lo, 0), want.shape[i] - max(-hi, 0))
                              for i, (lo, hi) in enumerate(zip(low, high)))]
            assert got.dtype == want.dtype and got.shape == want.shape, (low, high)
            np.testing.assert_array_equal(got, want)

def test_sort_is_stable_in_both_directions_with_nan_largest():
    x = np.array([3, 1, 2, 1, np.nan, 3], np.float32)
    _, i = run("sort", x, dimension=0, descending=False, stable=True)
    np.testing.assert_array_equal(i, [1, 3, 2, 0, 5, 4])
    v, i = run("sort", x, dimension=0, descending=True, stable=True)
    np.testing.assert_array_equal(i, [4, 0, 5, 2, 1, 3])  # NaN first, ties keep their order
    assert np.isnan(v[0])
