"""A fast DEFAULT dot kernel through `mxu.fast_default` (drivers/sim/fast.py `LEAN`) has the bits of the path
through `mxu.matmul` (LEAN off): every MXU precision and mode, odd sizes, transposed and strided operands, NaN,
inf, -0.0 and subnormal values, C, Fortran-order and strided output buffers, and a compiled program whose dots
share roundings (shared_rounding.py)."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim import fast
from torchtpu.drivers.sim.driver import SimDriver
from torchtpu.sim import mxu
from torchtpu.sim.numerics import round_bf16

SPECIALS = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-39, -1e-39, 1e-45, 3.0e38, -3.3e38,
                     1.1754942e-38, 65504.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-9], np.float32)


def _values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Random normal values with every special pattern sprinkled in (a NaN, inf or carry to inf in some rows)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape, dtype=np.float32)
    flat = x.reshape(-1)
    at = rng.choice(flat.size, size=min(flat.size, 3 * SPECIALS.size), replace=False)
    flat[at] = np.resize(SPECIALS, at.size)
    return x


def _dot_kernel(a_shape, b_shape, lc: int, rc: int, precision: str, batch: bool = False):
    b = Builder()
    x, y = b.input(a_shape, "float32"), b.input(b_shape, "float32")
    out = b.emit("dot_general", [x, y], lhs_batch=(0,) if batch else (), rhs_batch=(0,) if batch else (),
                 lhs_contract=(lc,), rhs_contract=(rc,), precision=precision, out_dtype="float32")[0]
    prog = b.finish([out])
    op = next(o for o in prog.ops if o.name == "dot_general")
    kernel = fast.specialize(op)
    assert kernel is not None
    return kernel, tuple(op.outputs[0].shape)


def _both(kernel, x: np.ndarray, y: np.ndarray, make_out=None) -> list[bytes]:
    """The kernel's result bits with LEAN on and off (a fresh `make_out()` buffer each when given)."""
    got = []
    try:
        for lean in (True, False):
            fast.LEAN = lean
            if make_out is None:
                got.append(kernel(x, y).tobytes())
            else:
                out = make_out()
                res = kernel(x, y, out=out)
                assert res is out
                got.append(np.ascontiguousarray(out).tobytes())
    finally:
        fast.LEAN = True
    return got


# (lhs shape, rhs shape, lhs contracting dim, rhs contracting dim, batch): odd sizes; contracting the lhs's first
# dim or the rhs's last dim hands the product transposed views (x^T @ g, x @ w^T); all over 2^18 multiply-adds
CASES = [
    ((97, 301), (301, 131), 1, 0, False),
    ((97, 301), (131, 301), 1, 1, False),  # x @ w^T
    ((301, 97), (301, 131), 0, 0, False),  # x^T @ g
    ((301, 97), (131, 301), 0, 1, False),  # both transposed
    ((3, 67, 129), (3, 129, 65), 2, 1, True),
    ((3, 129, 67), (3, 65, 129), 1, 2, True),
    ((5, 7, 3), (5, 3, 11), 2, 1, True),  # small: exact under "auto"
]


@pytest.mark.parametrize("mode", ["fast", "auto", "exact"])
@pytest.mark.parametrize("precision", ["DEFAULT", "HIGH", "HIGHEST"])
@pytest.mark.parametrize("case", CASES)
def test_fast_default_kernel_has_the_matmul_paths_bits(mode, precision, case):
    a_shape, b_shape, lc, rc, batch = case
    kernel, _ = _dot_kernel(a_shape, b_shape, lc, rc, precision, batch)
    x, y = _values(a_shape, 1), _values(b_shape, 2)
    mxu.set_mode(mode)
    try:
        lean, old = _both(kernel, x, y)
    finally:
        mxu.set_mode(None)
    assert lean == old


