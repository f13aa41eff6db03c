"""The sim driver's fused element-wise loops (drivers/sim/fusion.py): the same bits as the step-by-step run (NaN
payloads aside, see `_same`) for the special functions and for random element-wise chains (NaNs with payloads,
+-inf, +-0, denormals; float32 and float64), broadcast and strided operands, transcendentals left to numpy, the
thresholds that keep ordinary eager programs unfused, and the simulated timeline unchanged."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from torchtpu.drivers.ir import Builder, Program
from torchtpu.drivers.ir_ops import SPECIAL_BINARY, SPECIAL_UNARY
from torchtpu.drivers.sim import fusion
from torchtpu.drivers.sim.driver import SimDriver
from torchtpu.drivers.sim.fusion import FusedStep

N = 4096  # elements per operand: the tests lower MIN_ELEMENTS to fuse these
_BITS = {4: np.uint32, 8: np.uint64, 1: np.uint8}


def _special(dtype: str) -> np.ndarray:
    info = np.finfo(dtype)
    nan = np.array([np.nan], dtype)
    payload = nan.view(_BITS[info.bits // 8]) | 0x5  # a NaN with a payload, and its negative
    neg = -np.array(payload.view(dtype))
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, *payload.view(dtype), *neg, 1.0, -1.0, 0.5, -0.5, 1.5,
                     -2.5, 2.5, info.tiny, -info.tiny, info.smallest_subnormal, -info.smallest_subnormal,
                     info.smallest_subnormal * 3, info.max, -info.max, info.eps, 1e-30, 1e30], dtype)


def _values(dtype: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Special values (each paired with each other value across operands by the permutations), random bit
    patterns (every class of float) and ordinary magnitudes."""
    bits = rng.integers(0, np.iinfo(_BITS[np.dtype(dtype).itemsize]).max, n // 4, dtype=_BITS[np.dtype(dtype).itemsize])
    special = np.tile(_special(dtype), n // 4 // len(_special(dtype)) + 1)[: n // 4]
    ordinary = rng.uniform(-10, 10, n - 2 * (n // 4)).astype(dtype)
    return rng.permutation(np.concatenate([special, bits.view(dtype), ordinary]))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """The same bits everywhere but in NaNs, and NaN at the same places. A NaN's payload and sign are not
    compared: when two NaNs meet in one op, which one comes out depends on the operand order the machine code
    happens to use, and numpy itself differs there between layouts (np.multiply of two arrays keeps the first
    operand's NaN, of an array and a broadcast scalar the scalar's)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    nan = np.isnan(a)
    return np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan].view(_BITS[a.itemsize]),
                                                                b[~nan].view(_BITS[b.itemsize]))


def _run(program: Program, inputs: list[np.ndarray], fuse: bool, monkeypatch) -> tuple[list[np.ndarray], Any]:
    monkeypatch.setattr(fusion, "MIN_ELEMENTS", 1 if fuse else 1 << 62)
    drv = SimDriver()
    exe = drv.compile(program)
    fused = [s for s in exe.payload.steps if isinstance(s, FusedStep)]
    assert bool(fused) == fuse, [type(s).__name__ for s in exe.payload.steps]
    outs = [np.empty(v.shape, v.dtype) for v in program.outputs]
    with np.errstate(all="ignore"):
        drv.execute(exe, inputs, outs)
    return outs, drv


def _both(program: Program, inputs: list[np.ndarray], monkeypatch) -> None:
    plain, d0 = _run(program, inputs, False, monkeypatch)
    fused, d1 = _run(program, inputs, True, monkeypatch)
    for p, f in zip(plain, fused):
        assert _same(p, f), (program.name, p[p.view(_BITS[p.itemsize]) != f.view(_BITS[f.itemsize])][:5])
    s0, s1 = d0.stats(), d1.stats()
    for key in ("host_seconds", "wall_seconds"):  # the host's own time; the rest is the simulated timeline
        s0.pop(key), s1.pop(key)
    assert s0 == s1


def _special_inputs(fn: str, dtype: str, rng: np.random.Generator) -> list[np.ndarray]:
    edge = _special(dtype)
    if fn in SPECIAL_BINARY[4:]:  # polynomials: x anywhere, degrees small (the loop runs n times)
        n = np.concatenate([rng.integers(-3, 40, N - 4), [np.nan, np.inf, -np.inf, 3.5]]).astype(dtype)
        return [_values(dtype, N, rng), rng.permutation(n)]
    if fn in ("zeta", "igamma", "igammac", "polygamma"):
        a = np.concatenate([rng.uniform(0, 12, N - len(edge)), edge]).astype(dtype)
        if fn == "polygamma":
            a = np.concatenate([rng.integers(0, 5, N - 3), [np.nan, -1, 0.5]]).astype(dtype)
        x = np.concatenate([rng.uniform(-5, 40, N - len(edge)), edge]).astype(dtype)
        return [rng.permutation(a), rng.permutation(x)]
    return [np.concatenate([_values(dtype, N - 200, rng), rng.uniform(-200, 200, 200).astype(dtype)])]


def _special_program(fn: str, dtype: str) -> Program:
    b = Builder()
    vals = [b.input((N,), dtype) for _ in range(2 if fn in SPECIAL_BINARY else 1)]
    if fn in ("digamma", "lgamma"):
        outs = b.emit(fn, vals)
    else:
        outs = b.emit("special_binary" if fn in SPECIAL_BINARY else "special_unary", vals, function=fn)
    return b.finish(outs, name=fn)


FLOAT64 = ("bessel_j0", "bessel_k1e", "igamma", "igammac", "chebyshev_t", "hermite_h", "digamma", "ndtri")


@pytest.mark.parametrize("fn", ["digamma", "lgamma", *SPECIAL_UNARY, *SPECIAL_BINARY])
def test_special_functions_fused_are_bit_identical_float32(fn, monkeypatch):
    rng = np.random.default_rng(sum(map(ord, fn)))
    _both(_special_program(fn, "float32"), _special_inputs(fn, "float32", rng), monkeypatch)


@pytest.mark.parametrize("fn", FLOAT64)
def test_special_functions_fused_are_bit_identical_float64(fn, monkeypatch):
    rng = np.random.default_rng(sum(map(ord, fn)) + 1)
    _both(_special_program(fn, "float64"), _special_inputs(fn, "float64", rng), monkeypatch)


_FUSED_UNARY = ("abs", "negate", "sqrt", "floor", "ceil", "trunc", "round_nearest_even", "square", "reciprocal",
                "rsqrt", "erf", "erfc")
_FUSED_BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "copysign")
_NUMPY_ONLY = ("exponential", "log", "sine", "tanh")  # transcendentals: numpy's own routines, never fused


def _chain(dtype: str, rng: np.random.Generator, length: int, shape=(N,)) -> Program:
    """A random element-wise DAG over three inputs: every fused op kind, compares, selects, bool logic,
    is_finite, converts through the other float dtype and bool, and a few transcendentals between."""
    b = Builder()
    vals = [b.input(shape, dtype) for _ in range(3)]
    preds = []
    other = "float64" if dtype == "float32" else "float32"

    def pick():  # one of the recent values
        return vals[int(rng.integers(max(0, len(vals) - 6), len(vals)))]

    for k in range(length):
        kind = k % 9
        if kind == 0:
            vals += b.emit(_FUSED_UNARY[int(rng.integers(len(_FUSED_UNARY)))], [pick()])
        elif kind in (1, 2):
            vals += b.emit(_FUSED_BINARY[int(rng.integers(len(_FUSED_BINARY)))], [pick(), pick()])
        elif kind == 3:
            preds += b.emit("compare", [pick(), pick()], direction=str(rng.choice(["LT", "LE", "EQ", "NE", "GE"])))
            preds += b.emit("is_finite", [pick()])
        elif kind == 4 and len(preds) >= 2:
            p = b.emit(str(rng.choice(["and", "or", "xor"])), [preds[-1], preds[-2]])[0]
            preds += b.emit("not", [p])
        elif kind == 5 and preds:
            vals += b.emit("select", [preds[-1], pick(), pick()])
        elif kind == 6:
            wide = b.emit("convert", [pick()], dtype=other)[0]
            vals += b.emit("convert", [b.emit("multiply", [wide, wide])[0]], dtype=dtype)
            flag = b.emit("convert", [pick()], dtype="bool")[0]
            vals += b.emit("convert", [flag], dtype=dtype)
        elif kind == 7:
            c = b.emit("constant", [], value=float(rng.choice([0.5, -0.0, 3.0, 1e-40, np.inf])), shape=shape,
                       dtype=dtype)[0]
            vals += b.emit("add", [pick(), c])
        elif kind == 8 and k % 18 == 8:
            vals += b.emit(_NUMPY_ONLY[int(rng.integers(len(_NUMPY_ONLY)))], [pick()])
    return b.finish([vals[-1], vals[-5], *preds[-1:]], name="chain")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", range(3))
def test_random_chains_fused_are_bit_identical(dtype, seed, monkeypatch):
    rng = np.random.default_rng(seed)
    program = _chain(dtype, rng, 60)
    _both(program, [_values(dtype, N, rng) for _ in range(3)], monkeypatch)


def test_transcendentals_stay_numpy_steps(monkeypatch):
    monkeypatch.setattr(fusion, "MIN_ELEMENTS", 1)
    program = _special_program("bessel_j0", "float32")
    exe = SimDriver().compile(program)
    inside = {s.op.name for f in exe.payload.steps if isinstance(f, FusedStep) for s in f.steps}
    outside = {s.op.name for s in exe.payload.steps if not isinstance(s, FusedStep)}
    assert {"sine", "cosine"} <= outside and not inside & {"sine", "cosine", "log"}
    # (float32 exp may fuse: exp_numpy's port of np.exp, tests/test_sim_exp_numpy.py)
    assert "np.sin" not in "".join(f.source for f in exe.payload.steps if isinstance(f, FusedStep))


def test_broadcast_and_strided_operands(monkeypatch):
    b = Builder()
    x = b.input((64, 64), "float32")
    row = b.input((64,), "float32")
    r = b.emit("broadcast_in_dim", [row], shape=(64, 64), broadcast_dimensions=(1,))[0]
    y = x
    for name in ("multiply", "add", "subtract", "divide", "maximum"):
        y = b.emit(name, [y, r])[0]
    program = b.finish([y])
    rng = np.random.default_rng(5)
    big = _values("float32", 128 * 64, rng).reshape(64, 128)
    inputs = [big[:, ::2], _values("float32", 64, rng)]  # a strided view, and a row broadcast inside the program
    assert not inputs[0].flags.c_contiguous
    _both(program, inputs, monkeypatch)


def test_wrong_operand_dtype_runs_the_steps(monkeypatch):
    """An operand the loop was not compiled for (here a float64 buffer for a float32 input) gives what the
    steps give, through the steps."""
    program = _chain("float32", np.random.default_rng(7), 30)
    rng = np.random.default_rng(8)
    inputs = [_values("float64", N, rng) for _ in range(3)]
    plain, _ = _run(program, inputs, False, monkeypatch)
    fused, _ = _run(program, inputs, True, monkeypatch)
    assert all(_same(p, f) for p, f in zip(plain, fused))


def test_thresholds_keep_small_and_short_programs_unfused():
    drv = SimDriver()
    small = _special_program("bessel_j0", "float32")  # N elements: below MIN_ELEMENTS
    assert not any(isinstance(s, FusedStep) for s in drv.compile(small).payload.steps)
    b = Builder()
    x = b.input((fusion.MIN_ELEMENTS,), "float32")
    y = x
    for _ in range(fusion.MIN_OPS - 1):  # a short chain over many elements
        y = b.emit("add", [y, x])[0]
    assert not any(isinstance(s, FusedStep) for s in drv.compile(b.finish([y])).payload.steps)
    y = b.emit("multiply", [y, x])[0]
    assert any(isinstance(s, FusedStep) for s in drv.compile(b.finish([y])).payload.steps)


def test_fused_cost_is_the_programs(monkeypatch):
    program = _special_program("igamma", "float32")
    costs = []
    for limit in (1 << 62, 1):
        monkeypatch.setattr(fusion, "MIN_ELEMENTS", limit)
        costs.append(SimDriver().compile(program).meta["cost"])
    assert costs[0] == costs[1]


def test_compiled_loops_are_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHTPU_CACHE_DIR", str(tmp_path))
    source = (f"# {tmp_path}\nimport numba\n\n\n@numba.njit(cache=True, error_model='numpy')\n"
              "def fused(n, a0, r0):\n    for i in range(n):\n        r0[i] = a0[i] + a0[i]\n")
    fn = fusion.compile_source(source)
    assert fusion.compile_source(source) is fn
    x = np.arange(5, dtype=np.float32)
    out = np.empty_like(x)
    fn(5, x, out)
    assert np.array_equal(out, x + x)
    folder = tmp_path / "sim_fusion"
    assert len(list(folder.glob("fused_*.py"))) == 1
    assert list(folder.glob("__pycache__/fused_*.nbi"))  # numba's index of the machine code it saved


def test_while_body_passing_state_values_on(monkeypatch):
    """A loop whose body hands one state value on as another (a, b = a + b, a; a Fibonacci recurrence) and
    keeps one unchanged: the fused loop updates the state all at once, as the kernel does."""
    from torchtpu.drivers.ir_lowerings import _F, loop

    b = Builder()
    x = _F(b, b.input((N,), "float32"))
    n = _F(b, b.input((N,), "float32"))
    a, prev, k, limit = loop([x, x.like(1.0), x.like(0.0), n], lambda s: s[2] < s[3],
                             lambda s: [s[0] + s[1], s[0], s[2] + 1.0, s[3]], limit=40)
    program = b.finish([a.v, prev.v, k.v, limit.v], name="fib")
    rng = np.random.default_rng(9)
    n_values = np.concatenate([rng.integers(-2, 45, N - 3), [np.nan, np.inf, 0.5]]).astype(np.float32)
    _both(program, [_values("float32", N, rng), rng.permutation(n_values)], monkeypatch)


@pytest.mark.parametrize("n", [7, N + 5])
@pytest.mark.parametrize("lanes", [1, 32])
def test_while_in_lanes_and_per_element(n, lanes, monkeypatch):
    """A while fused both ways (blocks of lanes, fusion_lanes.py, and each element's own loop), over fewer
    elements than a block and over a last block that is not full; the trip limit cuts some elements off."""
    from torchtpu.drivers.ir_lowerings import _F, loop
    from torchtpu.drivers.sim import fusion_lanes

    monkeypatch.setattr(fusion_lanes, "LANES", lanes)
    b = Builder()
    x = _F(b, b.input((n,), "float32"))
    m = _F(b, b.input((n,), "float32"))
    y = x * 0.5 + 1.0
    a, prev, k, _ = loop([y, x.like(1.0), x.like(0.0), m], lambda s: s[2] < s[3],
                         lambda s: [s[0] + s[1], s[0], s[2] + 1.0, s[3]], limit=30)
    program = b.finish([(a * y - k).v, prev.v, (y + x).v], name="fib_lanes")
    rng = np.random.default_rng(n + lanes)
    m_values = np.concatenate([rng.integers(-2, 45, n - 3), [np.nan, np.inf, 0.5]]).astype(np.float32)
    _both(program, [_values("float32", n, rng) if n >= 8 else rng.uniform(-3, 3, n).astype(np.float32),
                    rng.permutation(m_values)], monkeypatch)
    fused = [s for s in SimDriver().compile(program).payload.steps if isinstance(s, FusedStep)]
    assert ("for base in range(0, n," in fused[0].source) == (lanes > 1)


@pytest.mark.parametrize("fn", ["igamma", "igammac"])
def test_igamma_runs_its_loops_fused_and_each_transcendental_once(fn, monkeypatch):
    """The structure igamma's host speed rests on (benchmarks/special.py): its three expansion loops (P's series,
    Q's series, Q's continued fraction; drivers/ir_lowerings_igamma.py) and the two one-trip loops that confine
    the long polynomials (Temme's sum, the Lanczos rational) to the elements that read them run inside fused
    groups in blocks of lanes, and lgamma(a) is computed once for all of them (one lgamma's sine); the few
    transcendentals outside the loops run as numpy steps and the rest is fused."""
    monkeypatch.setattr(fusion, "MIN_ELEMENTS", 1)
    program = _special_program(fn, "float32")
    assert sum(op.name == "while" for op in program.ops) == 5
    steps = SimDriver().compile(program).payload.steps
    fused = [s for s in steps if isinstance(s, FusedStep)]
    loops = [f for f in fused if any(s.op.name == "while" for s in f.steps)]
    assert sum(s.op.name == "while" for f in loops for s in f.steps) == 5
    assert all(f.source.count("for base in range(0, n,") == 1 for f in loops)
    rest = [s.op.name for s in steps if not isinstance(s, FusedStep)]
    assert "while" not in rest and rest.count("sine") == 1 and len(rest) <= 40, rest
