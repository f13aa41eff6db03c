"""drivers/sim/fast.py: each specialized step returns exactly what the generic kernel returns (values, dtype and
shape, special values included), and the steps it must leave to the generic kernel get no fast path."""

from __future__ import annotations

import numpy as np
import pytest
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.sim.fast import specialize
from torchtpu.drivers.sim.kernels import KERNELS, NP_DTYPES

SPECIALS = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-39, 3e38, -7.0])


def _operand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype in ("int64", "int32", "int16", "int8"):
        return rng.integers(-50, 50, size=shape).astype(NP_DTYPES[dtype])
    if dtype == "uint8":
        return rng.integers(0, 200, size=shape).astype(np.uint8)
    x = rng.standard_normal(shape).astype(NP_DTYPES[dtype]) * 3
    flat = x.reshape(-1)
    flat[: min(len(flat), len(SPECIALS))] = SPECIALS[: len(flat)]
    return x


def _op(name, in_types, **attrs):
    b = Builder()
    ins = [b.input(shape, dtype) for shape, dtype in in_types]
    outs = b.emit(name, ins, **attrs)
    return b.finish(outs).ops[-1]


CASES = [
    *[(name, [((4, 5), d), ((4, 5), d)], {}) for name in ("add", "subtract", "multiply", "maximum", "minimum")
      for d in ("float32", "float64", "int64", "int32")],
    *[(name, [((4, 5), "float32"), ((4, 5), "float32")], {}) for name in ("divide", "atan2", "hypot", "copysign")],
    *[(name, [((3, 7), d)], {}) for name in ("exponential", "log", "sqrt", "rsqrt", "tanh", "logistic", "erf",
                                               "sine", "reciprocal", "log_plus_one") for d in ("float32", "float64")],
    *[(name, [((3, 7), d)], {}) for name in ("abs", "negate", "square", "sign") for d in ("float32", "int64")],
    *[("compare", [((6,), d), ((6,), d)], {"direction": dr}) for dr in ("EQ", "NE", "LT", "LE", "GT", "GE")
      for d in ("float32", "int64")],
    ("select", [((2, 3), "bool"), ((2, 3), "float32"), ((2, 3), "float32")], {}),
    ("reshape", [((2, 6), "float32")], {"shape": (3, 4)}),
    ("broadcast_in_dim", [((3, 1), "float32")], {"shape": (2, 3, 4), "broadcast_dimensions": (1, 2)}),
    ("transpose", [((2, 3, 4), "float32")], {"permutation": (2, 0, 1)}),
    *[("dot_general", [((2, 5, 3), "float32"), ((2, 4, 3), "float32")],
       {"lhs_batch": (0,), "rhs_batch": (0,), "lhs_contract": (2,), "rhs_contract": (2,), "precision": p,
        "out_dtype": "float32"})
      for p in ("DEFAULT", "HIGH", "HIGHEST")],
    ("dot_general", [((4, 5), "float32"), ((5, 3), "float32")],  # no permutation
     {"lhs_batch": (), "rhs_batch": (), "lhs_contract": (1,), "rhs_contract": (0,), "precision": "DEFAULT",
      "out_dtype": "float32"}),
    ("dot_general", [((2, 300, 7), "float32"), ((2, 300, 3), "float32")],  # K over three 128-row tiles
     {"lhs_batch": (0,), "rhs_batch": (0,), "lhs_contract": (1,), "rhs_contract": (1,), "precision": "DEFAULT",
      "out_dtype": "float32"}),
    ("dot_general", [((6, 7), "float32"), ((6, 3), "float32")],
     {"lhs_batch": (), "rhs_batch": (), "lhs_contract": (0,), "rhs_contract": (0,), "precision": "DEFAULT",
      "out_dtype": "float32"}),
    *[("reduce", [((4, 5, 6), d)], {"kind": k, "dimensions": dims}) for k in ("sum", "prod", "max", "min")
      for d in ("float32", "int64") for dims in ((2,), (0, 2))],
    *[("reduce", [((4, 5), "int32")], {"kind": k, "dimensions": (1,)}) for k in ("max", "min")],
    # 0-d results: a 0-d array, as the generic kernel returns
    ("add", [((), "float32"), ((), "float32")], {}),
    ("divide", [((), "float32"), ((), "float32")], {}),
    *[("reduce", [((7,), d)], {"kind": "sum", "dimensions": (0,)}) for d in ("float32", "int64")],
    ("reshape", [((1, 1), "float32")], {"shape": ()}),
    # boolean reductions, including over an empty dimension (the identity)
    *[("reduce", [(shape, "bool")], {"kind": k, "dimensions": dims}) for k in ("and", "or")
      for shape, dims in (((2, 4, 3), (2,)), ((2, 4, 3), (0, 1)), ((3, 0), (1,)), ((5,), (0,)))],
    *[("convert", [((3, 4), a)], {"dtype": b}) for a, b in (
        ("bool", "int64"), ("bool", "float32"), ("bool", "int32"), ("int64", "float32"), ("int32", "int64"),
        ("int64", "int32"), ("int64", "int8"), ("uint8", "int64"), ("float32", "float64"), ("float64", "float32"),
        ("float32", "bool"), ("int64", "bool"), ("bool", "bool"), ("float32", "float32"), ("int16", "float32"))],
    *[("cumulative", [((3, 5), d)], {"kind": k, "dimension": dim}) for d in ("float32", "int64", "int32")
      for k in ("sum", "prod") for dim in (0, 1)],
    *[("cumulative", [((3, 5), d)], {"kind": k, "dimension": 1}) for d in ("int64", "int32") for k in ("max", "min")],
]


