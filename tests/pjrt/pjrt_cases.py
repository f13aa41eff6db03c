"""Differential cases: for each IR op, small Programs with inputs in the op's domain, run by both drivers.

`CASES[op]` is a list of Case(name, variants, tol): every variant (inputs + attrs) of one op goes into ONE Program
(one XLA compile per op, which keeps the suite fast on two cores). Integer, bool and data-movement results must be
equal; float results fp32-close (the sim runs dot/conv at HIGHEST, 6 bf16 passes, about fp32).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
from pjrt_case_regions import array_halvings, halvings
from torchtpu.drivers import ir_ops
from torchtpu.drivers.ir import Builder, Program

BF16 = np.dtype(ml_dtypes.bfloat16)
IR_DTYPE = {np.dtype(np.float32): "float32", BF16: "bfloat16", np.dtype(np.float16): "float16",
            np.dtype(np.float64): "float64", np.dtype(np.int64): "int64", np.dtype(np.int32): "int32",
            np.dtype(np.int16): "int16", np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8",
            np.dtype(np.bool_): "bool", np.dtype(np.complex64): "complex64",
            np.dtype(np.complex128): "complex128", np.dtype(ml_dtypes.float8_e4m3fn): "float8_e4m3fn",
            np.dtype(ml_dtypes.float8_e5m2): "float8_e5m2"}

RNG = np.random.default_rng(1234)


@dataclass
class Variant:
    inputs: list[np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Case:
    op: str
    variants: list[Variant]
    rtol: float = 2e-6
    atol: float = 1e-6

    def program(self) -> tuple[Program, list[np.ndarray]]:
        b = Builder()
        outs, inputs = [], []
        for v in self.variants:
            vals = [b.input(a.shape, IR_DTYPE[a.dtype]) for a in v.inputs]
            inputs += v.inputs
            outs += b.emit(self.op, vals, **v.attrs)
        return b.finish(outs, name=f"case_{self.op}"), inputs


def f(shape: Sequence[int], lo: float = -3, hi: float = 3, dtype: Any = np.float32) -> np.ndarray:
    return RNG.uniform(lo, hi, shape).astype(dtype)


def i(shape: Sequence[int], lo: int = -20, hi: int = 20, dtype: Any = np.int32) -> np.ndarray:
    return RNG.integers(lo, hi, shape, endpoint=True).astype(dtype)


def nonzero(shape: Sequence[int], lo: int = -9, hi: int = 9, dtype: Any = np.int32) -> np.ndarray:
    x = i(shape, lo, hi, dtype)
    x[x == 0] = 3
    return x


def boolean(shape: Sequence[int]) -> np.ndarray:
    return RNG.random(shape) < 0.5


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan, 1e-3, 1e3], np.float32)
PAIR_A = np.array([-2, -2, 0, 0, 2, -1, np.inf, -np.inf, np.nan, 1, -8, 0.5, -7.5, 7.5], np.float32)
PAIR_B = np.array([3, 0.5, -1, 0, 2, np.inf, -1, 3, 0, np.nan, 1 / 3, -np.inf, 2, -2], np.float32)

# (domain lo, hi) of each float unary op, and ops whose ulp error in XLA's f32 approximations is larger
_UNARY_DOMAIN = {
    "log": (0.05, 20), "log_plus_one": (-0.9, 20), "sqrt": (0, 20), "rsqrt": (0.05, 20), "log2": (0.05, 20),
    "log10": (0.05, 20), "acosh": (1.01, 10), "atanh": (-0.95, 0.95), "asin": (-0.99, 0.99),
    "acos": (-0.99, 0.99), "erfinv": (-0.99, 0.99), "tan": (-1.3, 1.3), "reciprocal": (0.1, 5),
    "lgamma": (0.05, 8), "digamma": (0.05, 8), "erfc": (-3, 9), "exponential": (-10, 10), "exp2": (-10, 10),
    "sinh": (-5, 5), "cosh": (-5, 5),
}
_UNARY_TOL = {"lgamma": (2e-5, 2e-5), "digamma": (2e-5, 2e-5), "erfinv": (1e-5, 1e-6), "tan": (1e-5, 1e-6),
              "cbrt": (1e-6, 1e-6), "acosh": (1e-5, 1e-6), "atanh": (1e-5, 1e-6), "asinh": (1e-5, 1e-6),
              "exp2": (1e-5, 1e-6), "log2": (1e-5, 1e-6), "log10": (1e-5, 1e-6), "sinh": (1e-5, 1e-6),
              "cosh": (1e-5, 1e-6), "exponential_minus_one": (1e-5, 1e-6), "log_plus_one": (1e-5, 1e-6),
              "erf": (1e-5, 1e-6), "erfc": (1e-5, 1e-6), "tanh": (1e-5, 1e-6), "logistic": (1e-5, 1e-6),
              "exponential": (1e-5, 1e-6),
              "sine": (1e-5, 1e-6), "cosine": (1e-5, 1e-6), "atan": (1e-5, 1e-6), "asin": (1e-5, 1e-6),
              "acos": (1e-5, 1e-6), "log": (1e-5, 1e-6)}
# Every unary op of the IR gets a case (a new one needs no edit here): float math, and the ops of any dtype.
FLOAT_ONLY_UNARY = tuple(n for n in ir_ops.UNARY if n not in ir_ops.UNARY_VPU) + tuple(ir_ops.LOWERED_UNARY)
ANY_UNARY = tuple(sorted(ir_ops.UNARY_VPU - {"not"}))


def _unary_case(name: str) -> Case:
    lo, hi = _UNARY_DOMAIN.get(name, (-3, 3))
    vs = [Variant([f((4, 5), lo, hi)]), Variant([f((7,), lo, hi, BF16)]), Variant([f((3, 2), lo, hi, np.float16)]),
          Variant([f((6,), lo, hi, np.float64)])]
    if name in ("lgamma", "digamma"):
        vs.append(Variant([np.array([-0.5, -1.5, -2.25, -3.7, 0.0, -1.0, -2.0, 1.0, 2.0], np.float32)]))
    if name in ("exponential", "log", "sqrt", "tanh", "logistic", "erf", "atan", "reciprocal", "sine"):
        vs.append(Variant([SPECIAL.copy()]))
    if name in ("exponential", "sqrt", "tanh", "logistic", "sine"):
        vs.append(Variant([i((5,), 0, 4)]))  # integer inputs: computed in f32, truncated back
    rtol, atol = _UNARY_TOL.get(name, (2e-6, 1e-6))
    return Case(name, vs, rtol, atol)


def _any_unary_case(name: str) -> Case:
    vs = [Variant([f((4, 5), -4, 4)]), Variant([f((6,), -4, 4, BF16)]), Variant([f((5,), -4, 4, np.float64)]),
          Variant([i((9,), -9, 9)]), Variant([i((9,), -9, 9, np.int64)]), Variant([i((5,), -9, 9, np.int8)]),
          Variant([np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)])]
    if name in ("abs", "floor", "trunc"):
        vs.append(Variant([boolean((6,))]))
    if name in ("abs", "sign", "square"):
        vs.append(Variant([i((6,), 0, 15, np.uint8)]))
    return Case(name, vs)


def _binary_case(name: str) -> Case:
    a, b = (4, 5), (4, 5)
    vs: list[Variant] = []
    if name in ("and", "or", "xor"):
        vs = [Variant([i(a), i(b)]), Variant([i((6,), 0, 255, np.uint8), i((6,), 0, 255, np.uint8)]),
              Variant([boolean((7,)), boolean((7,))]), Variant([i((5,), dtype=np.int64), i((5,), dtype=np.int64)])]
        return Case(name, vs)
    if name in ("shift_left", "shift_right_arithmetic"):
        vs = [Variant([i(a, -100, 100), i(b, 0, 30)]), Variant([i((6,), -100, 100, np.int8), i((6,), 0, 7, np.int8)]),
              Variant([i((6,), 0, 255, np.uint8), i((6,), 0, 7, np.uint8)]),
              Variant([i((5,), -1000, 1000, np.int64), i((5,), 0, 62, np.int64)])]
        return Case(name, vs)
    if name in ("divide", "remainder", "fmod", "floor_divide"):
        vs = [Variant([i(a, -50, 50), nonzero(b)]),
              Variant([i((8,), -50, 50, np.int64), nonzero((8,), dtype=np.int64)]),
              Variant([i((6,), 0, 200, np.uint8), i((6,), 1, 9, np.uint8)]),
              Variant([f(a, -10, 10), f(b, 0.5, 3) * np.where(boolean(b), 1, -1).astype(np.float32)]),
              Variant([f((6,), -10, 10, BF16), f((6,), 0.5, 3, BF16)]),
              Variant([f((5,), -10, 10, np.float64), f((5,), -3, -0.5, np.float64)])]
        if name == "divide":
            vs.append(Variant([SPECIAL.copy(), SPECIAL[::-1].copy()]))
        vs.append(Variant([PAIR_A.copy(), PAIR_B.copy()]))
        return Case(name, vs, 1e-6, 1e-6)
    if name == "power":
        vs = [Variant([f(a, 0.1, 3), f(b, -2, 2)]), Variant([i((7,), -5, 5), i((7,), 0, 6)]),
              Variant([f((6,), 0.1, 3, BF16), f((6,), -2, 2, BF16)]),
              Variant([f((5,), 0.1, 3, np.float64), f((5,), -2, 2, np.float64)]),
              Variant([PAIR_A.copy(), PAIR_B.copy()])]
        return Case(name, vs, 1e-5, 1e-6)
    float_only = name in ("atan2", "nextafter", "hypot", "copysign", "xlogy")
    vs = [Variant([f(a), f(b)]), Variant([f((6,), dtype=BF16), f((6,), dtype=BF16)]),
          Variant([f((5,), dtype=np.float16), f((5,), dtype=np.float16)]),
          Variant([f((5,), dtype=np.float64), f((5,), dtype=np.float64)])]
    if name == "xlogy":
        vs = [Variant([f(a, 0, 3), f(b, 0.1, 3)]), Variant([np.array([0, 0, 1, 2], np.float32),
                                                           np.array([0, np.nan, 0, np.inf], np.float32)])]
    if not float_only:
        vs += [Variant([i((7,)), i((7,))]), Variant([i((5,), dtype=np.int64), i((5,), dtype=np.int64)]),
               Variant([i((5,), -9, 9, np.int8), i((5,), -9, 9, np.int8)])]
        if name in ("add", "multiply", "maximum", "minimum"):
            vs.append(Variant([boolean((6,)), boolean((6,))]))
        if name in ("maximum", "minimum", "add", "multiply", "subtract"):
            vs.append(Variant([SPECIAL.copy(), SPECIAL[::-1].copy()]))
    else:
        vs.append(Variant([SPECIAL.copy(), SPECIAL[::-1].copy()]))
        vs.append(Variant([PAIR_A.copy(), PAIR_B.copy()]))
    return Case(name, vs, 2e-6, 1e-6)


def _build_cases() -> dict[str, list[Case]]:
    c: dict[str, list[Case]] = {}
    for name in FLOAT_ONLY_UNARY:
        c[name] = [_unary_case(name)]
    for name in ANY_UNARY:
        c[name] = [_any_unary_case(name)]
    c["not"] = [Case("not", [Variant([boolean((7,))]), Variant([i((6,))]), Variant([i((5,), 0, 255, np.uint8)])])]
    for name in ir_ops.BINARY:
        c[name] = [_binary_case(name)]
    c["is_finite"] = [Case("is_finite", [Variant([SPECIAL.copy()]), Variant([SPECIAL.astype(BF16)]),
                                         Variant([i((4,))])])]
    c["compare"] = [Case("compare", [Variant([x, y], {"direction": d}) for d in ir_ops.COMPARE_DIRECTIONS
                                     for x, y in ((SPECIAL.copy(), SPECIAL[::-1].copy()), (i((6,)), i((6,))),
                                                  (i((6,), 0, 255, np.uint8), i((6,), 0, 255, np.uint8)),
                                                  (boolean((5,)), boolean((5,))),
                                                  (f((5,), dtype=BF16), f((5,), dtype=BF16)))])]
    c["select"] = [Case("select", [Variant([boolean((3, 4)), f((3, 4)), f((3, 4))]),
                                   Variant([boolean((5,)), i((5,)), i((5,))]),
                                   Variant([boolean((4,)), boolean((4,)), boolean((4,))])])]
    c["clamp"] = [Case("clamp", [Variant([np.full(11, -1, np.float32), SPECIAL.copy(), np.full(11, 2, np.float32)]),
                                 Variant([i((6,), -5, 0), i((6,)), i((6,), 0, 5)]),
                                 Variant([f((5,), -2, -1, BF16), f((5,), dtype=BF16), f((5,), 1, 2, BF16)])])]
    conv_pairs = [("float32", f((3, 4), -300, 300)), ("float32", i((5,), -100, 100)), ("int32", f((3, 4), -50, 50)),
                  ("bfloat16", f((6,), -50, 50)), ("float32", f((6,), dtype=BF16)), ("int8", f((4,), -100, 100)),
                  ("bool", f((5,), -1, 1)), ("float32", boolean((5,))), ("int64", i((5,))), ("bfloat16", i((6,))),
                  ("float16", f((5,), dtype=BF16)), ("float64", f((5,))), ("float32", f((5,), dtype=np.float64)),
                  ("bool", SPECIAL.copy()), ("int32", boolean((4,))), ("uint8", i((5,), 0, 255)),
                  ("float32", i((5,), 0, 255, np.uint8))]
    c["convert"] = [Case("convert", [Variant([x], {"dtype": d}) for d, x in conv_pairs])]
    c["constant"] = [Case("constant", [Variant([], {"value": v, "shape": s, "dtype": d}) for v, s, d in (
        (1.5, (2, 3), "float32"), (math.inf, (2,), "float32"), (-math.inf, (), "float32"), (math.nan, (3,), "float32"),
        (-0.0, (2,), "float32"), (1e-5, (2,), "float32"), (3.3, (4,), "bfloat16"), (1e20, (2,), "float32"),
        (0.1, (3,), "float64"), (7, (2, 2), "int32"), (-3, (3,), "int64"), (True, (2,), "bool"), (0, (2,), "bool"),
        (200, (2,), "uint8"), (2.7, (2,), "int32"), (65504.0, (2,), "float16"), (1, (0, 3), "float32"))])]
    c["iota"] = [Case("iota", [Variant([], {"shape": s, "dtype": d, "dimension": k}) for s, d, k in (
        ((5,), "int64", 0), ((3, 4), "int32", 1), ((3, 4), "float32", 0), ((2, 300), "bfloat16", 1),
        ((4,), "bool", 0))])]
    c["broadcast_in_dim"] = [Case("broadcast_in_dim", [
        Variant([f((3,))], {"shape": (2, 3), "broadcast_dimensions": (1,)}),
        Variant([f((3, 1))], {"shape": (3, 4), "broadcast_dimensions": (0, 1)}),
        Variant([f(())], {"shape": (2, 2), "broadcast_dimensions": ()}),
        Variant([f((4, 3))], {"shape": (3, 2, 4), "broadcast_dimensions": (2, 0)}),
        Variant([i((2,))], {"shape": (2, 2, 3), "broadcast_dimensions": (1,)})])]
    c["reshape"] = [Case("reshape", [Variant([f((2, 6))], {"shape": (3, 4)}), Variant([i((4,))], {"shape": (2, 1, 2)}),
                                     Variant([f((1,))], {"shape": ()})])]
    c["transpose"] = [Case("transpose", [Variant([f((2, 3, 4))], {"permutation": (2, 0, 1)}),
                                         Variant([boolean((3, 2))], {"permutation": (1, 0)})])]
    c["slice"] = [Case("slice", [Variant([f((6, 7))], {"start": (1, 0), "limit": (5, 7), "strides": (2, 3)}),
                                 Variant([i((9,))], {"start": (3,), "limit": (3,), "strides": (1,)}),
                                 Variant([i((9,))], {"start": (8,), "limit": (9,), "strides": (4,)})])]
    c["reverse"] = [Case("reverse", [Variant([f((3, 4))], {"dimensions": (1,)}),
                                     Variant([i((2, 3, 2))], {"dimensions": (0, 2)})])]
    c["concatenate"] = [Case("concatenate", [Variant([f((2, 3)), f((1, 3)), f((4, 3))], {"dimension": 0}),
                                             Variant([i((2, 1)), i((2, 2))], {"dimension": 1}),
                                             Variant([boolean((3,))], {"dimension": 0})])]
    c["pad"] = [Case("pad", [
        Variant([f((3, 4))], {"value": 1.5, "low": (1, 0), "high": (0, 2), "interior": (0, 0)}),
        Variant([f((3, 4))], {"value": 0.0, "low": (-1, 2), "high": (1, -2), "interior": (1, 0)}),
        Variant([i((5,))], {"value": -7, "low": (2,), "high": (-3,), "interior": (2,)}),
        Variant([f((3,), dtype=BF16)], {"value": 3.3, "low": (1,), "high": (1,), "interior": (0,)}),
        Variant([boolean((3,))], {"value": True, "low": (1,), "high": (0,), "interior": (1,)})])]
    red = []
    for kind in ir_ops.REDUCE_KINDS:
        red += [Variant([f((3, 4, 5), 0.5, 1.5)], {"kind": kind, "dimensions": (1,)}),
                Variant([f((3, 4, 5), 0.5, 1.5)], {"kind": kind, "dimensions": (0, 2)}),
                Variant([i((4, 6), -3, 3)], {"kind": kind, "dimensions": (1,)}),
                Variant([i((4, 6), -100, 100, np.int8)], {"kind": kind, "dimensions": (0,)}),
                Variant([boolean((3, 5))], {"kind": kind, "dimensions": (1,)}),
                Variant([f((4, 16), 0.5, 1.5, BF16)], {"kind": kind, "dimensions": (1,)}),
                Variant([f((7,))], {"kind": kind, "dimensions": ()})]
    red += [Variant([np.array([[1, np.nan, 3], [np.inf, -np.inf, 0]], np.float32)], {"kind": k, "dimensions": (1,)})
            for k in ("max", "min", "sum")]
    c["reduce"] = [Case("reduce", red, 1e-5, 1e-6)]
    arg = []
    for kind in ("max", "min"):
        arg += [Variant([f((4, 7))], {"kind": kind, "dimension": 1}),
                Variant([f((4, 7))], {"kind": kind, "dimension": 0}),
                Variant([i((3, 9), -2, 2)], {"kind": kind, "dimension": 1}),
                Variant([np.array([[1, 3, 3, 0], [2, np.nan, 5, np.nan], [-np.inf, -np.inf, 1, np.inf]], np.float32)],
                        {"kind": kind, "dimension": 1}),
                Variant([boolean((3, 6))], {"kind": kind, "dimension": 1}),
                Variant([f((5, 3), dtype=BF16).round()], {"kind": kind, "dimension": 0})]
    c["argreduce"] = [Case("argreduce", arg)]
    cum = []
    for kind in ("sum", "prod", "max", "min"):
        cum += [Variant([f((3, 9), 0.5, 1.5)], {"kind": kind, "dimension": 1}),
                Variant([i((5, 3), -3, 3)], {"kind": kind, "dimension": 0}),
                Variant([f((17,), 0.5, 1.5, BF16)], {"kind": kind, "dimension": 0}),
                Variant([np.array([1, 5, np.nan, 2, 7], np.float32)], {"kind": kind, "dimension": 0}),
                Variant([boolean((6,))], {"kind": kind, "dimension": 0}),
                Variant([f((2, 1))], {"kind": kind, "dimension": 1})]
    c["cumulative"] = [Case("cumulative", cum, 2e-5, 1e-5)]
    srt = []
    for desc in (False, True):
        srt += [Variant([f((4, 9)).round()], {"dimension": 1, "descending": desc, "stable": True}),
                Variant([i((6, 3), -2, 2)], {"dimension": 0, "descending": desc, "stable": True}),
                Variant([np.array([3, np.nan, -0.0, 0.0, -np.inf, np.nan, 1, 3, np.inf], np.float32)],
                        {"dimension": 0, "descending": desc, "stable": False}),
                Variant([boolean((8,))], {"dimension": 0, "descending": desc, "stable": True}),
                Variant([f((7,), dtype=BF16).round()], {"dimension": 0, "descending": desc, "stable": True})]
    c["sort"] = [Case("sort", srt)]
    c["dot_general"] = [Case("dot_general", [
        Variant([f((5, 8)), f((8, 3))], _dot((), (), (1,), (0,))),
        Variant([f((2, 5, 8)), f((2, 8, 3))], _dot((0,), (0,), (2,), (1,))),
        Variant([f((4, 3, 6)), f((6, 3, 2))], _dot((), (), (1, 2), (1, 0))),
        Variant([f((3, 4), dtype=BF16), f((4, 5), dtype=BF16)], _dot((), (), (1,), (0,), out="float32")),
        Variant([f((3, 4), dtype=BF16), f((4, 5), dtype=BF16)], _dot((), (), (1,), (0,), out="bfloat16")),
        Variant([f((3, 4), dtype=np.float16), f((4, 5), dtype=np.float16)], _dot((), (), (1,), (0,), out="float16")),
        Variant([i((3, 4)), i((4, 5))], _dot((), (), (1,), (0,), out="int32")),
        Variant([i((3, 4), dtype=np.int64), i((4, 2), dtype=np.int64)], _dot((), (), (1,), (0,), out="int64")),
        Variant([f((6,)), f((6,))], _dot((), (), (0,), (0,))),
        Variant([f((3, 1, 4)), f((3, 4, 1))], _dot((0,), (0,), (2,), (1,)))], 2e-5, 2e-5)]
    passes = []
    for prec in ("DEFAULT", "HIGH"):
        passes += [Variant([f((5, 40)), f((40, 3))], _dot((), (), (1,), (0,), precision=prec)),
                   Variant([f((2, 5, 8), -300, 300), f((2, 8, 3))], _dot((0,), (0,), (2,), (1,), precision=prec)),
                   Variant([f((3, 4), dtype=BF16), f((4, 5), dtype=BF16)], _dot((), (), (1,), (0,), precision=prec)),
                   Variant([f((3, 4), dtype=np.float16), f((4, 2))], _dot((), (), (1,), (0,), precision=prec))]
    c["dot_general"].append(Case("dot_general", passes, 1e-5, 1e-5))
    c["gather_axis"] = [Case("gather_axis", [
        Variant([f((4, 5)), i((4, 3), -5, 4, np.int64)], {"dimension": 1}),
        Variant([f((4, 5)), i((2, 5), 0, 3, np.int64)], {"dimension": 0}),
        Variant([i((3, 4, 2)), i((3, 2, 2), -4, 3, np.int32)], {"dimension": 1}),
        Variant([f((6,)), i((9,), -6, 5, np.int64)], {"dimension": 0})])]
    c["index_select"] = [Case("index_select", [
        Variant([f((4, 5)), i((7,), -5, 4, np.int64)], {"dimension": 1}),
        Variant([i((4, 3, 2)), i((2,), 0, 3, np.int32)], {"dimension": 0}),
        Variant([f((4, 3, 2), dtype=BF16), i((5,), 0, 2, np.int64)], {"dimension": 1}),
        Variant([f((3,)), np.zeros(0, np.int64)], {"dimension": 0})])]
    sc = []
    for red in ir_ops.SCATTER_REDUCE:
        perm = np.stack([RNG.permutation(5)[:3] for _ in range(4)]).astype(np.int64)  # unique per row
        dup = i((4, 6), -5, 4, np.int64)
        idx = perm if red == "replace" else dup
        sc += [Variant([f((4, 5)), idx, f(idx.shape)], {"dimension": 1, "reduce": red}),
               Variant([i((5, 3), -5, 5), idx.T[:3, :3].copy() if red == "replace" else i((4, 3), 0, 4, np.int64),
                        i((3, 3) if red == "replace" else (4, 3), -5, 5)], {"dimension": 0, "reduce": red}),
               Variant([f((4, 5), dtype=BF16), idx, f(idx.shape, dtype=BF16)], {"dimension": 1, "reduce": red})]
    for red in ("add", "multiply"):  # every combine rounded to bf16, in index order (CPU's index_reduce)
        sc.append(Variant([f((4, 5), dtype=BF16), i((4, 9), 0, 4, np.int64), f((4, 9), dtype=BF16)],
                          {"dimension": 1, "reduce": red, "rounding": "each"}))
    # 256 + 1 rounds back to 256 in bf16 at each step (264 when rounded once): beyond the tolerance of an ulp
    sc.append(Variant([np.full((2, 3), 256, BF16), np.zeros((2, 8), np.int64), np.ones((2, 8), BF16)],
                      {"dimension": 1, "reduce": "add", "rounding": "each"}))
    c["scatter_axis"] = [Case("scatter_axis", sc, 1e-6, 1e-6)]
    c["index_add"] = [Case("index_add", [
        Variant([f((5, 3)), i((6,), -5, 4, np.int64), f((6, 3))], {"dimension": 0}),
        Variant([i((2, 4, 3)), i((5,), 0, 3, np.int32), i((2, 5, 3))], {"dimension": 1}),
        Variant([f((4, 6), dtype=BF16), i((3,), 0, 5, np.int64), f((4, 3), dtype=BF16)], {"dimension": 1})])]
    c["convolution"] = [Case("convolution", [
        Variant([f((2, 3, 9)), f((4, 3, 3))], _conv((1,), ((1, 1),), (1,), (1,), 1)),
        Variant([f((2, 4, 7, 6)), f((6, 2, 3, 2))], _conv((2, 1), ((1, 0), (0, 2)), (1, 1), (2, 1), 2)),
        Variant([f((1, 2, 5, 5)), f((3, 2, 2, 2))], _conv((1, 1), ((1, 1), (1, 1)), (2, 2), (1, 1), 1)),
        Variant([f((1, 2, 4, 4), dtype=BF16), f((2, 2, 3, 3), dtype=BF16)],
                _conv((1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, out="float32")),
        Variant([f((2, 2, 3, 3, 3)), f((1, 2, 2, 2, 2))], _conv((1, 1, 1), ((0, 0),) * 3, (1, 1, 1), (1, 1, 1), 1))],
        2e-5, 2e-5), Case("convolution", [
            Variant([f((2, 3, 9)), f((4, 3, 3))], _conv((1,), ((1, 1),), (1,), (1,), 1, precision=p))
            for p in ("DEFAULT", "HIGH")], 1e-5, 1e-5)]
    rw = []
    for kind, init in (("sum", 0.0), ("max", -math.inf), ("min", math.inf)):
        rw += [Variant([f((2, 3, 6, 7))], {"kind": kind, "window": (1, 1, 3, 2), "strides": (1, 1, 2, 2),
                                            "padding": ((0, 0), (0, 0), (1, 1), (0, 1)), "init": init}),
               Variant([f((9,), dtype=BF16)], {"kind": kind, "window": (3,), "strides": (1,), "padding": ((2, 0),),
                                               "init": init})]
    rw.append(Variant([f((5,))], {"kind": "sum", "window": (2,), "strides": (1,), "padding": ((1, 1),), "init": 1.0}))
    c["reduce_window"] = [Case("reduce_window", rw, 1e-6, 1e-6)]
    def cplx(shape):
        return (f(shape) + 1j * f(shape)).astype(np.complex64)

    odd = np.array([np.nan + 1j, 2 - np.inf * 1j], np.complex64)
    c["real"] = [Case("real", [Variant([cplx((3, 4))]), Variant([odd.copy()])])]
    c["imag"] = [Case("imag", [Variant([cplx((3, 4))]), Variant([odd.copy()])])]
    c["complex"] = [Case("complex", [Variant([f((3, 4)), f((3, 4))]), Variant([SPECIAL.copy(), SPECIAL[::-1].copy()])])]
    fft = []
    for k in (1, 2, 3):
        n = (4, 6, 5)[-k:]
        fft += [Variant([cplx((2, *n))], {"fft_type": "FFT", "fft_length": n}),
                Variant([cplx((2, *n))], {"fft_type": "IFFT", "fft_length": n}),
                Variant([f((2, *n))], {"fft_type": "RFFT", "fft_length": n}),
                Variant([cplx((2, *n[:-1], n[-1] // 2 + 1))], {"fft_type": "IRFFT", "fft_length": n})]
    fft.append(Variant([cplx((8,))], {"fft_type": "FFT", "fft_length": (8,)}))
    c["fft"] = [Case("fft", fft, 2e-5, 2e-5)]
    c["constant"].append(Case("constant", [Variant([], {"value": v, "shape": sh, "dtype": d}) for v, sh, d in (
        ((1.5, -2.0, math.inf, math.nan, -0.0, 1e-5), (2, 3), "float32"), ((1, 2, 3, 4), (2, 2), "int64"),
        ((True, False, True), (3,), "bool"), ((3.3, 1.0), (2,), "bfloat16"), ((7,), (1, 1), "int32"),
        ((1 + 2j, -0.5j), (2,), "complex64"), (1 - 1j, (2, 2), "complex64"), ((200, 3), (2,), "uint8"))]))
    for name in ("add", "multiply", "subtract"):
        c[name].append(Case(name, [Variant([cplx((3, 4)), cplx((3, 4))])], 2e-6, 1e-6))
    c["compare"].append(Case("compare", [Variant([x, y], {"direction": d}) for d in ("EQ", "NE") for x, y in (
        (np.array([1 + 1j, 2, 3j], np.complex64), np.array([1 + 1j, 2j, 3j], np.complex64)),)]))
    def spd(batch, n, dtype=np.float32):
        m = f((*batch, n, n)) + (1j * f((*batch, n, n)) if dtype == np.complex64 else 0)
        return (m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)).astype(dtype)

    not_pd = spd((), 3)
    not_pd[2, 2] = -5
    c["cholesky"] = [Case("cholesky", [Variant([spd((2,), 4)], {"lower": True}),
                                       Variant([spd((), 3)], {"lower": False}),
                                       Variant([spd((2,), 3, np.float64)], {"lower": True}),
                                       Variant([spd((), 3, np.complex64)], {"lower": True}),
                                       Variant([spd((), 3, np.complex64)], {"lower": False}),
                                       Variant([np.stack([spd((), 3), not_pd])], {"lower": True})], 1e-5, 1e-5)]
    ts = []
    for left in (True, False):
        for lower in (True, False):
            for unit in (False, True):
                for mode in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
                    a = spd((2,), 4)
                    b = f((2, 4, 3) if left else (2, 3, 4))
                    ts.append(Variant([a, b], {"left_side": left, "lower": lower, "unit_diagonal": unit,
                                               "transpose_a": mode}))
    ts.append(Variant([spd((), 3, np.complex64), (f((3, 2)) + 1j * f((3, 2))).astype(np.complex64)],
                      {"left_side": True, "lower": True, "unit_diagonal": False, "transpose_a": "ADJOINT"}))
    c["triangular_solve"] = [Case("triangular_solve", ts, 1e-5, 1e-5)]
    c["while_array"] = [Case("while_array", [Variant([f((2, 3), 0.1, 50), np.zeros((), np.float32)],
                                                     array_halvings((2, 3), 100)),
                                             Variant([f((4,), 0.1, 50), np.zeros((), np.float32)],
                                                     array_halvings((4,), 3))], 0, 0)]
    c["while"] = [Case("while", [
        Variant([f((6,), 0.1, 50), np.zeros(6, np.float32)], halvings(100)),
        Variant([f((2, 3), 0.1, 50), np.zeros((2, 3), np.float32)], halvings(3)),  # the limit stops some
        Variant([f((4,), 0.1, 50).astype(np.float64), np.zeros(4, np.float64)], halvings(100, "float64"))], 0, 0)]
    c["special_unary"] = [Case("special_unary", [
        Variant([f((7,), -4, 4)], {"function": "bessel_i1e"}), Variant([f((7,), -4, 4)], {"function": "bessel_i1"}),
        Variant([np.array([0, 0.5, -2, 3, 10], np.float32)], {"function": "spherical_bessel_j0"}),
        Variant([f((6,), -2, 5)], {"function": "erfcx"}), Variant([f((6,), 0.01, 0.99)], {"function": "ndtri"}),
        Variant([f((5,), -3, 3, BF16)], {"function": "bessel_i1e"})], 1e-5, 1e-6)]
    c["special_binary"] = [Case("special_binary", [
        Variant([f((5,), 1.5, 5), f((5,), 0.5, 3)], {"function": "zeta"}),
        Variant([np.array([0, 1, 2, 3, 1], np.float32), f((5,), 0.5, 4)], {"function": "polygamma"})], 1e-5, 1e-6)]
    singular = f((4, 4))
    singular[:, 1] = 0
    c["lu"] = [Case("lu", [Variant([f((2, 4, 4))]), Variant([f((5, 3))]), Variant([f((3, 5))]),
                           Variant([f((3, 3)).astype(np.float64)]), Variant([singular]), Variant([cplx((3, 3))])],
                    1e-4, 1e-5)]
    qr = [Variant([x], {"full_matrices": full}) for full in (False, True)
          for x in (f((2, 5, 3)), f((3, 5)), f((4, 4)), f((2, 3)).astype(np.float64), singular)]
    c["qr"] = [Case("qr", qr, 1e-4, 1e-5)]
    svd = [Variant([x], {"full_matrices": full}) for full in (False, True)
           for x in (f((2, 5, 3)), f((3, 5)), f((4, 4)).astype(np.float64), f((5, 5)))]
    c["svd"] = [Case("svd", svd, 1e-4, 1e-5)]
    sym = f((2, 4, 4))
    sym = sym + np.swapaxes(sym, -1, -2)
    odd = f((5, 5))
    odd = odd + odd.T
    c["eigh"] = [Case("eigh", [Variant([sym], {"lower": True}), Variant([sym], {"lower": False}),
                               Variant([sym[0].astype(np.float64)], {"lower": True}), Variant([odd], {"lower": True})],
                      1e-4, 1e-5)]
    c["eig"] = [Case("eig", [Variant([f((2, 4, 4))]), Variant([cplx((3, 3))]),
                             Variant([np.array([[0, -1], [1, 0]], np.float32)])], 1e-4, 1e-5)]
    check = {"size": 5, "low": -5, "error": "IndexError", "message": "index {} is out of bounds for size 5"}
    c["check_index"] = [Case("check_index", [Variant([i((2, 3), -5, 4, np.int64)], check),
                                             Variant([i((4,), 0, 4, np.int32)], {**check, "low": 0, "ignore": -100})])]
    _add_complex128_cases(c)
    _add_empty_cases(c)
    c["ragged_paged_attention"] = _ragged_attention_cases()
    c["ragged_dot"] = _ragged_dot_cases()
    return c


def _add_complex128_cases(c: dict[str, list[Case]]) -> None:
    """complex128 (float64 parts): the same ops as complex64's, at float64 tolerances."""
    def z(shape):
        return f(shape).astype(np.float64) + 1j * f(shape).astype(np.float64)

    odd = np.array([np.nan + 1j, 2 - np.inf * 1j, -0.0 + 1e-300j], np.complex128)
    tight = (1e-12, 1e-12)
    for name in ("real", "imag"):
        c[name].append(Case(name, [Variant([z((3, 4))]), Variant([odd.copy()])], *tight))
    c["complex"].append(Case("complex", [Variant([f((3, 4)).astype(np.float64), f((3, 4)).astype(np.float64)]),
                                         Variant([SPECIAL.astype(np.float64), SPECIAL[::-1].astype(np.float64)])],
                             *tight))
    for name in ("add", "multiply", "subtract", "divide"):
        c[name].append(Case(name, [Variant([z((3, 4)), z((3, 4))])], *tight))
    c["exponential"].append(Case("exponential", [Variant([z((5,))])], *tight))
    c["constant"].append(Case("constant", [Variant([], {"value": v, "shape": sh, "dtype": "complex128"})
                                           for v, sh in (((1 + 2j, -0.1j), (2,)), (1 / 3 - 1j, (2, 2)))], 0, 0))
    c["convert"].append(Case("convert", [Variant([z((4,))], {"dtype": "complex64"}),
                                         Variant([f((4,)).astype(np.float64)], {"dtype": "complex128"}),
                                         Variant([z((4,)).astype(np.complex64)], {"dtype": "complex128"})], 0, 0))
    n = (4, 6)
    c["fft"].append(Case("fft", [Variant([z((2, *n))], {"fft_type": "FFT", "fft_length": n}),
                                 Variant([z((2, *n))], {"fft_type": "IFFT", "fft_length": n}),
                                 Variant([f((2, *n)).astype(np.float64)], {"fft_type": "RFFT", "fft_length": n}),
                                 Variant([z((2, 4, 4))], {"fft_type": "IRFFT", "fft_length": n})], *tight))
    m = z((3, 3))
    spd = m @ np.conj(m.T) + 3 * np.eye(3)
    c["cholesky"].append(Case("cholesky", [Variant([spd], {"lower": True}), Variant([spd], {"lower": False})],
                              *tight))
    c["triangular_solve"].append(Case("triangular_solve", [Variant([spd, z((3, 2))], {
        "left_side": True, "lower": True, "unit_diagonal": False, "transpose_a": "ADJOINT"})], *tight))
    c["eig"].append(Case("eig", [Variant([z((3, 3))]), Variant([f((2, 3, 3)).astype(np.float64)])], 1e-10, 1e-10))
    for name, attrs in (("lu", {}), ("qr", {"full_matrices": False}), ("svd", {"full_matrices": False}),
                        ("eigh", {"lower": True})):
        c[name].append(Case(name, [Variant([spd if name == "eigh" else z((4, 3))], attrs)], 1e-10, 1e-10))


