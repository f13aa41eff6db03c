"""The StableHLO printer the emitters share: MLIR types and literals, SSA values (`V`), the `Emitter` that prints
ops into a function body, and the op table (`EMITTERS`, filled by the emit_* modules through `@emits`).

Program -> StableHLO text: one emitter per IR op, printed in MLIR's generic form.

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
from torchtpu.drivers import ir
from torchtpu.drivers.ir import FLOAT_DTYPES, INT_DTYPES, Op

MLIR_TYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64", "int64": "i64",
              "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "ui8", "bool": "i1",
              "complex64": "complex<f32>", "complex128": "complex<f64>", "uint32": "ui32", "uint64": "ui64",
              "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2", "uint16": "ui16",
              "complex32": "ui32"}  # complex32: XLA has none; its words, real part's float16 bits low
NP_DTYPES = {"float32": np.dtype(np.float32), "bfloat16": np.dtype(ml_dtypes.bfloat16),
             "float16": np.dtype(np.float16), "float64": np.dtype(np.float64), "int64": np.dtype(np.int64),
             "int32": np.dtype(np.int32), "int16": np.dtype(np.int16), "int8": np.dtype(np.int8),
             "uint8": np.dtype(np.uint8), "bool": np.dtype(np.bool_), "complex64": np.dtype(np.complex64),
             "complex128": np.dtype(np.complex128), "uint32": np.dtype(np.uint32), "uint64": np.dtype(np.uint64),
             "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn), "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
             "uint16": np.dtype(np.uint16), "complex32": np.dtype(np.uint32)}
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
    if dtype == "complex32":  # its word: each part rounded to f16 through f32 (the sim's `store`), real part low
        c = complex(value)  # type: ignore[arg-type]
        with np.errstate(over="ignore"):
            re, im = (int(np.float32(p).astype(np.float16).view(np.uint16)) for p in (c.real, c.imag))
        return str(re | im << 16)
    if dtype in ("complex64", "complex128"):
        c = complex(value)  # type: ignore[arg-type]
        part = "float32" if dtype == "complex64" else "float64"
        return f"({literal(c.real, part)}, {literal(c.imag, part)})"
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
    if dtype in FLOAT_DTYPES or dtype in ("complex64", "complex128"):
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
        self._producers: dict[str, tuple[str, tuple[str, ...]]] = {}  # value name -> (op name, operand names)

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
        self._producers[out.name] = (name, tuple(v.name for v in operands))
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
        if x.dtype == "complex32":
            return self.convert(self._complex32_values(x), dtype)
        if dtype == "complex32":
            return self._complex32_bits(self.convert(x, "complex64"))
        if dtype == "bool":
            return self.compare("NE", x, self.like(0, x))
        if x.dtype in ("bfloat16", *ir.FLOAT8_DTYPES) and dtype != "float32":
            x = self.unary("stablehlo.convert", x, "float32")
            if dtype == "float32":
                return x
        elif dtype in ("bfloat16", *ir.FLOAT8_DTYPES) and x.dtype not in ("float32", "bool"):
            x = self.unary("stablehlo.convert", x, "float32")
        return self.unary("stablehlo.convert", x, dtype)  # float -> int truncates, as the sim's store

    def _complex32_values(self, x: V) -> V:
        """complex32 words (ui32) as complex<f32>: each 16-bit half bitcast to f16 and widened (exact)."""
        words = V(x.name, x.shape, "uint32")  # the same SSA value: complex32's MLIR type is ui32
        halves = [self.binary("stablehlo.and", words, self.like(0xFFFF, words)),
                  self.binary("stablehlo.shift_right_logical", words, self.like(16, words))]
        re, im = (self.unary("stablehlo.convert", self.bitcast(self.unary("stablehlo.convert", h, "uint16"),
                                                               "float16"), "float32") for h in halves)
        return self.op("stablehlo.complex", [re, im], x.shape, "complex64")

    def _complex32_bits(self, x: V) -> V:
        """complex<f32> as complex32 words: each part rounded to f16 once (RNE), its bits packed real-low."""
        re, im = (self.unary(f"stablehlo.{part}", x, "float32") for part in ("real", "imag"))
        lo, hi = (self.unary("stablehlo.convert", self.bitcast(self.unary("stablehlo.convert", p, "float16"),
                                                               "uint16"), "uint32") for p in (re, im))
        words = self.binary("stablehlo.or", lo, self.binary("stablehlo.shift_left", hi, self.like(16, hi)))
        return V(words.name, words.shape, "complex32")

    def is_splat(self, x: V) -> bool:
        """Whether `x` is a constant or a broadcast, possibly converted: what XLA's simplifier rewrites a
        division by into a multiplication by the reciprocal (one rounding more than the division)."""
        name, operands = self._producers.get(x.name, ("", ()))
        while name == "stablehlo.convert":
            name, operands = self._producers.get(operands[0], ("", ()))
        return name in ("stablehlo.constant", "stablehlo.broadcast_in_dim")

    def barrier(self, x: V) -> V:
        """`x` behind an optimization barrier: later passes cannot look through it."""
        return self.op("stablehlo.optimization_barrier", [x], x.shape, x.dtype)

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
EMITTERS: dict[str, EmitFn] = ir.impls("pjrt")  # IR op name -> emitter, filled by `emits` (ir.implements)


def emits(*names: str) -> Callable[[EmitFn], EmitFn]:
    """Registers the decorated function as the StableHLO emitter of each IR op in `names` (each known, once)."""
    return ir.implements("pjrt", *names)


def _out(op: Op, i: int = 0) -> tuple[tuple[int, ...], str]:
    return op.outputs[i].shape, op.outputs[i].dtype


def numel(shape: Sequence[int]) -> int:
    return math.prod(int(d) for d in shape)