@pytest.mark.parametrize("name,in_types,attrs", CASES, ids=[f"{c[0]}-{c[1][-1][1]}-{i}" for i, c in enumerate(CASES)])
def test_fast_step_equals_the_generic_kernel(name, in_types, attrs):
    op = _op(name, in_types, **attrs)
    fast = specialize(op)
    assert fast is not None, f"{name} {in_types} has no fast path"
    args = [_operand(shape, dtype, i) if dtype != "bool" else np.random.default_rng(i).random(shape) > 0.5
            for i, (shape, dtype) in enumerate(in_types)]
    with np.errstate(all="ignore"):
        want = np.asarray(KERNELS[name](op, list(args))[0])
        got = fast(*args)
    assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape
    assert got.strides == want.strides and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("name,in_types,attrs", [
    ("add", [((4,), "bfloat16"), ((4,), "bfloat16")], {}),      # widened to f32, rounded on store
    ("reduce", [((4, 5), "int32")], {"kind": "sum", "dimensions": (1,)}),  # numpy sums int32 in int64
    ("reduce", [((4, 5), "int32")], {"kind": "prod", "dimensions": (1,)}),
    ("reduce", [((4, 5), "bool")], {"kind": "sum", "dimensions": (1,)}),
    ("convert", [((4,), "float32")], {"dtype": "int64"}),      # truncates toward zero first
    ("convert", [((4,), "bfloat16")], {"dtype": "float32"}),
    ("convert", [((4,), "float32")], {"dtype": "bfloat16"}),   # rounds to nearest even, flushes subnormals
    ("cumulative", [((4,), "float32")], {"kind": "max", "dimension": 0}),  # NaN propagates forward
    ("divide", [((4,), "int64"), ((4,), "int64")], {}),         # integer division checks for zero
    ("exponential", [((4,), "bfloat16")], {}),
    ("reduce", [((0, 3), "float32")], {"kind": "max", "dimensions": (0,)}),  # the identity of an empty max
    ("broadcast_in_dim", [((3, 2), "float32")], {"shape": (2, 3), "broadcast_dimensions": (1, 0)}),  # transposes
])
def test_steps_left_to_the_generic_kernel(name, in_types, attrs):
    assert specialize(_op(name, in_types, **attrs)) is None