def _add_empty_cases(c: dict[str, list[Case]]) -> None:
    """Zero-size operands (XLA rejects some of these forms outright, so the emitters special-case them)."""
    z = np.zeros((0, 3), np.float32)
    more = {
        "add": [Variant([z, z])], "exponential": [Variant([z])],
        "reduce": [Variant([z], {"kind": "sum", "dimensions": (0,)}),
                   Variant([z], {"kind": "prod", "dimensions": (0,)}),
                   Variant([z], {"kind": "max", "dimensions": (1,)}), Variant([z], {"kind": "max", "dimensions": (0,)}),
                   Variant([np.zeros((0, 2), np.int32)], {"kind": "min", "dimensions": (0,)}),
                   Variant([np.zeros((2, 0), np.bool_)], {"kind": "max", "dimensions": (1,)})],
        "dot_general": [Variant([np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32)],
                                _dot((), (), (1,), (0,))),
                        Variant([z, np.ones((3, 2), np.float32)], _dot((), (), (1,), (0,)))],
        "concatenate": [Variant([z, np.ones((2, 3), np.float32)], {"dimension": 0})],
        "sort": [Variant([z], {"dimension": 0, "descending": False, "stable": True})],
        "cumulative": [Variant([z], {"kind": "sum", "dimension": 0})],
        "slice": [Variant([z], {"start": (0, 1), "limit": (0, 3), "strides": (1, 1)})],
        "pad": [Variant([z], {"value": 2.0, "low": (1, 0), "high": (0, 0), "interior": (0, 0)})],
        "gather_axis": [Variant([z, np.zeros((0, 2), np.int64)], {"dimension": 1}),
                        Variant([np.ones((2, 3), np.float32), np.zeros((2, 0), np.int64)], {"dimension": 1})],
        "index_select": [Variant([z, np.zeros(0, np.int64)], {"dimension": 0}),
                         Variant([z, np.array([1, 0], np.int64)], {"dimension": 1})],
        "scatter_axis": [Variant([z, np.zeros((0, 2), np.int64), np.zeros((0, 2), np.float32)],
                                 {"dimension": 1, "reduce": "add"})],
        "index_add": [Variant([z, np.zeros(0, np.int64), np.zeros((0, 3), np.float32)], {"dimension": 0}),
                      Variant([np.ones((2, 3), np.float32), np.zeros(0, np.int64), np.zeros((2, 0), np.float32)],
                              {"dimension": 1})],
        "argreduce": [Variant([z], {"kind": "max", "dimension": 1})],
        "transpose": [Variant([z], {"permutation": (1, 0)})],
        "broadcast_in_dim": [Variant([np.zeros((0,), np.float32)], {"shape": (2, 0), "broadcast_dimensions": (1,)})],
        "convolution": [Variant([np.zeros((0, 2, 5), np.float32), np.ones((3, 2, 2), np.float32)],
                                _conv((1,), ((0, 0),), (1,), (1,), 1))],
    }
    for op, variants in more.items():
        if variants:
            c[op].append(Case(op, variants))
    _quantized(c)


