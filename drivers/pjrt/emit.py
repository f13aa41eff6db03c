"""Program -> StableHLO text: one emitter per IR op, printed in MLIR's generic form.

The module this prints is what the PJRT client compiles (XLA parses it, legalizes the few CHLO ops used for
special functions, and compiles). Semantics follow the sim driver's value rules (drivers/sim/kernels*.py), which
are the reference: narrow floats (bf16, f16) are widened to f32 for the math and rounded back on store, integer
`divide` truncates, `remainder` takes the divisor's sign, `argreduce` returns the first index, `sort` is stable
with NaN last (first when descending), indices may be negative (counted from the end).

Every function parameter and result is a flat 1-D array (a whole storage, or a hoisted scalar as 1 element);
the body reshapes them to the Program's shapes, which costs nothing in XLA. Generic op syntax
(`"stablehlo.add"(%a, %b) : (...) -> ...`) is used throughout: attribute names are the StableHLO spec's, so the
text does not depend on each op's pretty-printer, which changes between versions.

Nothing here imports jax: the text is plain strings, checked by the golden tests and compiled by `client.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np
from torchtpu.drivers.ir import FLOAT_DTYPES, INT_DTYPES, Op, Program

MLIR_TYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64", "int64": "i64",
              "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "ui8", "bool": "i1",
              "complex64": "complex<f32>", "uint32": "ui32", "uint64": "ui64"}
NP_DTYPES = {"float32": np.dtype(np.float32), "bfloat16": np.dtype(ml_dtypes.bfloat16),
             "float16": np.dtype(np.float16), "float64": np.dtype(np.float64), "int64": np.dtype(np.int64),
             "int32": np.dtype(np.int32), "int16": np.dtype(np.int16), "int8": np.dtype(np.int8),
             "uint8": np.dtype(np.uint8), "bool": np.dtype(np.bool_), "complex64": np.dtype(np.complex64),
             "uint32": np.dtype(np.uint32), "uint64": np.dtype(np.uint64)}
NARROW = ("bfloat16", "float16")
SIGNED = ("int64", "int32", "int16", "int8")
BITS_INT = {"float32": "int32", "float64": "int64", "bfloat16": "int16", "float16": "int16"}


def tensor_type(shape: Sequence[int], dtype: str) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{MLIR_TYPES[dtype]}>"


def _ints(values: Sequence[int]) -> str:
    return f"array<i64{': ' if len(values) else ''}{', '.join(str(int(v)) for v in values)}>"


def _list(values: Sequence[int]) -> str:
    return f"[{', '.join(str(int(v)) for v in values)}]"


def literal(value: object, dtype: str) -> str:
    """An MLIR dense-attribute element for `value` rounded to `dtype` as the sim's `store` rounds it."""
    if dtype == "bool":
        return "true" if bool(value) else "false"
    if dtype in INT_DTYPES or dtype in ("uint32", "uint64"):
        v = np.asarray(value)
        if v.dtype.kind == "f":
            v = np.trunc(v)
        return str(int(v.astype(NP_DTYPES[dtype])))
    if dtype == "complex64":
        c = complex(value)  # type: ignore[arg-type]
        return f"({literal(c.real, 'float32')}, {literal(c.imag, 'float32')})"
    x = np.asarray(value, np.float64 if dtype == "float64" else np.float32)
    if dtype in NARROW:
        x = x.astype(NP_DTYPES[dtype])
    if np.isfinite(x):
        text = repr(float(x))
        return text if "." in text else text.replace("e", ".0e")  # MLIR wants a '.' in 1.0e-05
    bits = x.reshape(1).view(np.dtype(f"u{x.dtype.itemsize}"))[0]
    return f"0x{int(bits):0{2 * x.dtype.itemsize}X}"


def _nested(items: list[str], shape: tuple[int, ...]) -> str:
    """Row-major element literals as MLIR's nested dense list for `shape`."""
    if not shape:
        return items[0]
    if len(shape) == 1:
        return f"[{', '.join(items)}]"
    step = len(items) // shape[0] if shape[0] else 0
    return f"[{', '.join(_nested(items[k * step:(k + 1) * step], shape[1:]) for k in range(shape[0]))}]"


@dataclass(frozen=True, slots=True)
class Check:
    """A runtime error the sim raises inside an op, checked on the device: op index and name, the exception
    type's name and its message (`{}` stands for the reported detail value)."""

    op_index: int
    op_name: str
    error: str
    message: str


@dataclass(frozen=True, slots=True)
class Module:
    text: str
    checks: tuple[Check, ...]  # the module's last result is int64[2 * len(checks)]: (flag, detail) pairs


