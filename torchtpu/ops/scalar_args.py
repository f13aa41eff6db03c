"""Python float arguments as placeholders: program inputs from the first trace, as JAX's weak-typed scalars.

An eager call's float arguments (and 0-dim CPU float tensors) enter its cache key by type only; the lowering
is traced with a `Placeholder` for each. A placeholder promotes as a Python float does (weakly), and where a
prim makes a constant of it (`prims.const`) the trace gets a 0-d input of that dtype instead, bound to the
argument, so every later value reuses the trace and the executable. Host arithmetic on placeholders
(`1 - p`, `lr / c`) is recorded and evaluated on the call's values in the same double arithmetic the lowering
would have done, so a launch's inputs hold exactly the constants a by-value trace would bake.

A lowering that branches on a value (`alpha == 1`, `pow(x, 2)`, a shape computed from a float) declares that
argument static (`@lower(..., static=("exponent",))`): its value enters the key and the lowering sees a plain
float. Reading a placeholder's value anywhere else raises `StaticRead` naming the op and the argument, so a
missing declaration fails closed, never bakes a wrong constant (C code that reads the float directly sees NaN).
"""

from __future__ import annotations

import math
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

Source = int | Callable[[Sequence[float]], Any]  # a call's float by index, or a host expression over them


class StaticRead(RuntimeError):
    """A lowering read the value of a float argument it did not declare static (an internal error)."""


class Placeholder(float):
    """A float argument of a traced call (or a host expression over such arguments) whose value is unknown."""

    source: Source
    what: str

    def __new__(cls, source: Source, what: str) -> Placeholder:
        self = super().__new__(cls, math.nan)
        self.source, self.what = source, what
        return self

    def value(self, values: Sequence[float]) -> Any:
        source = self.source
        return values[source] if source.__class__ is int else source(values)

    def _read(self, *_: Any) -> Any:
        raise StaticRead(f"internal error: the lowering read the value of {self.what}, a program input; declare "
                         "the argument static (@lower(..., static=(name,))) if the lowering must branch on it")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __int__ = __float__ = __hash__ = _read
    __round__ = __trunc__ = __floor__ = __ceil__ = __mod__ = __rmod__ = __floordiv__ = __rfloordiv__ = _read
    __divmod__ = __rdivmod__ = is_integer = as_integer_ratio = hex = __format__ = __getnewargs__ = _read

    def __repr__(self) -> str:
        return f"<{self.what}>"

    __str__ = __repr__


def known(x: Any) -> bool:
    """Whether `x`'s value is known while tracing (not a placeholder), so a lowering may branch on it."""
    return not isinstance(x, Placeholder)


def _operand(x: Any) -> Callable[[Sequence[float]], Any] | None:
    if isinstance(x, Placeholder):
        return x.value
    if x.__class__ in (int, float, bool):
        return lambda values, x=x: x
    return None


def _derived(op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    fa, fb = _operand(a), _operand(b)
    if fa is None or fb is None:
        return NotImplemented  # a Sym: its reflected operator promotes the placeholder as a weak float
    what = a.what if isinstance(a, Placeholder) else b.what
    return Placeholder(lambda values: op(fa(values), fb(values)), f"an expression of {what}")


def _binary(op: Callable[[Any, Any], Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    return (lambda a, b: _derived(op, a, b)), (lambda a, b: _derived(op, b, a))


Placeholder.__add__, Placeholder.__radd__ = _binary(operator.add)
Placeholder.__sub__, Placeholder.__rsub__ = _binary(operator.sub)
Placeholder.__mul__, Placeholder.__rmul__ = _binary(operator.mul)
Placeholder.__truediv__, Placeholder.__rtruediv__ = _binary(operator.truediv)
Placeholder.__pow__, Placeholder.__rpow__ = _binary(operator.pow)
Placeholder.__neg__ = lambda a: Placeholder(lambda values: -a.value(values), a.what)
Placeholder.__pos__ = lambda a: a
Placeholder.__abs__ = lambda a: Placeholder(lambda values: abs(a.value(values)), a.what)


class Inputs:
    """The placeholders' program inputs of one trace: one per (placeholder, dtype), in creation order."""

    def __init__(self) -> None:
        self.bindings: list[tuple[Source, str]] = []
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


def buffers(bindings: Sequence[tuple[Source, str]], values: Sequence[float], scalar_buffer: Callable) -> tuple:
    """The 0-d input buffers of a launch for this call's float values."""
    return tuple(scalar_buffer(values[s] if s.__class__ is int else s(values), d) for s, d in bindings)
