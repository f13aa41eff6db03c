"""Python scalar arguments as placeholders: program inputs from the first trace, as JAX's weak-typed scalars.

An eager call's float arguments (and 0-dim CPU float tensors), and the int and complex values of its
Scalar-typed arguments (add's alpha, fill's value, clamp's bounds; schema int/int[]/bool/str arguments are
structural and stay by value, and so do bools), enter its cache key by type only; the lowering is traced with
a `Placeholder` of the value's class for each. A placeholder promotes as a Python scalar of its class does
(weakly), and where a
prim makes a constant of it (`prims.const`) the trace gets a 0-d input of that dtype instead, bound to the
argument, so every later value reuses the trace and the executable. Host arithmetic on placeholders
(`1 - p`, `lr / c`) is recorded and evaluated on the call's values in the same arithmetic the lowering would
have done (ints stay exact Python ints), so a launch's inputs hold exactly the constants a by-value trace would
bake. A check on the value (c10's overflow check of a scalar stored into a tensor, dtypes.check_scalar_fits) is
recorded too and runs at every call, from the C++ launch cache and in DEFER_AND_FUSE regions as well.

A lowering that branches on a value (`alpha == 1`, `pow(x, 2)`, a shape computed from a float) declares that
argument static (`@lower(..., static=("exponent",))`): its value enters the key and the lowering sees a plain
scalar. Reading a placeholder's value anywhere else raises `StaticRead` naming the op and the argument, so a
missing declaration fails closed, never bakes a wrong constant (C code that reads the value directly sees NaN,
or an int too large for any C integer).
"""

from __future__ import annotations

import math
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

Source = int | Callable[[Sequence[Any]], Any]  # a call's scalar by index, or a host expression over them


class StaticRead(RuntimeError):
    """A lowering read the value of a scalar argument it did not declare static (an internal error)."""


class Placeholder:
    """A scalar argument of a traced call (or a host expression over such arguments) whose value is unknown.

    The concrete classes subclass Python's float, int and complex, so a placeholder promotes as a value of its
    class does (weakly). Their stored value is one no C code can use silently: NaN, an int too large for any C
    integer (converting it raises OverflowError), NaN + NaN j. (bool has no subclasses: bools are keyed by value.)
    """

    source: Source
    what: str
    kind: type  # float, int or complex: the class the value has and promotes as

    def value(self, values: Sequence[Any]) -> Any:
        source = self.source
        return values[source] if source.__class__ is int else source(values)

    def _read(self, *_: Any) -> Any:
        raise StaticRead(f"internal error: the lowering read the value of {self.what}, a program input; declare "
                         "the argument static (@lower(..., static=(name,))) if the lowering must branch on it")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __int__ = __float__ = __hash__ = _read
    __round__ = __trunc__ = __floor__ = __ceil__ = __mod__ = __rmod__ = __floordiv__ = __rfloordiv__ = _read
    __divmod__ = __rdivmod__ = is_integer = as_integer_ratio = hex = __format__ = __getnewargs__ = _read
    __index__ = __complex__ = __lshift__ = __rshift__ = __and__ = __or__ = __xor__ = __invert__ = _read
    __rlshift__ = __rrshift__ = __rand__ = __ror__ = __rxor__ = bit_length = to_bytes = conjugate = _read

    def __repr__(self) -> str:
        return f"<{self.what}>"

    __str__ = __repr__


class FloatPlaceholder(Placeholder, float):
    kind = float


class IntPlaceholder(Placeholder, int):
    kind = int


class ComplexPlaceholder(Placeholder, complex):
    kind = complex


_CLASSES: dict[type, type] = {float: FloatPlaceholder, int: IntPlaceholder, complex: ComplexPlaceholder}
_UNUSABLE: dict[type, Any] = {float: math.nan, int: 1 << 1000, complex: complex(math.nan, math.nan)}


def make(kind: type, source: Source, what: str) -> Placeholder:
    """A placeholder of class `kind` (float, int or complex) for the call's value `source`."""
    cls = _CLASSES[kind]
    self = kind.__new__(cls, _UNUSABLE[kind])
    self.source, self.what = source, what
    return self


def known(x: Any) -> bool:
    """Whether `x`'s value is known while tracing (not a placeholder), so a lowering may branch on it."""
    return not isinstance(x, Placeholder)


_SAMPLE: dict[type, Any] = {bool: True, int: 3, float: 1.5, complex: 1.5j}


def _operand(x: Any) -> tuple[Callable[[Sequence[Any]], Any], type] | None:
    if isinstance(x, Placeholder):
        return x.value, x.kind
    if x.__class__ in _SAMPLE:
        return (lambda values, x=x: x), x.__class__
    return None