def _run(program, args):
    from torchtpu.drivers.sim.driver import SimDriver

    drv = SimDriver()
    exe = drv.compile(program)
    outs = [np.empty(v.shape, NP_DTYPES[v.dtype]) for v in program.outputs]
    drv.execute(exe, args, outs)
    return outs, exe.payload


def test_broadcasts_read_only_by_ufuncs_are_left_to_numpy():
    # x * broadcast(s) + broadcast(bias): both broadcasts elided; a broadcast that is a program output, and one
    # whose readers would all be elided (broadcast(s) + broadcast(s)), keep their full shape
    b = Builder()
    x, s, bias = b.input((3, 4), "float32"), b.input((), "float32"), b.input((4,), "float32")
    sb = b.emit("broadcast_in_dim", [s], shape=(3, 4), broadcast_dimensions=())[0]
    bb = b.emit("broadcast_in_dim", [bias], shape=(3, 4), broadcast_dimensions=(1,))[0]
    y = b.emit("add", [b.emit("multiply", [x, sb])[0], bb])[0]
    s1 = b.emit("broadcast_in_dim", [s], shape=(3, 4), broadcast_dimensions=())[0]
    s2 = b.emit("broadcast_in_dim", [s], shape=(3, 4), broadcast_dimensions=())[0]
    twice = b.emit("add", [s1, s2])[0]
    shown = b.emit("broadcast_in_dim", [bias], shape=(3, 4), broadcast_dimensions=(1,))[0]
    program = b.finish([y, twice, shown])
    args = [_operand((3, 4), "float32", 0), np.array(1.5, np.float32), _operand((4,), "float32", 1)]
    (got_y, got_twice, got_shown), plan = _run(program, args)
    with np.errstate(all="ignore"):
        assert got_y.tobytes() == (args[0] * np.float32(1.5) + args[2]).tobytes()
    assert got_twice.shape == (3, 4) and (got_twice == 3.0).all()
    assert (got_shown == args[2]).all()
    kinds = [(st.op.name, st.fast(np.zeros(st.op.inputs[0].shape, np.float32)).shape)
             for st in plan.steps if st.op.name == "broadcast_in_dim"]
    assert sorted(kinds) == sorted([("broadcast_in_dim", (1, 1)), ("broadcast_in_dim", (1, 4)),
                                    ("broadcast_in_dim", (1, 1)), ("broadcast_in_dim", (3, 4)),
                                    ("broadcast_in_dim", (3, 4))])


@pytest.mark.parametrize("m,k,n", [(8, 8, 8), (3, 200, 5), (130, 7, 1), (1, 7, 130)])
@pytest.mark.parametrize("mode", [None, "exact", "fast"])
def test_plain_matmul_fast_path_equals_the_generic_kernel_for_any_layout_and_mode(m, k, n, mode):
    from torchtpu.sim import mxu

    op = _op("dot_general", [((m, k), "float32"), ((k, n), "float32")], lhs_batch=(), rhs_batch=(),
             lhs_contract=(1,), rhs_contract=(0,), precision="DEFAULT", out_dtype="float32")
    fast = specialize(op)
    a, b = _operand((m, k), "float32", 1), _operand((k, n), "float32", 2)
    def strided(x):  # every other column of a wider array: neither C- nor F-contiguous
        wide = np.zeros((x.shape[0], 2 * x.shape[1]), np.float32)
        wide[:, ::2] = x
        return wide[:, ::2]

    layouts = [(a, b), (np.asfortranarray(a), np.asfortranarray(b)), (strided(a), strided(b))]
    mxu.set_mode(mode)
    try:
        for x, y in layouts:
            with np.errstate(all="ignore"):
                want = np.asarray(KERNELS["dot_general"](op, [x, y])[0])
                got = fast(x, y)
            assert got.shape == want.shape and got.dtype == want.dtype and got.tobytes() == want.tobytes()
    finally:
        mxu.set_mode(None)