def _quantized(c: dict[str, list[Case]]) -> None:
    """int8 x int8 -> int32 dots past float32's exact range and fp8 converts (issue 24)."""
    a = RNG.integers(-128, 128, (6, 1100)).astype(np.int8)
    b = RNG.integers(-128, 128, (1100, 5)).astype(np.int8)
    a[0], b[:, 0] = -128, -128  # 1100 * 2**14 > 2**24
    x = (RNG.standard_normal(64) * np.exp2(RNG.integers(-12, 12, 64))).astype(np.float32)
    x[:5] = [np.nan, 0.0, -0.0, 448.0, -57344.0]
    e4, e5 = np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)
    f8 = [(RNG.standard_normal(s) * 4).astype(np.float32).astype(d) for s, d in
          (((5, 40), e4), ((40, 3), e4), ((5, 40), e5), ((40, 3), e5))]
    c["dot_general"].append(Case("dot_general", [  # fp8 dots need a chip with fp8: tests/pjrt/test_quant_pjrt.py
        Variant([a, b], _dot((), (), (1,), (0,), precision="DEFAULT", out="int32"))]))
    c["convert"].append(Case("convert", [
        Variant([x], {"dtype": "float8_e4m3fn"}), Variant([x], {"dtype": "float8_e5m2"}),
        Variant([x.astype(BF16)], {"dtype": "float8_e5m2"}), Variant([f8[0]], {"dtype": "float32"}),
        Variant([f8[2]], {"dtype": "bfloat16"}), Variant([f8[0]], {"dtype": "float8_e5m2"})]))