@dataclass(frozen=True, slots=True)
class V:
    """An SSA value in the module being printed: its name, shape and IR dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def type(self) -> str:
        return tensor_type(self.shape, self.dtype)


def compute_dtype(dtype: str) -> str:
    """The dtype the math runs in: narrow floats widen to f32 (the sim's `load`)."""
    return "float32" if dtype in NARROW else dtype


def compare_type(dtype: str) -> str:
    if dtype in FLOAT_DTYPES or dtype == "complex64":
        return "FLOAT"
    return "SIGNED" if dtype in SIGNED else "UNSIGNED"


class Emitter:
    """Prints ops into a function body; `region` prints a nested block (reduce/sort/scatter bodies)."""

    def __init__(self, platform: str = "cpu", checks: bool = False, emulate_passes: bool | None = None) -> None:
        self.platform = platform
        # f32 matmuls at DEFAULT/HIGH as the MXU computes them (1 or 3 bf16 passes, f32 accumulation), spelled
        # out as bf16-split dots: for platforms that ignore the dot algorithm (the CPU client computes in f32)
        self.emulate_passes = platform == "cpu" if emulate_passes is None else emulate_passes
        self.lines: list[str] = []
        self._indent = "    "
        self._next = 0
        self.checking = checks
        self.checks: list[tuple[Check, V, V]] = []  # (what, bool flag, int64 detail), all 0-d
        self.current: tuple[int, str] = (-1, "")

    def check(self, error: str, message: str, flag: V, detail: V | None = None) -> None:
        """Records a runtime check of the op being emitted: `flag` (bool, any shape) true means the sim would
        raise `error` (IndexError, ZeroDivisionError, ...); `detail` (int) is reported in the message."""
        if not self.checking:
            return
        if flag.shape:
            (flag,) = self.reduce([flag], [self.const(False, (), "bool")], list(range(len(flag.shape))),
                                  lambda a: [self.binary("stablehlo.or", a[0], a[1])])
        if detail is None:
            detail = self.const(0, (), "int64")
        elif detail.shape:
            detail = self.convert(detail, "int64")
            (detail,) = self.reduce([detail], [self.const(np.iinfo(np.int64).min, (), "int64")],
                                    list(range(len(detail.shape))),
                                    lambda a: [self.binary("stablehlo.maximum", a[0], a[1])])
        self.checks.append((Check(self.current[0], self.current[1], error, message), flag, detail))

    def fresh(self) -> str:
        self._next += 1
        return f"%{self._next}"

    def raw(self, line: str) -> None:
        self.lines.append(self._indent + line)

    def op(self, name: str, operands: Sequence[V], shape: Sequence[int], dtype: str, attrs: str = "",
           region: str = "") -> V:
        out = V(self.fresh(), tuple(int(d) for d in shape), dtype)
        self._op_line(out.name, name, operands, [out], attrs, region)
        return out

    def op_multi(self, name: str, operands: Sequence[V], results: Sequence[tuple[Sequence[int], str]],
                 attrs: str = "", region: str = "") -> list[V]:
        base = self.fresh()
        outs = [V(f"{base}#{i}", tuple(s), d) for i, (s, d) in enumerate(results)]
        self._op_line(f"{base}:{len(outs)}", name, operands, outs, attrs, region)
        return outs

    def _op_line(self, lhs: str, name: str, operands: Sequence[V], outs: Sequence[V], attrs: str,
                 region: str) -> None:
        args = ", ".join(v.name for v in operands)
        in_types = ", ".join(v.type for v in operands)
        out_types = ", ".join(v.type for v in outs)
        if len(outs) != 1:
            out_types = f"({out_types})"
        attr_text = f" {{{attrs}}}" if attrs else ""
        self.raw(f'{lhs} = "{name}"({args}){region}{attr_text} : ({in_types}) -> {out_types}')

    def region(self, arg_types: Sequence[str], body: Callable[[list[V]], Sequence[V]]) -> str:
        """A one-block region whose arguments are 0-d tensors of the given IR dtypes."""
        saved, saved_indent = self.lines, self._indent
        self.lines, self._indent = [], saved_indent + "    "
        args = [V(f"%r{self.fresh()[1:]}", (), d) for d in arg_types]
        results = body(args)
        self.raw(f'"stablehlo.return"({", ".join(r.name for r in results)}) : '
                 f'({", ".join(r.type for r in results)}) -> ()')
        inner, self.lines, self._indent = self.lines, saved, saved_indent
        header = ", ".join(f"{a.name}: {a.type}" for a in args)
        return " ({\n" + f"{saved_indent}  ^bb0({header}):\n" + "\n".join(inner) + f"\n{saved_indent}}})"

    # -- small builders --
    def const(self, value: object, shape: Sequence[int], dtype: str) -> V:
        """A splat of the scalar `value`, or (a tuple) a dense constant of all values in row-major order."""
        t = tensor_type(shape, dtype)
        if isinstance(value, tuple | list):
            text = _nested([literal(v, dtype) for v in value], tuple(shape))
        else:
            text = literal(value, dtype)
        return self.op("stablehlo.constant", [], shape, dtype, f"value = dense<{text}> : {t}")

    def like(self, value: object, v: V) -> V:
        return self.const(value, v.shape, v.dtype)

    def unary(self, name: str, x: V, dtype: str | None = None) -> V:
        return self.op(name, [x], x.shape, dtype or x.dtype)

    def binary(self, name: str, a: V, b: V) -> V:
        return self.op(name, [a, b], a.shape, a.dtype)

    def compare(self, direction: str, a: V, b: V) -> V:
        attrs = (f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                 f"compare_type = #stablehlo<comparison_type {compare_type(a.dtype)}>")
        return self.op("stablehlo.compare", [a, b], a.shape, "bool", attrs)

    def select(self, pred: V, a: V, b: V) -> V:
        return self.op("stablehlo.select", [pred, a, b], a.shape, a.dtype)

    def reshape(self, x: V, shape: Sequence[int]) -> V:
        if tuple(shape) == x.shape:
            return x
        return self.op("stablehlo.reshape", [x], shape, x.dtype)

    def transpose(self, x: V, perm: Sequence[int]) -> V:
        if list(perm) == list(range(len(perm))):
            return x
        return self.op("stablehlo.transpose", [x], [x.shape[p] for p in perm], x.dtype,
                       f"permutation = {_ints(perm)}")

    def broadcast(self, x: V, shape: Sequence[int], dims: Sequence[int]) -> V:
        if tuple(shape) == x.shape and list(dims) == list(range(len(shape))):
            return x
        return self.op("stablehlo.broadcast_in_dim", [x], shape, x.dtype, f"broadcast_dimensions = {_ints(dims)}")

    def splat(self, x: V, shape: Sequence[int]) -> V:
        """A 0-d value broadcast to `shape`."""
        return self.broadcast(x, shape, [])

    def iota(self, shape: Sequence[int], dim: int, dtype: str = "int64") -> V:
        return self.op("stablehlo.iota", [], shape, dtype, f"iota_dimension = {dim} : i64")

    def bitcast(self, x: V, dtype: str) -> V:
        return self.op("stablehlo.bitcast_convert", [x], x.shape, dtype)

    def pad(self, x: V, value: V, low: Sequence[int], high: Sequence[int], interior: Sequence[int] | None = None
            ) -> V:
        interior = interior or [0] * len(x.shape)
        shape = [lo + hi + d + max(d - 1, 0) * it for d, lo, hi, it in zip(x.shape, low, high, interior)]
        return self.op("stablehlo.pad", [x, value], shape, x.dtype,
                       f"edge_padding_low = {_ints(low)}, edge_padding_high = {_ints(high)}, "
                       f"interior_padding = {_ints(interior)}")

    def convert(self, x: V, dtype: str) -> V:
        """x as `dtype`, rounded as the sim's `store`/`convert` do (via f32 where the sim goes through f32)."""
        if x.dtype == dtype:
            return x
        if dtype == "bool":
            return self.compare("NE", x, self.like(0, x))
        if x.dtype == "bfloat16" and dtype != "float32":
            x = self.unary("stablehlo.convert", x, "float32")
            if dtype == "float32":
                return x
        elif dtype == "bfloat16" and x.dtype not in ("float32", "bool"):
            x = self.unary("stablehlo.convert", x, "float32")
        return self.unary("stablehlo.convert", x, dtype)  # float -> int truncates, as the sim's store

    def widen(self, x: V) -> V:
        return self.convert(x, compute_dtype(x.dtype))

    def reduce(self, xs: Sequence[V], inits: Sequence[V], dims: Sequence[int],
               body: Callable[[list[V]], Sequence[V]]) -> list[V]:
        region = self.region([i.dtype for i in inits] * 2, body)
        out_shape = [d for i, d in enumerate(xs[0].shape) if i not in dims]
        results = [(out_shape, x.dtype) for x in xs]
        if len(xs) == 1:
            return [self.op("stablehlo.reduce", [*xs, *inits], out_shape, xs[0].dtype,
                            f"dimensions = {_ints(dims)}", region)]
        return self.op_multi("stablehlo.reduce", [*xs, *inits], results, f"dimensions = {_ints(dims)}", region)


# --------------------------------------------------------------------------------------------------------------
# the op table

EmitFn = Callable[[Emitter, Op, list[V]], list[V]]
EMITTERS: dict[str, EmitFn] = {}


def emits(*names: str) -> Callable[[EmitFn], EmitFn]:
    def register(fn: EmitFn) -> EmitFn:
        for name in names:
            if name in EMITTERS:
                raise ValueError(f"StableHLO emitter for {name!r} registered twice")
            EMITTERS[name] = fn
        return fn

    return register


def _out(op: Op, i: int = 0) -> tuple[tuple[int, ...], str]:
    return op.outputs[i].shape, op.outputs[i].dtype


# -- element-wise, unary --
_FLOAT_UNARY = {
    "exponential": "stablehlo.exponential", "exponential_minus_one": "stablehlo.exponential_minus_one",
    "log": "stablehlo.log", "log_plus_one": "stablehlo.log_plus_one", "sqrt": "stablehlo.sqrt",
    "rsqrt": "stablehlo.rsqrt", "cbrt": "stablehlo.cbrt", "tanh": "stablehlo.tanh",
    "logistic": "stablehlo.logistic", "sine": "stablehlo.sine", "cosine": "stablehlo.cosine",
    "tan": "stablehlo.tan", "erf": "chlo.erf", "erfc": "chlo.erfc", "erfinv": "chlo.erf_inv", "lgamma": "chlo.lgamma",
    "digamma": "chlo.digamma", "atan": "chlo.atan", "asin": "chlo.asin", "acos": "chlo.acos", "sinh": "chlo.sinh",
    "cosh": "chlo.cosh", "asinh": "chlo.asinh", "acosh": "chlo.acosh", "atanh": "chlo.atanh",
}


def _float_math(e: Emitter, name: str, x: V) -> V:
    if name in _FLOAT_UNARY:
        y = e.unary(_FLOAT_UNARY[name], x)
        if name == "lgamma":  # poles (0, -1, -2, ...) are +inf, as in the sim and torch
            pole = e.binary("stablehlo.and", e.compare("LE", x, e.like(0, x)),
                            e.compare("EQ", x, e.unary("stablehlo.floor", x)))
            y = e.select(pole, e.like(math.inf, x), y)
        elif name == "digamma":  # +-0 -> -+inf, negative integers -> nan (the sim's and torch's values)
            zero = e.compare("EQ", x, e.like(0, x))
            neg_bit = e.compare("LT", e.bitcast(x, BITS_INT[x.dtype]), e.const(0, x.shape, BITS_INT[x.dtype]))
            at_zero = e.select(neg_bit, e.like(math.inf, x), e.like(-math.inf, x))
            neg_int = e.binary("stablehlo.and", e.compare("LT", x, e.like(0, x)),
                               e.compare("EQ", x, e.unary("stablehlo.floor", x)))
            y = e.select(zero, at_zero, e.select(neg_int, e.like(math.nan, x), y))
        return y
    if name == "reciprocal":
        return e.binary("stablehlo.divide", e.like(1, x), x)
    if name == "exp2":
        return e.binary("stablehlo.power", e.like(2, x), x)
    if name == "log2":
        return e.binary("stablehlo.divide", e.unary("stablehlo.log", x), e.like(math.log(2.0), x))
    if name == "log10":
        return e.binary("stablehlo.divide", e.unary("stablehlo.log", x), e.like(math.log(10.0), x))
    raise KeyError(name)


@emits(*_FLOAT_UNARY, "reciprocal", "exp2", "log2", "log10")
def _emit_float_unary(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    shape, dtype = _out(op)
    xf = e.convert(x, "float64" if x.dtype == "float64" else "float32")
    return [e.convert(_float_math(e, op.name, xf), dtype)]


@emits("abs", "negate", "floor", "ceil", "round_nearest_even", "sign", "square", "trunc", "not")
def _emit_any_unary(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    shape, dtype = _out(op)
    name = op.name
    if x.dtype == "bool":
        if name == "not":
            return [e.unary("stablehlo.not", x)]
        if name in ("abs", "floor", "ceil", "round_nearest_even", "trunc", "sign"):
            return [x]
        if name == "square":
            return [x]
    xc = e.widen(x)
    if name in ("floor", "ceil", "round_nearest_even", "trunc") and xc.dtype not in FLOAT_DTYPES:
        y = xc
    elif name == "trunc":
        y = e.select(e.compare("LT", xc, e.like(0, xc)), e.unary("stablehlo.ceil", xc),
                     e.unary("stablehlo.floor", xc))
    elif name == "square":
        y = e.binary("stablehlo.multiply", xc, xc)
    elif name == "sign" and xc.dtype == "uint8":
        y = e.convert(e.compare("NE", xc, e.like(0, xc)), "uint8")
    elif name == "abs" and xc.dtype == "uint8":
        y = xc
    elif name == "negate" and xc.dtype == "uint8":
        y = e.binary("stablehlo.subtract", e.like(0, xc), xc)
    else:
        y = e.unary(f"stablehlo.{name}", xc)
    return [e.convert(y, dtype)]


@emits("is_finite")
def _emit_is_finite(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    if x.dtype in FLOAT_DTYPES:
        return [e.unary("stablehlo.is_finite", x, "bool")]
    return [e.const(True, x.shape, "bool")]


# -- element-wise, binary --
_BOOL_BINARY = {"add": "stablehlo.or", "multiply": "stablehlo.and", "maximum": "stablehlo.or",
                "minimum": "stablehlo.and", "and": "stablehlo.and", "or": "stablehlo.or", "xor": "stablehlo.xor"}
_PLAIN_BINARY = {"add": "stablehlo.add", "subtract": "stablehlo.subtract", "multiply": "stablehlo.multiply",
                 "maximum": "stablehlo.maximum", "minimum": "stablehlo.minimum", "atan2": "stablehlo.atan2",
                 "and": "stablehlo.and", "or": "stablehlo.or", "xor": "stablehlo.xor", "fmod": "stablehlo.remainder",
                 "power": "stablehlo.power", "shift_left": "stablehlo.shift_left",
                 "nextafter": "chlo.next_after"}


def _signbit(e: Emitter, x: V) -> V:
    bits = BITS_INT[x.dtype]
    return e.compare("LT", e.bitcast(x, bits), e.const(0, x.shape, bits))


def _binary_math(e: Emitter, name: str, a: V, b: V) -> V:
    is_float = a.dtype in FLOAT_DTYPES
    if name in _PLAIN_BINARY:
        return e.binary(_PLAIN_BINARY[name], a, b)
    if name == "divide":
        return e.binary("stablehlo.divide", a, b)
    if name == "shift_right_arithmetic":
        return e.binary("stablehlo.shift_right_logical" if a.dtype == "uint8" else "stablehlo.shift_right_arithmetic",
                        a, b)
    if name == "remainder":  # Python-style: the result takes the divisor's sign
        r = e.binary("stablehlo.remainder", a, b)
        if a.dtype == "uint8":
            return r
        zero = e.like(0, r)
        fix = e.binary("stablehlo.and", e.compare("NE", r, zero),
                       e.compare("NE", e.compare("LT", r, zero), e.compare("LT", b, zero)))
        return e.select(fix, e.binary("stablehlo.add", r, b), r)
    if name == "floor_divide":
        if is_float:
            return e.unary("stablehlo.floor", e.binary("stablehlo.divide", a, b))
        q = e.binary("stablehlo.divide", a, b)
        if a.dtype == "uint8":
            return q
        r = e.binary("stablehlo.remainder", a, b)
        zero = e.like(0, r)
        fix = e.binary("stablehlo.and", e.compare("NE", r, zero),
                       e.compare("NE", e.compare("LT", r, zero), e.compare("LT", b, zero)))
        return e.select(fix, e.binary("stablehlo.subtract", q, e.like(1, q)), q)
    if name == "hypot":
        aa, ab = e.unary("stablehlo.abs", a), e.unary("stablehlo.abs", b)
        big, small = e.binary("stablehlo.maximum", aa, ab), e.binary("stablehlo.minimum", aa, ab)
        ratio = e.binary("stablehlo.divide", small, big)
        root = e.unary("stablehlo.sqrt", e.binary("stablehlo.add", e.like(1, a),
                                                  e.binary("stablehlo.multiply", ratio, ratio)))
        r = e.select(e.compare("EQ", big, e.like(0, a)), e.like(0, a), e.binary("stablehlo.multiply", big, root))
        inf = e.like(math.inf, a)
        return e.select(e.binary("stablehlo.or", e.compare("EQ", aa, inf), e.compare("EQ", ab, inf)), inf, r)
    if name == "copysign":
        mag = e.unary("stablehlo.abs", a)
        return e.select(_signbit(e, b), e.unary("stablehlo.negate", mag), mag)
    if name == "xlogy":
        out = e.binary("stablehlo.multiply", a, e.unary("stablehlo.log", b))
        keep_zero = e.binary("stablehlo.and", e.compare("EQ", a, e.like(0, a)), e.compare("EQ", b, b))
        return e.select(keep_zero, e.like(0, out), out)
    raise KeyError(name)


@emits("add", "subtract", "multiply", "divide", "remainder", "fmod", "power", "maximum", "minimum", "atan2",
       "and", "or", "xor", "shift_left", "shift_right_arithmetic", "floor_divide", "nextafter", "hypot",
       "copysign", "xlogy")
def _emit_binary(e: Emitter, op: Op, args: list[V]) -> list[V]:
    a, b = args
    shape, dtype = _out(op)
    if a.dtype == "bool" and op.name in _BOOL_BINARY:
        return [e.binary(_BOOL_BINARY[op.name], a, b)]
    if a.dtype in FLOAT_DTYPES or op.name not in ("and", "or", "xor", "shift_left", "shift_right_arithmetic"):
        a, b = e.widen(a), e.widen(b)
    if e.checking and a.dtype in INT_DTYPES and numel(b.shape):
        if op.name in ("divide", "remainder", "floor_divide"):
            what = "remainder" if op.name == "remainder" else "division"
            e.check("ZeroDivisionError", f"integer {what} by zero", e.compare("EQ", b, e.like(0, b)))
    float_only = ("atan2", "nextafter", "hypot", "copysign", "xlogy")
    if op.name in float_only and a.dtype not in FLOAT_DTYPES:
        a, b = e.convert(a, "float32"), e.convert(b, "float32")
    if op.name == "power" and a.dtype in SIGNED:  # as ATen: 1 ** -n = 1, (-1) ** -n = +-1, other ** -n = 0
        negative = e.compare("LT", b, e.like(0, b))
        positive = _binary_math(e, "power", a, e.select(negative, e.like(0, b), b))
        one, zero = e.like(1, a), e.like(0, a)
        even = e.compare("EQ", e.binary("stablehlo.remainder", b, e.like(2, b)), e.like(0, b))
        minus_one = e.select(even, one, e.like(-1, a))
        inverse = e.select(e.compare("EQ", a, one), one,
                           e.select(e.compare("EQ", a, e.like(-1, a)), minus_one, zero))
        return [e.convert(e.select(negative, inverse, positive), dtype)]
    return [e.convert(_binary_math(e, op.name, a, b), dtype)]


@emits("compare")
def _emit_compare(e: Emitter, op: Op, args: list[V]) -> list[V]:
    a, b = args
    return [e.compare(op.attr("direction"), a, b)]


@emits("select")
def _emit_select(e: Emitter, op: Op, args: list[V]) -> list[V]:
    return [e.select(*args)]


@emits("clamp")
def _emit_clamp(e: Emitter, op: Op, args: list[V]) -> list[V]:
    lo, x, hi = (e.widen(a) for a in args)
    if x.dtype == "bool":
        y = e.binary("stablehlo.and", e.binary("stablehlo.or", x, lo), hi)
    else:  # max/min propagate NaN from any operand, as the sim's clamp does
        y = e.binary("stablehlo.minimum", e.binary("stablehlo.maximum", x, lo), hi)
    return [e.convert(y, op.outputs[0].dtype)]


@emits("convert")
def _emit_convert(e: Emitter, op: Op, args: list[V]) -> list[V]:
    return [e.convert(args[0], op.attr("dtype"))]


@emits("constant")
def _emit_constant(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    return [e.const(op.attr("value"), shape, dtype)]


@emits("iota")
def _emit_iota(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    return [e.convert(e.iota(shape, op.attr("dimension")), dtype)]


@emits("rng")
def _emit_rng(e: Emitter, op: Op, args: list[V]) -> list[V]:
    """Philox bits keyed by a hash of (seed, offset), so each offset draws from its own stream (as in the sim);
    uniform: 23 random mantissa bits in [0, 1); normal: sqrt(2) * erfinv(2u - 1), as jax.random does."""
    (state,) = args
    shape, dtype = _out(op)
    n = numel(shape)
    if n == 0:
        return [e.const(0, shape, dtype)]

    def word(i: int) -> V:
        one = e.op("stablehlo.slice", [state], (1,), "int64",
                   f"start_indices = {_ints([i])}, limit_indices = {_ints([i + 1])}, strides = {_ints([1])}")
        return e.reshape(one, ())

    golden = e.const(-7046029254386353131, (), "int64")  # 0x9E3779B97F4A7C15
    key = e.binary("stablehlo.xor", e.binary("stablehlo.multiply", word(0), golden), word(1))
    key = e.op("stablehlo.concatenate", [e.reshape(key, (1,)), e.const(0, (1,), "int64")], (2,), "int64",
               "dimension = 0 : i64")
    _, bits = e.op_multi("stablehlo.rng_bit_generator", [e.bitcast(key, "uint64")],
                         [((2,), "uint64"), ((n,), "uint32")], "rng_algorithm = #stablehlo<rng_algorithm PHILOX>")
    mantissa = e.binary("stablehlo.or", e.binary("stablehlo.shift_right_logical", bits, e.like(9, bits)),
                        e.like(0x3F800000, bits))
    values = e.binary("stablehlo.subtract", e.bitcast(mantissa, "float32"), e.const(1.0, (n,), "float32"))
    if op.attr("distribution") == "normal":
        v = e.binary("stablehlo.subtract", e.binary("stablehlo.multiply", values, e.const(2.0, (n,), "float32")),
                     e.const(1.0, (n,), "float32"))
        v = e.binary("stablehlo.maximum", v, e.const(float(np.nextafter(np.float32(-1), np.float32(0))), (n,),
                                                     "float32"))
        values = e.binary("stablehlo.multiply", e.unary("chlo.erf_inv", v), e.const(math.sqrt(2.0), (n,), "float32"))
    return [e.convert(e.reshape(values, shape), dtype)]


# -- linear algebra --
def _linalg_operand(e: Emitter, x: V) -> V:
    return x if x.dtype in ("float32", "float64", "complex64") else e.convert(x, "float32")


def _triangle_mask(e: Emitter, shape: Sequence[int], lower: bool) -> V:
    r = len(shape)
    rows, cols = e.iota(shape, r - 2), e.iota(shape, r - 1)
    return e.compare("GE" if lower else "LE", rows, cols)


@emits("cholesky")
def _emit_cholesky(e: Emitter, op: Op, args: list[V]) -> list[V]:
    """The factor in one triangle, zeros in the other; a matrix that is not positive definite is all NaN (the
    sim's result: numpy raises for it and the sim fills NaN)."""
    x = _linalg_operand(e, args[0])
    lower = bool(op.attr("lower"))
    if 0 in x.shape:
        return [x]
    y = e.op("stablehlo.cholesky", [x], x.shape, x.dtype, f"lower = {'true' if lower else 'false'}")
    y = e.select(_triangle_mask(e, x.shape, lower), y, e.like(0, y))
    r = len(x.shape)
    finite = e.unary("stablehlo.is_finite", e.unary("stablehlo.real", y, "float32") if y.dtype == "complex64" else y,
                     "bool")
    (ok,) = e.reduce([finite], [e.const(True, (), "bool")], [r - 2, r - 1],
                     lambda a: [e.binary("stablehlo.and", a[0], a[1])])
    ok = e.broadcast(ok, x.shape, list(range(r - 2)))
    return [e.convert(e.select(ok, y, e.like(math.nan, y)), op.outputs[0].dtype)]


@emits("triangular_solve")
def _emit_triangular_solve(e: Emitter, op: Op, args: list[V]) -> list[V]:
    a, b = (_linalg_operand(e, v) for v in args)
    shape, dtype = _out(op)
    if 0 in a.shape or 0 in b.shape:
        return [e.convert(b, dtype)]
    flag = lambda name: "true" if op.attr(name) else "false"  # noqa: E731
    y = e.op("stablehlo.triangular_solve", [a, b], b.shape, b.dtype,
             f"left_side = {flag('left_side')}, lower = {flag('lower')}, unit_diagonal = {flag('unit_diagonal')}, "
             f"transpose_a = #stablehlo<transpose {op.attr('transpose_a')}>")
    return [e.convert(y, dtype)]


# lu, qr, svd, eigh and eig: LAPACK through jaxlib's CPU custom calls (the calls jax.lax.linalg emits on CPU).
_LAPACK_PREFIX = {"float32": "s", "float64": "d", "complex64": "c"}
_REAL_OF = {"float32": "float32", "float64": "float64", "complex64": "float32"}


def _layout(rank: int, matrix: bool) -> str:
    """Column-major matrices in a row-major batch (LAPACK's layout), or plain row-major."""
    dims = ([rank - 2, rank - 1] + list(range(rank - 3, -1, -1))) if matrix else list(range(rank - 1, -1, -1))
    return f"dense<{_list(dims) if dims else ''}> : tensor<{len(dims)}xindex>"


def _lapack(e: Emitter, op: Op, fn: str, operands: Sequence[V], results: Sequence[tuple[Sequence[int], str, bool]],
            config: str = "", alias: bool = True) -> list[V]:
    """One jaxlib LAPACK FFI call (`results`: shape, dtype, is-a-matrix) in MLIR's pretty form, as jax prints it."""
    if e.platform != "cpu":
        raise NotImplementedError(f"IR op {op.name!r} has no StableHLO emitter for PJRT platform {e.platform!r} "
                                  f"yet (on cpu it calls LAPACK); use the sim driver for it")
    batch = len(operands[0].shape) - 2
    target = f"lapack_{_LAPACK_PREFIX[operands[0].dtype]}{fn}_ffi"
    base = e.fresh()
    outs = [V(f"{base}#{i}" if len(results) > 1 else base, tuple(sh), dt) for i, (sh, dt, _) in enumerate(results)]
    in_layouts = ", ".join(_layout(len(v.shape), len(v.shape) == batch + 2) for v in operands)
    out_layouts = ", ".join(_layout(len(sh), m) for sh, _, m in results)
    aliases = (", output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = "
               f"{'[0]' if len(results) > 1 else '[]'}, operand_index = 0, operand_tuple_indices = []>]"
               if alias else "")
    attrs = (f'backend_config = "", mhlo.backend_config = {{{config}}}, mhlo.frontend_attributes = '
             f'{{num_batch_dims = "{batch}"}}, operand_layouts = [{in_layouts}]{aliases}, result_layouts = '
             f"[{out_layouts}]")
    types = ", ".join(o.type for o in outs)
    lhs = f"{base}:{len(outs)}" if len(outs) > 1 else base
    e.raw(f"{lhs} = stablehlo.custom_call @{target}({', '.join(v.name for v in operands)}) {{{attrs}}} : "
          f"({', '.join(v.type for v in operands)}) -> {'(' + types + ')' if len(outs) > 1 else types}")
    return outs


def _nan_unless_ok(e: Emitter, info: V, values: V) -> V:
    """NaN where LAPACK reported failure (info != 0), per matrix of the batch."""
    ok = e.compare("EQ", info, e.like(0, info))
    ok = e.broadcast(ok, values.shape, list(range(len(info.shape))))
    return e.select(ok, values, e.like(math.nan, values))


@emits("lu")
def _emit_lu(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x = _linalg_operand(e, args[0])
    (ls, ld), (ps, pd), (is_, id_) = (_out(op, i) for i in range(3))
    if 0 in x.shape:
        return [x, e.const(0, ps, pd), e.const(0, is_, id_)]
    return _lapack(e, op, "getrf", [x], [(ls, ld, True), (ps, pd, False), (is_, id_, False)])


@emits("qr")
def _emit_qr(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x = _linalg_operand(e, args[0])
    (qs, qd), (rs, rd) = _out(op, 0), _out(op, 1)
    *batch, m, n = x.shape
    k = min(m, n)
    cols = qs[-1]  # m (full) or k (reduced)
    if 0 in x.shape:
        eye = e.convert(e.compare("EQ", e.iota(qs, len(qs) - 2), e.iota(qs, len(qs) - 1)), qd)
        return [eye, e.const(0, rs, rd)]
    a, taus = _lapack(e, op, "geqrf", [x], [(x.shape, x.dtype, True), ((*batch, k), x.dtype, False)])
    r_rows = e.op("stablehlo.slice", [a], rs, rd, f"start_indices = {_ints([0] * len(rs))}, limit_indices = "
                  f"{_ints(rs)}, strides = {_ints([1] * len(rs))}") if tuple(rs) != x.shape else a
    r = e.select(_triangle_mask(e, rs, lower=False), r_rows, e.like(0, r_rows))
    if cols > n:
        a = e.pad(a, e.const(0, (), x.dtype), [0] * len(x.shape), [0] * (len(x.shape) - 1) + [cols - n])
    elif cols < n:
        a = e.op("stablehlo.slice", [a], (*batch, m, cols), x.dtype, f"start_indices = {_ints([0] * len(x.shape))}, "
                 f"limit_indices = {_ints((*batch, m, cols))}, strides = {_ints([1] * len(x.shape))}")
    (q,) = _lapack(e, op, "ungqr" if x.dtype == "complex64" else "orgqr", [a, taus], [(qs, qd, True)])
    return [q, r]


@emits("eigh")
def _emit_eigh(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x = _linalg_operand(e, args[0])
    (ws, wd), (vs, vd) = _out(op, 0), _out(op, 1)
    if 0 in x.shape:
        return [e.const(0, ws, wd), x]
    uplo = 76 if op.attr("lower") else 85  # 'L' / 'U'
    v, w, info = _lapack(e, op, "heevd" if x.dtype == "complex64" else "syevd", [x],
                         [(vs, vd, True), (ws, wd, False), (x.shape[:-2], "int32", False)],
                         f"mode = 86 : ui8, uplo = {uplo} : ui8")
    return [_nan_unless_ok(e, info, w), _nan_unless_ok(e, info, v)]


@emits("svd")
def _emit_svd(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x = _linalg_operand(e, args[0])
    (us, ud), (ss, sd), (vs, vd) = (_out(op, i) for i in range(3))
    if 0 in x.shape:
        return [e.const(0, us, ud), e.const(0, ss, sd), e.const(0, vs, vd)]
    mode = 65 if op.attr("full_matrices") else 83  # 'A' / 'S'
    _, s, u, vt, info = _lapack(e, op, "gesdd", [x], [(x.shape, x.dtype, True), (ss, sd, False), (us, ud, True),
                                                      (vs, vd, True), (x.shape[:-2], "int32", False)],
                                f"mode = {mode} : ui8")
    return [_nan_unless_ok(e, info, u), _nan_unless_ok(e, info, s), _nan_unless_ok(e, info, vt)]


@emits("eig")
def _emit_eig(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x = _linalg_operand(e, args[0])
    (ws, wd), (vs, vd) = _out(op, 0), _out(op, 1)
    if 0 in x.shape:
        return [e.const(0, ws, wd), e.const(0, vs, vd)]
    config = "compute_left = 78 : ui8, compute_right = 86 : ui8"  # 'N', 'V'
    info_t = (x.shape[:-2], "int32", False)
    if x.dtype == "complex64":
        w, _, v, info = _lapack(e, op, "geev", [x], [(ws, wd, False), (vs, vd, True), (vs, vd, True), info_t],
                                config, alias=False)
    else:
        wr, wi, _, v, info = _lapack(e, op, "geev", [x], [(ws, x.dtype, False), (ws, x.dtype, False), (vs, vd, True),
                                                          (vs, vd, True), info_t], config, alias=False)
        w = e.op("stablehlo.complex", [e.convert(wr, "float32"), e.convert(wi, "float32")], ws, wd)
    return [_nan_unless_ok(e, info, w), _nan_unless_ok(e, info, v)]


# -- special functions (`special_unary` / `special_binary`, selected by `function`) --
# Those CHLO has, or that are short expressions of CHLO ops; the sim computes them in float64, and so does the
# CPU platform here (TPU: float32). The others (Bessel J/Y/K, airy, igamma, the orthogonal polynomials) need
# series/recurrence expansions that are not emitted yet: compiling them raises NotImplementedError.
SPECIAL_EMITTED = ("bessel_i1e", "bessel_i1", "spherical_bessel_j0", "erfcx", "ndtri", "zeta", "polygamma")


def _special_math(e: Emitter, fn: str, xs: list[V]) -> V:
    x = xs[0]
    if fn == "bessel_i1e":
        return e.unary("chlo.bessel_i1e", x)
    if fn == "bessel_i1":
        return e.binary("stablehlo.multiply", e.unary("chlo.bessel_i1e", x),
                        e.unary("stablehlo.exponential", e.unary("stablehlo.abs", x)))
    if fn == "spherical_bessel_j0":
        y = e.binary("stablehlo.divide", e.unary("stablehlo.sine", x), x)
        return e.select(e.compare("EQ", x, e.like(0, x)), e.like(1, x), y)
    if fn == "erfcx":
        return e.binary("stablehlo.multiply", e.unary("stablehlo.exponential", e.binary("stablehlo.multiply", x, x)),
                        e.unary("chlo.erfc", x))
    if fn == "ndtri":
        v = e.binary("stablehlo.subtract", e.binary("stablehlo.multiply", x, e.like(2, x)), e.like(1, x))
        return e.binary("stablehlo.multiply", e.unary("chlo.erf_inv", v), e.like(math.sqrt(2.0), x))
    if fn == "zeta":
        return e.binary("chlo.zeta", xs[0], xs[1])
    if fn == "polygamma":
        return e.binary("chlo.polygamma", xs[0], xs[1])
    raise KeyError(fn)


@emits("special_unary", "special_binary")
def _emit_special(e: Emitter, op: Op, args: list[V]) -> list[V]:
    fn = op.attr("function")
    if fn not in SPECIAL_EMITTED:
        raise NotImplementedError(f"the pjrt driver has no StableHLO expansion of the special function {fn!r} yet "
                                  f"(IR op {op.name}); supported: {', '.join(SPECIAL_EMITTED)}")
    wide = "float64" if e.platform == "cpu" else "float32"
    xs = [e.convert(a, wide) for a in args]
    return [e.convert(_special_math(e, fn, xs), op.outputs[0].dtype)]


# -- complex numbers and FFT --
@emits("real", "imag")
def _emit_real_imag(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    return [e.op(f"stablehlo.{op.name}", args, shape, dtype)]


@emits("complex")
def _emit_complex(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    return [e.op("stablehlo.complex", args, shape, dtype)]


@emits("fft")
def _emit_fft(e: Emitter, op: Op, args: list[V]) -> list[V]:
    """stablehlo.fft over the innermost dims (IFFT and IRFFT scale by 1/n, as numpy's inverse transforms)."""
    shape, dtype = _out(op)
    if 0 in shape or 0 in args[0].shape:
        return [e.const(0, shape, dtype)]
    return [e.op("stablehlo.fft", args, shape, dtype, f"fft_type = #stablehlo<fft_type {op.attr('fft_type')}>, "
                 f"fft_length = {_ints(op.attr('fft_length'))}")]


# -- data movement --
@emits("broadcast_in_dim")
def _emit_broadcast(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    dims = list(op.attr("broadcast_dimensions"))
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = e.transpose(x, order)  # XLA wants increasing broadcast dimensions; the IR allows any order
    return [e.broadcast(x, op.attr("shape"), sorted(dims))]


@emits("reshape")
def _emit_reshape(e: Emitter, op: Op, args: list[V]) -> list[V]:
    return [e.reshape(args[0], op.attr("shape"))]


@emits("transpose")
def _emit_transpose(e: Emitter, op: Op, args: list[V]) -> list[V]:
    return [e.transpose(args[0], op.attr("permutation"))]


@emits("slice")
def _emit_slice(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    shape, dtype = _out(op)
    start = [min(max(s, 0), d) for s, d in zip(op.attr("start"), x.shape)]
    limit = [max(min(hi, d), s) for hi, s, d in zip(op.attr("limit"), start, x.shape)]
    return [e.op("stablehlo.slice", [x], shape, dtype, f"start_indices = {_ints(start)}, limit_indices = "
                 f"{_ints(limit)}, strides = {_ints(op.attr('strides'))}")]


@emits("reverse")
def _emit_reverse(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    dims = [d for d in op.attr("dimensions")]
    if not dims:
        return [x]
    return [e.op("stablehlo.reverse", [x], x.shape, x.dtype, f"dimensions = {_ints(dims)}")]


@emits("concatenate")
def _emit_concatenate(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    if len(args) == 1:
        return [args[0]]
    return [e.op("stablehlo.concatenate", args, shape, dtype, f"dimension = {op.attr('dimension')} : i64")]


@emits("pad")
def _emit_pad(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    value = e.const(op.attr("value"), (), x.dtype)
    return [e.pad(x, value, op.attr("low"), op.attr("high"), op.attr("interior"))]


# -- reductions --
def _identity(kind: str, dtype: str) -> object:
    if kind in ("sum", "or"):
        return 0
    if kind in ("prod", "and"):
        return 1
    if dtype in FLOAT_DTYPES:
        return -math.inf if kind == "max" else math.inf
    if dtype == "bool":
        return kind == "min"
    info = np.iinfo(NP_DTYPES[dtype])
    return info.min if kind == "max" else info.max


_COMBINE = {"sum": "stablehlo.add", "prod": "stablehlo.multiply", "max": "stablehlo.maximum",
            "min": "stablehlo.minimum", "and": "stablehlo.and", "or": "stablehlo.or"}
_BOOL_KIND = {"sum": "or", "max": "or", "or": "or", "prod": "and", "min": "and", "and": "and"}


def _combiner(e: Emitter, kind: str) -> Callable[[list[V]], list[V]]:
    return lambda a: [e.binary(_COMBINE[kind], a[0], a[1])]


@emits("reduce")
def _emit_reduce(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    kind = op.attr("kind")
    dims = list(op.attr("dimensions"))
    shape, dtype = _out(op)
    if kind in ("and", "or") and x.dtype != "bool":
        x = e.convert(x, "bool")
    x = e.widen(x)
    if x.dtype == "bool":
        kind = _BOOL_KIND[kind]
    if not dims:
        return [e.convert(x, dtype)]
    (y,) = e.reduce([x], [e.const(_identity(kind, x.dtype), (), x.dtype)], dims, _combiner(e, kind))
    return [e.convert(y, dtype)]


@emits("argreduce")
def _emit_argreduce(e: Emitter, op: Op, args: list[V]) -> list[V]:
    """The first index of the max (min); NaN counts as the largest (smallest) value, as numpy's argmax does."""
    (x,) = args
    dim = op.attr("dimension")
    better = "GT" if op.attr("kind") == "max" else "LT"
    if x.shape[dim] == 0:
        e.check("IndexError", "argmax/argmin of an empty dimension", e.const(True, (), "bool"))
    x = e.widen(x)
    idx = e.iota(x.shape, dim)
    is_float = x.dtype in FLOAT_DTYPES

    def body(a: list[V]) -> list[V]:
        va, vb, ia, ib = a[0], a[2], a[1], a[3]
        if is_float:
            nan_a, nan_b = e.compare("NE", va, va), e.compare("NE", vb, vb)
            both_num = e.binary("stablehlo.and", e.unary("stablehlo.not", nan_a), e.unary("stablehlo.not", nan_b))
            a_better = e.binary("stablehlo.or", e.binary("stablehlo.and", nan_a, e.unary("stablehlo.not", nan_b)),
                                e.binary("stablehlo.and", both_num, e.compare(better, va, vb)))
            tie = e.binary("stablehlo.or", e.binary("stablehlo.and", nan_a, nan_b),
                           e.binary("stablehlo.and", both_num, e.compare("EQ", va, vb)))
        else:
            a_better, tie = e.compare(better, va, vb), e.compare("EQ", va, vb)
        take_a = e.binary("stablehlo.or", a_better, e.binary("stablehlo.and", tie, e.compare("LT", ia, ib)))
        return [e.select(take_a, va, vb), e.select(take_a, ia, ib)]

    init_v = e.const(_identity("max" if better == "GT" else "min", x.dtype), (), x.dtype)
    init_i = e.const(np.iinfo(np.int64).max, (), "int64")
    region = e.region([x.dtype, "int64"] * 2, body)  # block arguments: (value_a, index_a, value_b, index_b)
    out_shape = [d for i, d in enumerate(x.shape) if i != dim]
    _, index = e.op_multi("stablehlo.reduce", [x, idx, init_v, init_i], [(out_shape, x.dtype), (out_shape, "int64")],
                          f"dimensions = {_ints([dim])}", region)
    return [index]


@emits("cumulative")
def _emit_cumulative(e: Emitter, op: Op, args: list[V]) -> list[V]:
    """An inclusive scan by doubling (Hillis-Steele): log2(n) shifted combines, each a pad and one op."""
    (x,) = args
    kind = op.attr("kind")
    dim = op.attr("dimension")
    shape, dtype = _out(op)
    y = e.widen(x)
    if y.dtype == "bool":
        kind = _BOOL_KIND[kind]
    n = y.shape[dim]
    ident = e.const(_identity(kind, y.dtype), (), y.dtype)
    k = 1
    while k < n:
        low = [0] * len(shape)
        high = [0] * len(shape)
        low[dim], high[dim] = k, -k
        shifted = e.pad(y, ident, low, high)
        y = e.binary(_COMBINE[kind], y, shifted)
        k *= 2
    return [e.convert(y, dtype)]


@emits("sort")
def _emit_sort(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    dim = op.attr("dimension")
    desc = bool(op.attr("descending"))
    idx = e.iota(x.shape, dim)
    is_float = x.dtype in FLOAT_DTYPES

    def body(a: list[V]) -> list[V]:
        va, vb = a[0], a[1]
        if not is_float:
            return [e.compare("GT" if desc else "LT", va, vb)]
        nan_a, nan_b = e.compare("NE", va, va), e.compare("NE", vb, vb)
        if desc:  # NaN first, then larger values
            return [e.binary("stablehlo.or", e.binary("stablehlo.and", nan_a, e.unary("stablehlo.not", nan_b)),
                             e.compare("GT", va, vb))]
        return [e.binary("stablehlo.or", e.binary("stablehlo.and", e.unary("stablehlo.not", nan_a), nan_b),
                         e.compare("LT", va, vb))]

    region = e.region([x.dtype, x.dtype, "int64", "int64"], body)
    values, index = e.op_multi("stablehlo.sort", [x, idx], [(x.shape, x.dtype), (x.shape, "int64")],
                               f"dimension = {dim} : i64, is_stable = true", region)
    return [values, index]


# -- indexing --
def _wrap_index(e: Emitter, index: V, size: int, what: str = "index") -> V:
    """Negative indices count from the end; out-of-range ones are a checked IndexError (XLA would clamp)."""
    index = e.convert(index, "int64")
    if e.checking and numel(index.shape):
        bad = e.binary("stablehlo.or", e.compare("LT", index, e.like(-size, index)),
                       e.compare("GE", index, e.like(size, index)))
        detail = e.select(bad, index, e.like(np.iinfo(np.int64).min, index))
        e.check("IndexError", f"{what}: index {{}} is out of bounds for dimension with size {size}", bad, detail)
    neg = e.compare("LT", index, e.like(0, index))
    return e.select(neg, e.binary("stablehlo.add", index, e.like(size, index)), index)


def _full_indices(e: Emitter, index: V, dim: int) -> V:
    """For take_along_axis-style ops: [..., r] coordinates whose `dim` component is `index`."""
    r = len(index.shape)
    col = (*index.shape, 1)
    parts = [e.reshape(index, col) if d == dim else e.iota(col, d) for d in range(r)]
    if r == 1:
        return parts[0]
    return e.op("stablehlo.concatenate", parts, (*index.shape, r), "int64", f"dimension = {r} : i64")


def _gather(e: Emitter, x: V, indices: V, out_shape: Sequence[int], offset_dims: Sequence[int],
            collapsed: Sequence[int], start_map: Sequence[int], index_vector_dim: int,
            slice_sizes: Sequence[int]) -> V:
    dn = (f"#stablehlo.gather<offset_dims = {_list(offset_dims)}, collapsed_slice_dims = {_list(collapsed)}, "
          f"start_index_map = {_list(start_map)}, index_vector_dim = {index_vector_dim}>")
    return e.op("stablehlo.gather", [x, indices], out_shape, x.dtype,
                f"dimension_numbers = {dn}, indices_are_sorted = false, slice_sizes = {_ints(slice_sizes)}")


@emits("gather_axis")
def _emit_gather_axis(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x, index = args
    dim = op.attr("dimension")
    r = len(x.shape)
    if 0 in x.shape or 0 in index.shape:  # nothing to read (XLA rejects slices of an empty operand)
        if numel(index.shape) and x.shape[dim] == 0:
            _wrap_index(e, index, 0, "gather")
        return [e.const(0, index.shape, x.dtype)]
    coords = _full_indices(e, _wrap_index(e, index, x.shape[dim], "gather"), dim)
    return [_gather(e, x, coords, index.shape, [], list(range(r)), list(range(r)), r, [1] * r)]


@emits("index_select")
def _emit_index_select(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x, index = args
    dim = op.attr("dimension")
    shape, _ = _out(op)
    r = len(x.shape)
    if 0 in x.shape or 0 in shape:
        if numel(index.shape) and x.shape[dim] == 0:
            _wrap_index(e, index, 0, "index_select")
        return [e.const(0, shape, x.dtype)]
    coords = e.reshape(_wrap_index(e, index, x.shape[dim], "index_select"), (index.shape[0], 1))
    sizes = [1 if i == dim else d for i, d in enumerate(x.shape)]
    return [_gather(e, x, coords, shape, [i for i in range(r) if i != dim], [dim], [dim], 1, sizes)]


_SCATTER_KIND = {"add": "sum", "multiply": "prod", "amax": "max", "amin": "min"}


def _scatter(e: Emitter, x: V, indices: V, updates: V, reduce: str, window_dims: Sequence[int],
             inserted: Sequence[int], to_operand: Sequence[int], index_vector_dim: int) -> V:
    if reduce == "replace":
        region = e.region([x.dtype, x.dtype], lambda a: [a[1]])
    else:
        kind = _SCATTER_KIND[reduce]
        if x.dtype == "bool":
            kind = _BOOL_KIND[kind]
        region = e.region([x.dtype, x.dtype], _combiner(e, kind))
    dn = (f"#stablehlo.scatter<update_window_dims = {_list(window_dims)}, inserted_window_dims = {_list(inserted)}, "
          f"scatter_dims_to_operand_dims = {_list(to_operand)}, index_vector_dim = {index_vector_dim}>")
    return e.op("stablehlo.scatter", [x, indices, updates], x.shape, x.dtype,
                f"indices_are_sorted = false, scatter_dimension_numbers = {dn}, unique_indices = false", region)


@emits("scatter_axis")
def _emit_scatter_axis(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x, index, src = args
    dim = op.attr("dimension")
    r = len(x.shape)
    if 0 in x.shape or 0 in index.shape:
        return [x]
    xw, sw = e.widen(x), e.widen(src)
    coords = _full_indices(e, _wrap_index(e, index, x.shape[dim], "scatter"), dim)
    y = _scatter(e, xw, coords, sw, op.attr("reduce"), [], list(range(r)), list(range(r)), r)
    return [e.convert(y, x.dtype)]


@emits("index_add")
def _emit_index_add(e: Emitter, op: Op, args: list[V]) -> list[V]:
    x, index, src = args
    dim = op.attr("dimension")
    r = len(x.shape)
    if 0 in x.shape or 0 in src.shape:
        return [x]
    xw, sw = e.widen(x), e.widen(src)
    coords = e.reshape(_wrap_index(e, index, x.shape[dim], "index_add"), (index.shape[0], 1))
    y = _scatter(e, xw, coords, sw, "add", [i for i in range(r) if i != dim], [dim], [dim], 1)
    return [e.convert(y, x.dtype)]


# -- MXU ops --
_ALGORITHM_PASSES = {"DEFAULT": 1, "HIGH": 3, "HIGHEST": 6}


def _precision_attrs(e: Emitter, precision: str, operand_dtype: str) -> str:
    """XLA's precision config; on TPU, the BF16_BF16_F32(_X3/_X6) algorithm that the precision names."""
    if e.platform == "tpu" and operand_dtype == "float32":
        passes = _ALGORITHM_PASSES[precision]
        return ("precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], "
                "algorithm = #stablehlo.dot_algorithm<lhs_precision_type = bf16, rhs_precision_type = bf16, "
                "accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, "
                f"num_primitive_operations = {passes}, allow_imprecise_accumulation = false>")
    return f"precision_config = [#stablehlo<precision {precision}>, #stablehlo<precision {precision}>]"


def _round_bf16(e: Emitter, x: V) -> V:
    return e.unary("stablehlo.convert", e.unary("stablehlo.convert", x, "bfloat16"), "float32")


def _truncate_bf16(e: Emitter, x: V) -> V:
    bits = e.bitcast(x, "int32")
    return e.bitcast(e.binary("stablehlo.and", bits, e.const(-65536, x.shape, "int32")), "float32")


def _guard(e: Emitter, x: V) -> V:
    """XLA's ReplaceNaNWithZeros: keep x where inf >= |x|, else +0."""
    return e.select(e.compare("GE", e.like(math.inf, x), e.unary("stablehlo.abs", x)), x, e.like(0, x))


def _mxu_passes(e: Emitter, a: V, b: V, precision: str, dot: Callable[[V, V], V]) -> V:
    """The bf16 passes of XLA's BF16_BF16_F32(_X3/_X6) rewrite, as the sim's MXU model combines them (`dot` runs
    one product of bf16-valued f32 operands exactly)."""
    if precision == "DEFAULT":
        return dot(_round_bf16(e, a), _round_bf16(e, b))
    if precision == "HIGH":
        parts = []
        for x in (a, b):
            t = _truncate_bf16(e, x)
            parts.append((_round_bf16(e, t), _round_bf16(e, e.binary("stablehlo.subtract", x, t))))
        (ah, al), (bh, bl) = parts
        low = e.binary("stablehlo.add", dot(al, bh), dot(ah, bl))
        return e.binary("stablehlo.add", _guard(e, low), dot(ah, bh))
    split = []
    for x in (a, b):
        th = _truncate_bf16(e, x)
        r1 = e.binary("stablehlo.subtract", x, th)
        tm = _truncate_bf16(e, r1)
        r2 = e.binary("stablehlo.subtract", r1, tm)
        split.append((_round_bf16(e, th), _round_bf16(e, tm), _round_bf16(e, r2)))
    (ah, am, al), (bh, bm, bl) = split
    r = e.binary("stablehlo.add", dot(am, bm), dot(ah, bl))
    for x, w in ((al, bh), (ah, bm), (am, bh)):
        r = e.binary("stablehlo.add", r, dot(x, w))
    return e.binary("stablehlo.add", _guard(e, r), dot(ah, bh))


def _mxu_operands(e: Emitter, a: V, b: V, out_dtype: str) -> tuple[V, V, str]:
    """Operand and accumulator dtypes as the sim's MXU model takes them (bf16 pairs stay bf16)."""
    if a.dtype in ("int64", "int32", "int16", "int8", "uint8", "bool") or out_dtype in ("int64", "int32"):
        return e.convert(a, "int64"), e.convert(b, "int64"), "int64"
    if a.dtype == "bfloat16" and b.dtype == "bfloat16":
        return a, b, "float32"
    return e.convert(a, "float32"), e.convert(b, "float32"), "float32"


@emits("dot_general")
def _emit_dot_general(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    a, b, acc = _mxu_operands(e, args[0], args[1], dtype)
    fields = [(k, op.attr(n)) for k, n in (("lhs_batching_dimensions", "lhs_batch"),
                                           ("rhs_batching_dimensions", "rhs_batch"),
                                           ("lhs_contracting_dimensions", "lhs_contract"),
                                           ("rhs_contracting_dimensions", "rhs_contract"))]
    dn = ", ".join(f"{k} = {_list(v)}" for k, v in fields if len(v))
    attrs = f"dot_dimension_numbers = #stablehlo.dot<{dn}>"
    precision = op.attr("precision")
    if acc == "float32" and a.dtype == "float32" and e.emulate_passes and precision != "HIGHEST":
        exact = attrs + ", " + _precision_attrs(e, "HIGHEST", "bfloat16")
        y = _mxu_passes(e, a, b, precision, lambda x, w: e.op("stablehlo.dot_general", [x, w], shape, acc, exact))
        return [e.convert(y, dtype)]
    if acc != "int64":
        attrs += ", " + _precision_attrs(e, precision, a.dtype)
    y = e.op("stablehlo.dot_general", [a, b], shape, acc, attrs)
    return [e.convert(y, dtype)]


@emits("convolution")
def _emit_convolution(e: Emitter, op: Op, args: list[V]) -> list[V]:
    shape, dtype = _out(op)
    lhs, rhs = args
    if not (lhs.dtype == "bfloat16" and rhs.dtype == "bfloat16"):
        lhs, rhs = e.convert(lhs, "float32"), e.convert(rhs, "float32")
    spatial = ", ".join(str(i) for i in range(len(lhs.shape) - 2))
    sep = ", " if spatial else ""
    dn = f"#stablehlo.conv<[b, f{sep}{spatial}]x[o, i{sep}{spatial}]->[b, f{sep}{spatial}]>"
    pads = [list(p) for p in op.attr("padding")]
    npad = len(pads)
    pad_text = (f"dense<{[[int(a), int(b)] for a, b in pads]}> : tensor<{npad}x2xi64>" if npad
                else "dense<> : tensor<0x2xi64>")
    attrs = (f"batch_group_count = 1 : i64, dimension_numbers = {dn}, "
             f"feature_group_count = {op.attr('feature_group_count')} : i64, "
             f"lhs_dilation = {_ints(op.attr('lhs_dilation'))}, padding = {pad_text}, "
             f"precision_config = [#stablehlo<precision {op.attr('precision')}>, "
             f"#stablehlo<precision {op.attr('precision')}>], "  # (convolution takes no dot algorithm)
             f"rhs_dilation = {_ints(op.attr('rhs_dilation'))}, window_strides = {_ints(op.attr('window_strides'))}")
    precision = op.attr("precision")
    if lhs.dtype == "float32" and e.emulate_passes and precision != "HIGHEST":
        exact = attrs.replace(f"#stablehlo<precision {precision}>", "#stablehlo<precision HIGHEST>")
        y = _mxu_passes(e, lhs, rhs, precision,
                        lambda x, w: e.op("stablehlo.convolution", [x, w], shape, "float32", exact))
        return [e.convert(y, dtype)]
    y = e.op("stablehlo.convolution", [lhs, rhs], shape, "float32", attrs)
    return [e.convert(y, dtype)]


@emits("reduce_window")
def _emit_reduce_window(e: Emitter, op: Op, args: list[V]) -> list[V]:
    (x,) = args
    kind = op.attr("kind")
    shape, dtype = _out(op)
    xw = e.widen(x)
    pads = op.attr("padding")
    if any(lo or hi for lo, hi in pads):  # the sim pads with `init` and reduces over it, padding included
        xw = e.pad(xw, e.const(op.attr("init"), (), xw.dtype), [p[0] for p in pads], [p[1] for p in pads])
    ident = e.const(_identity(kind, xw.dtype), (), xw.dtype)
    region = e.region([xw.dtype, xw.dtype], _combiner(e, kind))
    y = e.op("stablehlo.reduce_window", [xw, ident], shape, xw.dtype,
             f"window_dimensions = {_ints(op.attr('window'))}, window_strides = {_ints(op.attr('strides'))}", region)
    return [e.convert(y, dtype)]


# --------------------------------------------------------------------------------------------------------------
# modules

def missing_emitters(names: Sequence[str] | None = None) -> list[str]:
    """IR ops that have no StableHLO emitter (all of `ir.OPS` by default)."""
    from torchtpu.drivers.ir import OPS

    return sorted(n for n in (names if names is not None else OPS) if n not in EMITTERS)


def numel(shape: Sequence[int]) -> int:
    return math.prod(int(d) for d in shape)


def emit(program: Program, platform: str = "cpu", donate: dict[int, int] | None = None,
         checks: bool = False, emulate_passes: bool | None = None) -> Module:
    """The StableHLO module for `program`: flat 1-D parameters and results, reshaped inside.

    `donate` maps a parameter index to the result index that may reuse its buffer (`tf.aliasing_output`).
    With `checks`, the errors the sim raises inside ops (index out of range, integer division by zero, ...) are
    computed on the device and returned as one extra result (see `Module.checks`).
    """
    e = Emitter(platform, checks, emulate_passes)
    env: dict[int, V] = {}
    params = []
    for i, v in enumerate(program.inputs):
        flat = V(f"%arg{i}", (numel(v.shape),), v.dtype)
        alias = f" {{tf.aliasing_output = {donate[i]} : i32}}" if donate and i in donate else ""
        params.append(f"{flat.name}: {flat.type}{alias}")
        env[v.id] = e.reshape(flat, v.shape)
    for index, op in enumerate(program.ops):
        emitter = EMITTERS.get(op.name)
        if emitter is None:
            raise NotImplementedError(f"the pjrt driver has no StableHLO emitter for IR op {op.name!r}")
        e.raw(f"// #{index} {op.name}")
        e.current = (index, op.name)
        outs = emitter(e, op, [env[v.id] for v in op.inputs])
        for value, out in zip(op.outputs, outs):
            if (out.shape, out.dtype) != (value.shape, value.dtype):
                raise AssertionError(f"emitter for {op.name} gave {out.type}, expected "
                                     f"{tensor_type(value.shape, value.dtype)}")
            env[value.id] = out
    results = [e.reshape(env[v.id], (numel(v.shape),)) for v in program.outputs]
    if e.checks:
        e.raw("// checks")
        parts = []
        for _, flag, detail in e.checks:
            parts += [e.reshape(e.convert(flag, "int64"), (1,)), e.reshape(detail, (1,))]
        status = parts[0] if len(parts) == 1 else e.op("stablehlo.concatenate", parts, (len(parts),), "int64",
                                                        "dimension = 0 : i64")
        results.append(status)
    body = "\n".join(e.lines)
    result_types = ", ".join(r.type for r in results)
    ret = (f'    "func.return"({", ".join(r.name for r in results)}) : ({result_types}) -> ()')
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in program.name) or "main"
    text = (f"module @{name} attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{\n"
            f"  func.func public @main({', '.join(params)}) -> ({result_types}) {{\n"
            f"{body}{chr(10) if body else ''}{ret}\n  }}\n}}\n")
    return Module(text, tuple(c for c, _, _ in e.checks))


def emit_module(program: Program, platform: str = "cpu", donate: dict[int, int] | None = None,
                checks: bool = False, emulate_passes: bool | None = None) -> str:
    """The module text (see `emit`)."""
    return emit(program, platform, donate, checks, emulate_passes).text
