"""Random Programs (hypothesis) give the same results on the sim and pjrt(cpu) drivers.

Values are tracked as exact (bit-identical on both drivers: inputs, data movement, integer ops, comparisons of
exact values) or approximate (float math, whose rounding may differ in the last bits). Discontinuous ops (floor,
sign, compare, float->int) only take exact operands, so a last-bit difference can never flip their result.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pjrt_run import run
from torchtpu.drivers.ir import Builder, Value

S = (4, 4)
Pool = list[tuple[Value, bool]]  # (value, exact)


def _pick(draw, pool: Pool, dtype: str | None = None, exact: bool | None = None) -> tuple[Value, bool] | None:
    options = [p for p in pool if (dtype is None or p[0].dtype == dtype) and (exact is None or p[1] == exact)]
    return draw(st.sampled_from(options)) if options else None


def _unary_float(draw, b: Builder, pool: Pool) -> None:
    x = _pick(draw, pool, "float32")
    if x:
        name = draw(st.sampled_from(["tanh", "logistic", "sine", "cosine", "atan", "erf", "asinh", "cbrt",
                                     "exponential_minus_one"]))
        pool.append((b.emit(name, [x[0]])[0], False))


def _unary_exact(draw, b: Builder, pool: Pool) -> None:
    x = _pick(draw, pool, exact=True)
    if x:
        names = ["abs", "negate", "sign"] + (["floor", "ceil", "round_nearest_even"] if x[0].dtype == "float32"
                                             else ["not"])
        pool.append((b.emit(draw(st.sampled_from(names)), [x[0]])[0], True))


def _binary(draw, b: Builder, pool: Pool) -> None:
    x = _pick(draw, pool)
    if x is None:
        return
    y = _pick(draw, pool, x[0].dtype)
    if x[0].dtype == "float32":
        name = draw(st.sampled_from(["add", "subtract", "multiply", "maximum", "minimum", "atan2"]))
        exact = x[1] and y[1] and name in ("maximum", "minimum")
    else:
        name = draw(st.sampled_from(["add", "subtract", "multiply", "maximum", "minimum", "and", "or", "xor"]))
        exact = True
    pool.append((b.emit(name, [x[0], y[0]])[0], exact))


def _compare_select(draw, b: Builder, pool: Pool) -> None:
    x = _pick(draw, pool, exact=True)
    if x is None:
        return
    y = _pick(draw, pool, x[0].dtype, exact=True)
    (pred,) = b.emit("compare", [x[0], y[0]], direction=draw(st.sampled_from(["LT", "GE", "EQ", "NE"])))
    a = _pick(draw, pool)
    c = _pick(draw, pool, a[0].dtype)
    pool.append((b.emit("select", [pred, a[0], c[0]])[0], a[1] and c[1]))


def _convert(draw, b: Builder, pool: Pool) -> None:
    x = _pick(draw, pool, exact=True)
    if x:
        to = "float32" if x[0].dtype == "int32" else "int32"
        pool.append((b.emit("convert", [x[0]], dtype=to)[0], True))


def _movement(draw, b: Builder, pool: Pool) -> None:
    x, exact = _pick(draw, pool)
    kind = draw(st.sampled_from(["transpose", "reverse", "slice_pad", "reshape"]))
    if kind == "transpose":
        (y,) = b.emit("transpose", [x], permutation=(1, 0))
    elif kind == "reverse":
        (y,) = b.emit("reverse", [x], dimensions=(draw(st.integers(0, 1)),))
    elif kind == "reshape":
        (y,) = b.emit("reshape", [b.emit("reshape", [x], shape=(2, 8))[0]], shape=S)
    else:
        (y,) = b.emit("slice", [x], start=(1, 0), limit=(4, 4), strides=(1, 1))
        (y,) = b.emit("pad", [y], value=0, low=(0, 0), high=(1, 0), interior=(0, 0))
    pool.append((y, exact))


def _reduce(draw, b: Builder, pool: Pool) -> None:
    x, exact = _pick(draw, pool)
    kind = draw(st.sampled_from(["sum", "max", "min"]))
    dim = draw(st.integers(0, 1))
    (r,) = b.emit("reduce", [x], kind=kind, dimensions=(dim,))
    (y,) = b.emit("broadcast_in_dim", [r], shape=S, broadcast_dimensions=(1 - dim,))
    pool.append((y, exact and (kind != "sum" or x.dtype == "int32")))


def _scan_or_dot(draw, b: Builder, pool: Pool) -> None:
    x, exact = _pick(draw, pool)
    if draw(st.booleans()) or x.dtype != "float32":
        kind = draw(st.sampled_from(["sum", "max"]))
        (y,) = b.emit("cumulative", [x], kind=kind, dimension=draw(st.integers(0, 1)))
        pool.append((y, exact and (kind == "max" or x.dtype == "int32")))
        return
    w = _pick(draw, pool, "float32")[0]
    (y,) = b.emit("dot_general", [x, w], lhs_batch=(), rhs_batch=(), lhs_contract=(1,), rhs_contract=(0,),
                  precision="HIGHEST", out_dtype="float32")
    pool.append((y, False))


MENU: list[Callable] = [_unary_float, _unary_exact, _binary, _compare_select, _convert, _movement, _reduce,
                        _scan_or_dot]


@st.composite
def programs(draw):
    b = Builder()
    pool: Pool = []
    dtypes = draw(st.lists(st.sampled_from(["float32", "int32"]), min_size=1, max_size=3))
    for d in dtypes:
        pool.append((b.input(S, d), True))
    for _ in range(draw(st.integers(1, 8))):
        draw(st.sampled_from(MENU))(draw, b, pool)
    outs = [pool[-1][0]] + [p[0] for p in pool[len(dtypes):-1] if draw(st.booleans())]
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    data = [rng.uniform(-3, 3, S).astype(np.float32) if d == "float32" else rng.integers(-9, 10, S).astype(np.int32)
            for d in dtypes]
    return b.finish(outs, name="random"), data


@settings(max_examples=int(__import__("os").environ.get("PJRT_EXAMPLES", 30)), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_random_programs_agree(sim, pjrt, case):
    program, data = case
    want = run(sim, program, data)
    got = run(pjrt, program, data)
    for g, w in zip(got, want):
        if w.dtype == np.float32:
            scale = max(1.0, float(np.nanmax(np.abs(np.where(np.isfinite(w), w, 0)))))
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * scale, equal_nan=True, err_msg=program.text())
        else:
            np.testing.assert_array_equal(g, w, err_msg=program.text())