def _ragged_attention_cases() -> list[Case]:
    """A mixed batch (a 3-token prefill, a decode at 20, a chunk of 5 at 37) over 16-token pages in shuffled order,
    GQA 4/2; a sliding window of 8 with soft-capping; bfloat16; padded query rows."""
    page_table = np.array([[5, 0, 0, 0], [2, 7, 0, 0], [1, 4, 6, 0]], np.int32)
    base = {"q_lens": (3, 1, 5), "ctx_lens": (3, 20, 37), "page_tokens": 16, "scale": 0.35, "precision": "HIGHEST"}
    q, kv = f((12, 4, 8), -1, 1), f((128, 2, 16), -1, 1)
    return [Case("ragged_paged_attention", [
        Variant([q, kv, page_table], base),
        Variant([q, kv, page_table], {**base, "sliding_window": 8, "soft_cap": 2.0})], 1e-5, 1e-6),
        Case("ragged_paged_attention", [  # one bf16 rounding of the probabilities apart at most
            Variant([q[:4].astype(BF16), kv.astype(BF16), page_table[:2].astype(np.int64)],
                    {**base, "q_lens": (3, 1), "ctx_lens": (3, 20)})], 1e-2, 1e-2)]


def _ragged_dot_cases() -> list[Case]:
    """Both modes, with an empty group and positions past the last end (zeros); bf16 operands at DEFAULT."""
    ends = np.array([3, 3, 7, 12], np.int32)
    rows, contract = {"mode": "rows", "precision": "HIGHEST", "out_dtype": "float32"}, {
        "mode": "contract", "precision": "HIGHEST", "out_dtype": "float32"}
    return [Case("ragged_dot", [Variant([f((14, 8)), f((4, 8, 16)), ends], rows),
                                Variant([f((5, 14)), f((14, 6)), ends], contract)], 1e-5, 1e-5),
            Case("ragged_dot", [Variant([f((14, 8)).astype(BF16), f((4, 8, 16)).astype(BF16), ends],
                                        {**rows, "precision": "DEFAULT", "out_dtype": "bfloat16"})], 1e-2, 1e-2)]


def _dot(lb: tuple, rb: tuple, lc: tuple, rc: tuple, precision: str = "HIGHEST", out: str = "float32") -> dict:
    return {"lhs_batch": lb, "rhs_batch": rb, "lhs_contract": lc, "rhs_contract": rc, "precision": precision,
            "out_dtype": out}


def _conv(strides: tuple, padding: tuple, lhs_dil: tuple, rhs_dil: tuple, groups: int, out: str = "float32",
          precision: str = "HIGHEST") -> dict:
    return {"window_strides": strides, "padding": padding, "lhs_dilation": lhs_dil, "rhs_dilation": rhs_dil,
            "feature_group_count": groups, "precision": precision, "out_dtype": out}


CASES = _build_cases()
# Ops whose result is compared for distribution, not values (tested separately).
STATISTICAL = ("rng",)