def _derived(op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    fa, fb = _operand(a), _operand(b)
    if fa is None or fb is None:
        return NotImplemented  # a Sym: its reflected operator promotes the placeholder as a weak scalar
    kinds = (fa[1], fb[1])
    if op is operator.pow and complex not in kinds and float not in kinds:
        return Placeholder._read(a if isinstance(a, Placeholder) else b)  # int ** int: int or float by the value
    kind = type(op(_SAMPLE[kinds[0]], _SAMPLE[kinds[1]]))
    what = a.what if isinstance(a, Placeholder) else b.what
    fa, fb = fa[0], fb[0]
    return make(kind, lambda values: op(fa(values), fb(values)), f"an expression of {what}")


def _binary(op: Callable[[Any, Any], Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return (lambda a, b: _derived(op, a, b)), (lambda a, b: _derived(op, b, a))


Placeholder.__add__, Placeholder.__radd__ = _binary(operator.add)
Placeholder.__sub__, Placeholder.__rsub__ = _binary(operator.sub)
Placeholder.__mul__, Placeholder.__rmul__ = _binary(operator.mul)
Placeholder.__truediv__, Placeholder.__rtruediv__ = _binary(operator.truediv)
Placeholder.__pow__, Placeholder.__rpow__ = _binary(operator.pow)
Placeholder.__neg__ = lambda a: make(a.kind, lambda values: -a.value(values), a.what)
Placeholder.__pos__ = lambda a: a
Placeholder.__abs__ = lambda a: make(float if a.kind is complex else a.kind, lambda values: abs(a.value(values)),
                                     a.what)
Placeholder.real = property(lambda a: a if a.kind is not complex else make(float, lambda v: a.value(v).real, a.what))
Placeholder.imag = property(lambda a: make(float, lambda v: complex(a.value(v)).imag, a.what) if a.kind is complex
                            else a._read())


class Inputs:
    """The placeholders' program inputs of one trace: one per (placeholder, dtype), in creation order, and the
    checks on their values (c10's overflow check of a scalar stored into a tensor) that every call runs."""

    def __init__(self) -> None:
        self.bindings: list[tuple[Source, str]] = []
        self.checks: list[Callable[[Sequence[Any]], None]] = []
        self._made: dict[tuple[int, str], Any] = {}
        self._keep: list[Placeholder] = []  # the placeholders keyed by id() stay alive for the trace

    def input(self, builder: Any, p: Placeholder, ir_dtype: str, convert: Callable[[Any], Any] | None) -> Any:
        key = (id(p.source) if p.source.__class__ is not int else p.source, ir_dtype)
        value = self._made.get(key)
        if value is None:
            source = p.source if convert is None else (lambda values, f=p.value: convert(f(values)))
            value = self._made[key] = builder.input((), ir_dtype)
            self.bindings.append((source, ir_dtype))
            self._keep.append(p)
        return value

    def finish(self, builder: Any) -> tuple[tuple[Source, str], ...]:
        """The bindings, the first one running the checks before it makes its value (so a launch from the C++
        cache runs them too; a trace with checks but no input of its own gets an unused 0-d input for them)."""
        if not self.checks:
            return tuple(self.bindings)
        if not self.bindings:
            builder.input((), "bool")
            self.bindings.append((lambda values: False, "bool"))
        (first, dtype), checks = self.bindings[0], tuple(self.checks)

        def checked(values: Sequence[Any]) -> Any:
            for check in checks:
                check(values)
            return values[first] if first.__class__ is int else first(values)

        return ((checked, dtype), *self.bindings[1:])


def check_each_call(p: Placeholder, check: Callable[[Any], None]) -> None:
    """Runs `check` on `p`'s value at every call of the trace being made (before its launch)."""
    inputs = current()
    if inputs is None:
        p._read()
    inputs.checks.append(lambda values: check(p.value(values)))
    inputs._keep.append(p)


_state = threading.local()


def current() -> Inputs | None:
    return getattr(_state, "inputs", None)


class collecting:  # noqa: N801 - a context manager
    """Placeholders made into inputs while tracing go to `inputs` (None: a placeholder is an error there)."""

    def __init__(self, inputs: Inputs | None) -> None:
        self.inputs = inputs

    def __enter__(self) -> Inputs | None:
        self.prev = getattr(_state, "inputs", None)
        _state.inputs = self.inputs
        return self.inputs

    def __exit__(self, *exc: object) -> None:
        _state.inputs = self.prev


def buffers(bindings: Sequence[tuple[Source, str]], values: Sequence[Any], scalar_buffer: Callable) -> tuple:
    """The 0-d input buffers of a launch for this call's scalar values."""
    return tuple(scalar_buffer(values[s] if s.__class__ is int else s(values), d) for s, d in bindings)