@pytest.mark.parametrize("layout", ["transposed", "strided", "negative"])
def test_strided_operands(layout):
    a_shape, b_shape = (97, 301), (301, 131)
    kernel, _ = _dot_kernel(a_shape, b_shape, 1, 0, "DEFAULT")
    if layout == "transposed":  # operands that are transposed C-order memory
        x, y = _values(a_shape[::-1], 3).T, _values(b_shape[::-1], 4).T
    elif layout == "strided":  # every other row / third column of larger arrays
        x, y = _values((2 * 97, 301), 3)[::2], _values((301, 3 * 131), 4)[:, 1::3]
    else:
        x, y = _values(a_shape, 3)[::-1], _values(b_shape, 4)[:, ::-1]
    assert x.shape == a_shape and y.shape == b_shape and not x.flags.c_contiguous
    mxu.set_mode("fast")
    try:
        lean, old = _both(kernel, x, y)
        with np.errstate(invalid="ignore", over="ignore"):
            want = mxu.blas_matmul(np.ascontiguousarray(round_bf16(x)), np.ascontiguousarray(round_bf16(y)))
    finally:
        mxu.set_mode(None)
    assert lean == old == want.tobytes()


@pytest.mark.parametrize("buffer", ["C", "F", "strided"])
@pytest.mark.parametrize("case", CASES[:5])
def test_output_buffers(buffer, case):
    a_shape, b_shape, lc, rc, batch = case
    kernel, out_shape = _dot_kernel(a_shape, b_shape, lc, rc, "DEFAULT", batch)
    x, y = _values(a_shape, 5), _values(b_shape, 6)

    def make_out() -> np.ndarray:
        if buffer == "C":
            return np.full(out_shape, np.nan, np.float32)
        if buffer == "F":
            return np.asfortranarray(np.full(out_shape, np.nan, np.float32))
        return np.full((*out_shape[:-1], 2 * out_shape[-1]), np.nan, np.float32)[..., ::2]

    mxu.set_mode("fast")
    try:
        lean, old = _both(kernel, x, y, make_out)
        fresh = _both(kernel, x, y)
    finally:
        mxu.set_mode(None)
    assert lean == old == fresh[0] == fresh[1]


def test_fast_default_is_matmul():
    x, y = _values((2, 97, 301), 7), _values((2, 131, 301), 8).swapaxes(-1, -2)
    out = np.empty((2, 97, 131), np.float32)
    want = mxu.matmul(x, y, precision="DEFAULT", mode="fast")
    assert mxu.fast_default(x, y).tobytes() == want.tobytes()
    assert mxu.fast_default(x, y, out) is out and out.tobytes() == want.tobytes()
    with pytest.raises(TypeError, match="float32 operands"):  # matmul would convert first: not this path's job
        mxu.fast_default(x.astype(np.float64), y)


def _program(precision: str):
    """x read by three dots in two layouts (a shared rounding), and a product written to a program output."""
    b = Builder()
    x, w1, w2, g = (b.input(s, "float32") for s in [(97, 300), (300, 131), (129, 300), (97, 45)])

    def dot(p, q, lc, rc):
        return b.emit("dot_general", [p, q], lhs_batch=(), rhs_batch=(), lhs_contract=(lc,), rhs_contract=(rc,),
                      precision=precision, out_dtype="float32")[0]

    h = dot(x, w1, 1, 0)
    return b.finish([b.emit("add", [h, h])[0], dot(x, w2, 1, 1), dot(x, g, 0, 0)])


@pytest.mark.parametrize("precision", ["DEFAULT", "HIGHEST"])
@pytest.mark.parametrize("mode", ["fast", "auto"])
def test_program_bits_equal_with_and_without_lean(mode, precision):
    drv = SimDriver()
    exe = drv.compile(_program(precision))
    inputs = [_values(s, 10 + i) for i, s in enumerate([(97, 300), (300, 131), (129, 300), (97, 45)])]
    mxu.set_mode(mode)
    results = []
    try:
        for lean in (True, False, True):
            fast.LEAN = lean
            outs = [np.full(v.type.shape, np.nan, np.float32) for v in exe.program.outputs]
            drv.execute(exe, inputs, outs)
            results.append([o.tobytes() for o in outs])
    finally:
        fast.LEAN = True
        mxu.set_mode(None)
    assert results[0] == results[1] == results[2]
