"""The IR: a StableHLO subset as an SSA graph, with a shape/dtype rule per op, a printer and a structural key.

Values carry only a shape and a dtype (no data). A Program is the unit a driver compiles and runs: its inputs
are buffers the caller passes in, its outputs are buffers the caller receives. Op names and semantics follow the
StableHLO spec (https://openxla.org/stablehlo/spec) wherever an equivalent exists; a few ops (gather along an
axis, scatter along an axis, cumulative, argmax, rng) are simpler forms of StableHLO's general gather, scatter,
reduce_window and rng_bit_generator, and their pjrt emitters expand them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

DTYPES = ("float32", "bfloat16", "float16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool",
          "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "complex32")
# fp8 (StableHLO f8E4M3FN, f8E5M2): converts and MXU operands (dot_general) only; never VPU math
FLOAT8_DTYPES = frozenset({"float8_e4m3fn", "float8_e5m2"})
# complex32 (torch's ComplexHalf: two float16, real part first, held as one 32-bit word per element): moved and
# converted only; any math converts it to complex64 first (as c10::complex<Half> widens to complex<float>) and
# rounds the result back. COMPLEX32_OPS are the IR ops that may read or produce it; the Builder refuses any other.
COMPLEX32_OPS = frozenset({"convert", "broadcast_in_dim", "reshape", "transpose", "slice", "reverse", "concatenate",
                           "pad", "gather_axis", "index_select", "select"})
FLOAT_DTYPES = frozenset({"float32", "bfloat16", "float16", "float64"})
INT_DTYPES = frozenset({"int64", "int32", "int16", "int8", "uint8"})
ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint8": 1, "bool": 1, "complex64": 8, "float8_e4m3fn": 1, "float8_e5m2": 1,
            "complex128": 16, "complex32": 4}


@dataclass(frozen=True, slots=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * ITEMSIZE[self.dtype]

    def __str__(self) -> str:
        return f"tensor<{'x'.join(map(str, self.shape))}{'x' if self.shape else ''}{self.dtype}>"


@dataclass(eq=False, slots=True)
class Value:
    id: int
    type: TensorType

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self) -> str:
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return len(self.type.shape)

    def __repr__(self) -> str:
        return f"%{self.id}:{self.type}"


@dataclass(frozen=True, slots=True)
class Op:
    name: str
    inputs: tuple[Value, ...]
    attrs: tuple[tuple[str, Any], ...]
    outputs: tuple[Value, ...]

    def attr(self, key: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    @property
    def attr_dict(self) -> dict[str, Any]:
        return dict(self.attrs)


@dataclass(slots=True)
class Program:
    inputs: list[Value]
    ops: list[Op]
    outputs: list[Value]
    name: str = "main"
    _key: tuple | None = field(default=None, repr=False)
    # (output index, input index): the output is written in place into that input's memory (an in-place ATen op,
    # its target donated as XLA's input-output aliasing does); costs may then price only the elements written
    aliases: tuple[tuple[int, int], ...] = ()

    def key(self) -> tuple:
        """A structural key: equal for programs with the same op graph, shapes, dtypes and attributes."""
        if self._key is None:
            number = {v.id: i for i, v in enumerate(self.inputs)}
            parts: list[Any] = [tuple((v.shape, v.dtype) for v in self.inputs)]
            for op in self.ops:
                for o in op.outputs:
                    number[o.id] = len(number)
                parts.append((op.name, tuple(number[v.id] for v in op.inputs), _attrs_key(op.attrs),
                              tuple((o.shape, o.dtype) for o in op.outputs)))
            parts.append(tuple(number[v.id] for v in self.outputs))
            if self.aliases:
                parts.append(("aliases", self.aliases))
            self._key = tuple(parts)
        return self._key

    def text(self) -> str:
        """StableHLO-flavoured text, for debugging and golden tests."""
        args = ", ".join(f"%{v.id}: {v.type}" for v in self.inputs)
        lines = [f"func.func @{self.name}({args}) {{"]
        for op in self.ops:
            outs = ", ".join(f"%{o.id}" for o in op.outputs)
            ins = ", ".join(f"%{v.id}" for v in op.inputs)
            attrs = ", ".join(f"{k}={v!r}" for k, v in op.attrs)
            types = ", ".join(str(o.type) for o in op.outputs)
            lines.append(f"  {outs} = {op.name}({ins}){' {' + attrs + '}' if attrs else ''} : {types}")
        lines.append(f"  return {', '.join(f'%{v.id}' for v in self.outputs)}")
        lines.append("}")
        return "\n".join(lines)


def _attrs_key(value: Any) -> Any:
    """`value` with every float that compares equal to a different float (0.0 == -0.0) or to nothing (NaN)
    replaced by its repr, so that such constants neither share an executable nor miss the cache every time."""
    cls = value.__class__
    if cls is float:
        return (float, repr(value)) if value == 0.0 or value != value else value
    if cls is tuple or cls is list:
        return tuple(_attrs_key(v) for v in value) if any(
            v.__class__ is not int and v.__class__ is not str for v in value) else value
    return value


@dataclass(frozen=True, eq=False, slots=True)
class Region:
    """A sub-program an op runs (the condition and body of `while`): a Program over 0-d values, applied to each
    element of the op's operands. Equal (and hashed) by the program's structural key, so an op holding one keys
    executables like any other attribute. `at(shape)` is the same program over values of `shape` (constants
    splatted to it), for drivers that run it on whole arrays."""

    program: Program

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Region) and self.program.key() == other.program.key()

    def __hash__(self) -> int:
        return hash(self.program.key())

    def __repr__(self) -> str:
        return f"Region<{len(self.program.inputs)} in, {len(self.program.ops)} ops, {len(self.program.outputs)} out>"

    def at(self, shape: tuple[int, ...]) -> Program:
        shape = tuple(shape)
        env: dict[int, Value] = {}
        counter = iter(range(1, 1 << 62))

        def retyped(v: Value) -> Value:
            new = Value(next(counter), TensorType(shape, v.dtype))
            env[v.id] = new
            return new

        inputs = [retyped(v) for v in self.program.inputs]
        ops = []
        for op in self.program.ops:
            attrs = tuple((k, shape if k == "shape" and op.name == "constant" else a) for k, a in op.attrs)
            ops.append(Op(op.name, tuple(env[v.id] for v in op.inputs), attrs, tuple(retyped(o) for o in op.outputs)))
        return Program(inputs, ops, [env[v.id] for v in self.program.outputs], self.program.name)


ShapeRule = Callable[..., list[TensorType]]


@dataclass(frozen=True, slots=True)
class IROp:
    """Everything the IR knows about one op, side by side (as JAX keeps a primitive's rules): its arity, its
    shape/dtype rule, its cost rule (drivers/ir_costs.py: shapes in, a simulated CostRecord out) and its padding
    rule (drivers/ir_padding.py: which output axes carry a padded dynamic dimension, or None when padding is
    unsafe). Drivers register their implementations against the name (`implements`, `unsupported`). An op
    with a `lowering` (drivers/ir_lowerings.py) is expanded by the Builder into other ops where it is emitted:
    no driver implements it and no Program holds it, so it has no cost or padding rule of its own."""

    name: str
    arity: int | None  # None: variadic
    shape_rule: ShapeRule
    kind: str  # "elementwise" | "reduction" | "movement" | "matmul" | "other"
    cost: Callable[..., Any] | None
    padding: Callable[..., Any] | None
    lowering: Callable[..., list[Value]] | None = None


OPS: dict[str, IROp] = {}
KINDS = ("elementwise", "reduction", "movement", "matmul", "other")


def define(name: str, arity: int | None, kind: str, *, cost: Callable[..., Any] | None = None,
           padding: Callable[..., Any] | None = None, lowering: Callable[..., list[Value]] | None = None
           ) -> Callable[[ShapeRule], ShapeRule]:
    """Decorates an op's shape rule. The op's cost and padding rules are required (no default guesses), unless
    it has a lowering (then it has neither: its expansion's ops have theirs)."""
    if kind not in KINDS:
        raise ValueError(f"IR op {name!r}: kind {kind!r}; valid: {KINDS}")
    if lowering is None and (not callable(cost) or not callable(padding)):
        raise TypeError(f"IR op {name!r} needs a cost rule and a padding rule (drivers/ir_costs.py, ir_padding.py)")
    if lowering is not None and (cost is not None or padding is not None):
        raise TypeError(f"IR op {name!r} has a lowering: its expansion's ops carry the cost and padding rules")

    def register(rule: ShapeRule) -> ShapeRule:
        if name in OPS:
            raise ValueError(f"IR op {name!r} is defined twice")
        OPS[name] = IROp(name, arity, rule, kind, cost, padding, lowering)
        return rule

    return register


# Each driver's implementation of each op (a sim kernel, a pjrt emitter), and the ops a driver declines with a
# reason. A driver's table is the dict it looks ops up in; the registry test checks every op x every driver.
IMPLS: dict[str, dict[str, Callable[..., Any]]] = {}
UNSUPPORTED: dict[str, dict[str, str]] = {}


def impls(driver: str) -> dict[str, Callable[..., Any]]:
    """`driver`'s table: IR op name -> its implementation (filled by `implements`)."""
    UNSUPPORTED.setdefault(driver, {})
    return IMPLS.setdefault(driver, {})


def _check_new(driver: str, name: str) -> None:
    if name not in OPS:
        raise KeyError(f"{driver} driver: an implementation registered for unknown IR op {name!r} (define the op "
                       f"in drivers/ir_ops.py first)")
    if OPS[name].lowering is not None:
        raise ValueError(f"{driver} driver: IR op {name!r} is a lowering (drivers/ir_lowerings.py), expanded "
                         f"before any driver sees it")
    if name in impls(driver) or name in UNSUPPORTED[driver]:
        raise ValueError(f"{driver} driver: IR op {name!r} registered twice")


def implements(driver: str, *names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers the decorated function as `driver`'s implementation of each IR op in `names`."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            _check_new(driver, name)
            impls(driver)[name] = fn
        return fn

    return register


def unsupported(driver: str, name: str, reason: str) -> None:
    """Declares that `driver` cannot run IR op `name`, and why: compiling a program with it raises that reason."""
    if not reason:
        raise ValueError(f"{driver} driver: declining IR op {name!r} needs a reason")
    _check_new(driver, name)
    UNSUPPORTED[driver][name] = reason


def unsupported_error(driver: str, name: str) -> NotImplementedError:
    """The error a driver raises when asked to compile IR op `name` it has no implementation of."""
    reason = UNSUPPORTED.get(driver, {}).get(name)
    if reason is not None:
        return NotImplementedError(f"the {driver} driver does not support IR op {name!r}: {reason}")
    return NotImplementedError(f"the {driver} driver has no implementation of IR op {name!r}")


def _freeze(v: Any) -> Any:
    if isinstance(v, list | tuple):
        return tuple(_freeze(x) for x in v)
    return v


class Builder:
    """Builds a Program op by op, checking each op with its shape rule as it is added."""

    def __init__(self) -> None:
        self.inputs: list[Value] = []
        self.ops: list[Op] = []
        self._next = 0

    def _value(self, t: TensorType) -> Value:
        self._next += 1
        return Value(self._next, t)

    def input(self, shape: Sequence[int], dtype: str) -> Value:
        v = self._value(TensorType(tuple(int(d) for d in shape), dtype))
        self.inputs.append(v)
        return v

    def emit(self, name: str, inputs: Sequence[Value], **attrs: Any) -> list[Value]:
        opdef = OPS.get(name)
        if opdef is None:
            raise KeyError(f"unknown IR op {name!r}")
        if opdef.arity is not None and len(inputs) != opdef.arity:
            raise TypeError(f"IR op {name} takes {opdef.arity} inputs, got {len(inputs)}")
        frozen = tuple(sorted((k, _freeze(v)) for k, v in attrs.items()))
        out_types = opdef.shape_rule(*[v.type for v in inputs], **dict(frozen))
        if name not in COMPLEX32_OPS and not (name == "scatter_axis" and attrs.get("reduce") == "replace") and (
                any(v.dtype == "complex32" for v in inputs) or any(t.dtype == "complex32" for t in out_types)):
            raise NotImplementedError(f"IR op {name} does not take complex32 (moved and converted only; valid: "
                                      f"{', '.join(sorted(COMPLEX32_OPS))}, scatter_axis with reduce='replace'): "
                                      "convert to complex64 first")
        if opdef.lowering is not None:
            outs_lowered = opdef.lowering(self, *inputs, **dict(frozen))
            if [v.type for v in outs_lowered] != list(out_types):
                raise AssertionError(f"the lowering of IR op {name} gave {[str(v.type) for v in outs_lowered]}, "
                                     f"its shape rule {[str(t) for t in out_types]}")
            return list(outs_lowered)
        outs = tuple(self._value(t) for t in out_types)
        self.ops.append(Op(name, tuple(inputs), frozen, outs))
        return list(outs)

    def splice(self, program: Program, inputs: Sequence[Value]) -> list[Value]:
        """Copies `program`'s ops into this builder with its inputs bound to `inputs`; returns its outputs.

        The ops were already checked by their shape rules when `program` was built, so they are not re-run.
        """
        env = {p.id: v for p, v in zip(program.inputs, inputs)}
        for p, v in zip(program.inputs, inputs):
            if p.type != v.type:
                raise TypeError(f"splice: input {p} bound to {v}")
        for op in program.ops:
            outs = tuple(self._value(o.type) for o in op.outputs)
            self.ops.append(Op(op.name, tuple(env[i.id] for i in op.inputs), op.attrs, outs))
            for o, n in zip(op.outputs, outs):
                env[o.id] = n
        return [env[v.id] for v in program.outputs]

    def finish(self, outputs: Sequence[Value], name: str = "main") -> Program:
        return Program(list(self.inputs), list(self.ops), list(outputs), name)


from torchtpu.drivers import ir_ops as _ir_ops  # noqa: E402,F401  (defines the op set)
