"""The ATen seam: one `Lowering` record per ATen op overload, in one table, and the one path that runs it.

Every way an op reaches the device makes its record through `define()`, which raises on a second definition of
the same op and role, naming both sites:
- `@lower(aten.foo.overload, ...)`: a function whose body uses only `torchtpu.ops.prims`, traced into a Program
  per signature, in eager mode and in compiled graphs alike; a functional lowering's in-place and out= siblings
  are derived records (an explicit record of the sibling wins);
- `kernel(op, fn)`: a host kernel on real tensors, registered as it is (data-dependent output shapes such as
  nonzero, in-place statistics, copies across the host boundary); the op files' `register(kernel)` functions;
- `decompositions.ACCEPTED`: upstream decompositions, listed, never copied;
- `@lower(op, graph_only=True)`: the value an op has in a functional graph where eager mode reaches it another
  way (compile/views.py: views, which eager mode aliases with ATen's own kernels).

A record has two roles: `fn`, what eager mode runs, and `graph`, what a compiled graph lowers its node to.
`register_all()` makes each eager record's dispatcher kernel by its schema kind (functional, in-place, out=) and
registers it on PrivateUse1, behind the C++ launch cache when `fast_kind` says so. Every executor runs a record
through `apply()`: the eager kernels, the deferred recorder (fed by eager.run) and the compile backend. Ops
without a record fall back to CPU, counted per op (fallback.py).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch._ops import OpOverload

from torchtpu import dtypes
from torchtpu.execution import determinism, eager, fast_launch, out_layout, overlap
from torchtpu.ops import (
    arg_order_checks,
    complex_to_float_out,
    dtype_refusals,
    expanded_fill,
    many_dims,
    out_checks,
    out_rules,
)
from torchtpu.ops.out_rules import (
    check_out_count,
    check_out_devices,
    check_out_dtype,
    fills_out_dtype,
    resize_out,
    takes_out_dtype,
)

Prepare = Callable[[tuple, dict[str, Any]], tuple[tuple, dict[str, Any]]]
HOWS = ("lowering", "inplace", "out", "kernel", "decomposition", "graph")
TRACED = ("lowering", "inplace", "out")  # the hows whose kernel traces the lowering into a program
# Scalar, Scalar?, Scalar[]; and Tensor, whose Python int or complex is a number the dispatcher wrapped (`x + 2`)
_SCALAR_TYPES = frozenset({"number", "Optional[number]", "List[number]", "Tensor"})


@dataclass(frozen=True)
class Lowering:
    """Everything the executors know about one ATen op overload."""

    op: OpOverload
    fn: Callable[..., Any] | None  # eager mode: the traced lowering or the host kernel; None: not registered
    graph: Callable[..., Any] | None  # a compiled graph's lowering of the op's node; None: not lowerable there
    how: str  # HOWS: lowering, its derived inplace / out siblings, kernel, decomposition, graph (graph only)
    random: bool = False  # the lowering takes the RNG state as `rng=`
    prepare: Prepare | None = None  # runs on the real arguments first (boolean masks -> indices)
    static: frozenset[str] = frozenset()  # scalar arguments the lowering branches on: keyed and traced by value
    data_dependent: bool = False  # a host kernel whose output shape depends on the values (nonzero, unique)
    fast_kind: int | None = None  # how the C++ launch cache serves the kernel (fast_launch kinds); None: never
    fast_name: str = ""  # the op name its eager.run calls use (the C++ cache's key)
    site: str = ""  # where `fn` was defined (module:line)
    graph_site: str = ""  # where `graph` was defined
    name: str = ""  # "aten::add.Tensor"
    other_keys: tuple[tuple[str, Callable[..., Any], str], ...] = ()  # (dispatch key, kernel, site): lazy bits

    @functools.cached_property
    def static_spec(self) -> eager.Static:
        """(the schema's argument names, the static ones, the Scalar-typed ones that are not static): what
        eager.run keys and traces scalars by (eager.Static)."""
        args = self.op._schema.arguments
        scalars = frozenset(a.name for a in args if str(a.type) in _SCALAR_TYPES and a.name not in self.static)
        return tuple(a.name for a in args), self.static, scalars

    @property
    def qualified(self) -> str:
        return f"{self.op._schema.name}.{self.op._overloadname}"


TABLE: dict[OpOverload, Lowering] = {}
_libs: list[torch.library.Library] = []


def _caller_site(depth: int) -> str:
    frame = sys._getframe(depth + 1)
    return f"{frame.f_globals.get('__name__', '?')}:{frame.f_lineno}"


def define(op: OpOverload, how: str, fn: Callable[..., Any] | None = None, graph: Callable[..., Any] | None = None,
           *, site: str, key: str = "PrivateUse1", random: bool = False, prepare: Prepare | None = None,
           static: Sequence[str] = (), data_dependent: bool = False, fast: tuple[int, str] | None = None) -> Lowering:
    """Creates or completes `op`'s record: the one way into TABLE. Each role (the eager `fn`, the `graph`
    lowering, a kernel on another dispatch `key`) is defined once; a second definition is an error naming both
    sites."""
    if not isinstance(op, OpOverload):
        raise TypeError(f"a lowering is defined for an OpOverload (aten.foo.default), got {op!r} at {site}")
    if how not in HOWS:
        raise ValueError(f"{op}: how={how!r} is not one of {HOWS}")
    old = TABLE.get(op) or Lowering(op=op, fn=None, graph=None, how=how, name=str(op), fast_name=str(op))
    if key != "PrivateUse1":
        for other, _, other_site in old.other_keys:
            if other == key:
                raise ValueError(f"{op} is defined twice for the {key} key: at {other_site} and at {site}")
        TABLE[op] = dataclasses.replace(old, other_keys=(*old.other_keys, (key, fn, site)))
        return TABLE[op]
    if fn is not None and old.fn is not None:
        raise ValueError(f"{op} is defined twice: at {old.site} ({old.how}) and at {site} ({how})")
    if graph is not None and old.graph is not None:
        raise ValueError(f"{op} has two graph lowerings: at {old.graph_site} and at {site}")
    record = old
    if graph is not None:
        record = dataclasses.replace(record, graph=graph, graph_site=site)
    if fn is not None:
        record = dataclasses.replace(record, fn=fn, site=site, how=how, random=random, prepare=prepare,
                                     static=frozenset(static), data_dependent=data_dependent)
        kind, name = fast if fast is not None else (_fast_kind(record), str(op))
        record = dataclasses.replace(record, fast_kind=kind, fast_name=name)
    TABLE[op] = record
    return record


def lower(*ops: OpOverload, random: bool = False, prepare: Prepare | None = None, static: Sequence[str] = (),
          graph_only: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Defines `fn` as the lowering of `ops`. `random`: the lowering takes the RNG state as `rng=`;
    `prepare`: runs on the real arguments first (e.g. boolean masks -> indices, which need data);
    `static`: the scalar arguments (by schema name) whose value the lowering branches on (pow's exponent):
    they are keyed and traced by value; every other float, and every other int or complex value of a
    Scalar-typed argument, is a program input (ops/scalar_args.py);
    `graph_only`: only compiled graphs use it (eager mode reaches the op through ATen's own kernel)."""
    site = _caller_site(1)
    if graph_only and (random or prepare is not None or static):
        raise ValueError(f"{site}: a graph_only lowering takes no flags (random, prepare, static)")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in static:
            if all(name not in [a.name for a in op._schema.arguments] for op in ops):
                raise ValueError(f"{site}: static={name!r} is not an argument of {', '.join(map(str, ops))}")
        for op in ops:
            if graph_only:
                define(op, "graph", None, fn, site=site)
            else:
                define(op, "lowering", fn, fn, site=site, random=random, prepare=prepare, static=static)
        return fn

    return register


def kernel(op: OpOverload, fn: Callable[..., Any], *, data_dependent: bool = False,
           fast: tuple[int, str] | None = None, key: str = "PrivateUse1") -> None:
    """Defines a host kernel for `op` (runs on real tensors; registered as it is). `data_dependent`: its output
    shape depends on the values (it reads a count first); `fast`: (fast_launch kind, the op name its eager.run
    calls use) when the C++ launch cache may serve it; `key`: another dispatch key (Conjugate, Negative)."""
    define(op, "kernel", fn, site=_caller_site(1), data_dependent=data_dependent, fast=fast, key=key)


HOPS: dict[Any, Callable[..., Any]] = {}  # higher-order op -> (its node's arguments -> (ATen op, args) or None)


def hop(target: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Defines what a compiled graph's node of the higher-order op `target` (torch.ops.higher_order.*) is: `fn`
    maps the node's arguments to (an ATen op with a record, its arguments), or None when the graph must run op by
    op instead (eager mode runs the op's own dispatch-key kernels)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if target in HOPS:
            raise ValueError(f"{target} has two graph rewrites: {HOPS[target]} and {fn}")
        HOPS[target] = fn
        return fn

    return register


def lowering_of(op: OpOverload) -> Callable[..., Any]:
    """The traced lowering of `op` (for lowerings built from others, e.g. foreach maps them over lists)."""
    record = TABLE.get(op)
    if record is None or record.how not in TRACED:
        raise KeyError(f"{op} has no traced lowering")
    return record.fn


class _Lowerings(Mapping):
    """op -> traced lowering function: a read-only view of TABLE for op files that build on other lowerings."""

    def __getitem__(self, op: OpOverload) -> Callable[..., Any]:
        return lowering_of(op)

    def __iter__(self) -> Iterator[OpOverload]:
        return (op for op, r in TABLE.items() if r.how == "lowering")

    def __len__(self) -> int:
        return sum(1 for r in TABLE.values() if r.how == "lowering")

    def __contains__(self, op: object) -> bool:
        record = TABLE.get(op)  # type: ignore[call-overload]
        return record is not None and record.how == "lowering"

    def get(self, op: Any, default: Any = None) -> Any:
        return TABLE[op].fn if op in self else default


OP_TABLE = _Lowerings()


# --- schema kinds -------------------------------------------------------------------------------------------------

def _is_inplace(op: OpOverload) -> bool:
    schema = op._schema
    return bool(schema.arguments) and schema.arguments[0].is_write and not schema.arguments[0].kwarg_only


def _out_args(op: OpOverload) -> list[str]:
    return [a.name for a in op._schema.arguments if a.kwarg_only and a.is_write]


def schema_kind(op: OpOverload) -> str:
    """"inplace" (writes its first argument), "out" (writes keyword-only out= tensors) or "functional"."""
    if _is_inplace(op):
        return "inplace"
    return "out" if _out_args(op) else "functional"


def _fast_kind(record: Lowering) -> int | None:
    """How the C++ launch cache serves a traced record's kernel: by schema kind, never for random state, and for
    a prepared op only where its kernel stores just the calls that `prepare` left as they were."""
    if record.how not in TRACED or record.random:
        return None
    op, kind = record.op, schema_kind(record.op)
    if kind == "out":
        return fast_launch.OUT if record.prepare is None else None
    if kind == "inplace":
        if str(op._schema.arguments[0].type).startswith("List"):
            return fast_launch.INPLACE_LIST if record.prepare is None else None
        return fast_launch.INPLACE
    returns = op._schema.returns
    if len(returns) == 1 and str(returns[0].type) == "List[Tensor]":
        return fast_launch.FUNCTIONAL_LIST
    return fast_launch.FUNCTIONAL


# --- apply: the one path from a call to its lowering -----------------------------------------------------------------

class GraphCall(Protocol):
    """What a compiled graph gives `apply` for one node (compile/backend.py)."""

    def static_kwargs(self, prepare: Prepare) -> dict[str, Any]: ...

    def rng_state(self, args: tuple) -> Any: ...


def _device_of(args: tuple, kwargs: dict[str, Any]) -> int:
    for x in (*args, *kwargs.values()):
        if isinstance(x, torch.Tensor) and x.device.type == "tpu":
            return x.device.index or 0
        if isinstance(x, list | tuple):
            for y in x:
                if isinstance(y, torch.Tensor) and y.device.type == "tpu":
                    return y.device.index or 0
    device = kwargs.get("device")
    if device is not None and torch.device(device).index is not None:
        return torch.device(device).index
    return torch.tpu.current_device()


def _draws(args: tuple, kwargs: dict[str, Any]) -> int:
    count = 1
    for x in (*args, *kwargs.values()):
        if isinstance(x, torch.Tensor):
            count = max(count, x.numel())
    return count


def apply(record: Lowering, args: tuple, kwargs: dict[str, Any], *, write_into: Any = None,
          out: list[torch.Tensor] | None = None, graph: GraphCall | None = None) -> Any:
    """Runs `record` on a call's arguments, reading its flags here only: `prepare`, then the RNG state, then the
    lowering. `graph`: a compiled graph's node (Syms in, Syms out; a prepare step may only add static keyword
    arguments). Else eager: traced and launched by eager.run (or recorded into the deferred region);
    `write_into`: the in-place targets; `out`: the out= targets (resized to the result as ATen does)."""
    if graph is not None:
        arg_order_checks.check(record.op, args, kwargs)
        dtype_refusals.check(record.op, args, kwargs)
        if record.prepare is not None:
            kwargs = {**kwargs, **graph.static_kwargs(record.prepare)}
        if record.random:
            kwargs = {**kwargs, "rng": graph.rng_state(args)}
        return dtypes.check_complex32_results(record.graph(*args, **kwargs), record.name)
    if many_dims.past_limit(args, kwargs, out):  # more dims than the driver's programs hold
        with fast_launch.not_stored():
            done = many_dims.run(record.op, args, kwargs, write_into=write_into, out=out)
        if done is not NotImplemented:
            return done
    determinism.alert(record.name, args, kwargs)
    if write_into is not None or out is not None:  # ATen's input/output overlap checks, before anything else
        overlap.refuse_overlap(record.name, write_into if out is None else out, args, kwargs, out is None)
        if out is None and expanded_fill.fill_expanded(record.name, args, kwargs):  # an expanded self's fill
            return write_into
    fast = fast_launch.INFER
    device = None
    if record.prepare is not None:
        new_args, new_kwargs = record.prepare(args, kwargs)
        if new_args is not args or new_kwargs is not kwargs:  # data-dependent: never served from the C++ cache
            fast = None
        args, kwargs = new_args, new_kwargs
    if record.random:
        from torchtpu import random as tpu_random

        device = _device_of(args, kwargs)
        kwargs = {**kwargs, "rng": tpu_random.next_state(device, _draws(args, kwargs))}
        fast = None
    elif "device" in kwargs and kwargs["device"] is not None:  # factories: no tensor names the device
        device = torch.device(kwargs["device"]).index
    if out is not None:
        return _write_out(record, args, kwargs, out, device, fast)
    return eager.run(record.name, record.fn, args, kwargs, write_into=write_into, device=device, fast_kind=fast,
                     static=record.static_spec, in_place=write_into is not None,
                     meta=None if write_into is not None else _meta_of(record))


_metas: dict[OpOverload, out_layout.MetaFn] = {}


def _meta_of(record: Lowering) -> out_layout.MetaFn:
    """The record's op on meta tensors (out_layout.py): what lays its fresh outputs out."""
    meta = _metas.get(record.op)
    if meta is None:
        meta = _metas[record.op] = out_layout.marked(record.op, out_layout.op_meta(record.op))
    return meta


_out_metas: dict[OpOverload, out_layout.MetaFn | None] = {}


def _out_meta(record: Lowering) -> out_layout.MetaFn | None:
    """The meta of the functional overload an out= op writes the results of (ATen lays a resized out= tensor out
    as that result: TensorIterator's permutation of its inputs); ATen's meta out= kernels do not restride."""
    if record.op not in _out_metas:
        _out_metas[record.op] = _functional_meta(record.op)
    return _out_metas[record.op]


def _functional_meta(op: OpOverload) -> out_layout.MetaFn | None:
    inputs = [(a.name, str(a.type)) for a in op._schema.arguments if not (a.kwarg_only and a.is_write)]
    packet = getattr(torch.ops.aten, op._schema.name.split("::")[1], None)
    for name in packet.overloads() if packet is not None and op._schema.name.startswith("aten::") else ():
        other = getattr(packet, name)
        if not _out_args(other) and [(a.name, str(a.type)) for a in other._schema.arguments] == inputs:
            return out_layout.marked(other, out_layout.op_meta(other))
    return None


def _write_out(record: Lowering, args: tuple, kwargs: dict[str, Any], targets: list[torch.Tensor],
               device: int | None, fast: int | None) -> None:
    name, fn = record.name, record.fn
    if complex_to_float_out.applies(record.op, args, targets):  # abs.out of a complex self: a complex out= too
        complex_to_float_out.check(record.op, args[0].dtype, targets[0].dtype)
        result = eager.run(name, fn, args, kwargs, device=device, static=record.static_spec)
        resize_out(targets[0], result.shape)
        targets[0].copy_(result)
        return
    if takes_out_dtype(record.op):  # linspace_out: computed in the out tensor's dtype, resized only if its numel
        target = targets[0]          # differs, written in its own shape (a (2, 2) view takes 4 steps row by row)
        eager.refuse_internal_overlap(name, target)
        if not target.dtype.is_complex and len(args) > 2:
            # linspace_out/logspace_out infer no dtype: a complex bound into a real out= is the kernel's (or
            # fill_'s) Scalar::to<scalar_t>(), c10's checked conversion to its real part (imaginary part 0); no
            # steps read neither bound
            convert = dtypes.checked_scalar if args[2] != 0 else lambda a, _: a.real
            args = (*(convert(a, target.dtype) if isinstance(a, complex) else a for a in args[:2]), *args[2:])
        result = eager.run(name, fn, args, {**kwargs, "dtype": target.dtype}, device=device,
                           static=record.static_spec)
        if target.numel() != result.numel():
            target.resize_(result.shape)
        target.copy_(result.view(target.shape))
        return
    if out_rules.iterator_writes_out(record.op) and len(targets) == 1 and kwargs.get("dtype") is None:
        if out_rules.reads_in_out_dtype(record.op) and (functional := eager.result_types(
                name, fn, args, kwargs, record.static_spec)):
            check_out_dtype(record.op, functional[0][1], targets[0].dtype, name)  # the reduction's cast first
        kwargs, fast = {**kwargs, "dtype": targets[0].dtype}, None  # mse_loss_backward.grad_input, logsumexp.out, ...
    types = eager.result_types(name, fn, args, kwargs, record.static_spec)
    dtype_given = kwargs.get("dtype") is not None
    if types and (dtype := out_rules.out_dtype_as_result(record.op, types[0][1], targets, dtype_given)) is not None:
        kwargs = {**kwargs, "dtype": dtype}  # sum(bool, out=<bool>): ATen's meta computes in the out's dtype
        dtype_refusals.check(record.op, args, kwargs)
        types, dtype_given = eager.result_types(name, fn, args, kwargs, record.static_spec), True
        fast = None  # the C++ launch key holds the call as made (dtype=None): never served from it
    # results computed first, then copied out (a factory filling its out tensor's dtype: a copy casts any)
    if types is None or len(types) != len(targets) or fills_out_dtype(record.op, dtype_given):
        result = eager.run(name, fn, args, kwargs, device=device, static=record.static_spec)
        flat = list(result) if isinstance(result, tuple | list) else [result]
        check_out_count(len(flat), len(targets), name)
        for i, (target, r) in enumerate(zip(targets, flat)):
            check_out_dtype(record.op, r.dtype, target.dtype, name, dtype_given, i)
            resize_out(target, r.shape)
            target.copy_(r)
        return
    for i, (target, (_, dtype)) in enumerate(zip(targets, types)):  # written in place: one launch
        check_out_dtype(record.op, dtype, target.dtype, name, dtype_given, i)
    resized = False
    for target, (shape, _) in zip(targets, types):
        if tuple(target.shape) != shape:
            resize_out(target, shape)
            fast = resized = None  # the C++ cache serves out= tensors written as they are, never resized
    if resized is None and (meta := _out_meta(record)) is not None:  # a resized out= tensor: ATen's layout
        out_layout.restride(targets, meta, args, kwargs, types)
    eager.run(name, fn, args, kwargs, write_into=targets, device=device,
              fast_kind=fast_launch.OUT if fast is not None and record.fast_kind is not None else None,
              static=record.static_spec)


# --- the kernel factory --------------------------------------------------------------------------------------------

def make_kernel(record: Lowering) -> Callable[..., Any]:
    """The dispatcher kernel of an eager record, behind the dtype refusals CPU and CUDA make for its op
    (ops/dtype_refusals.py), behind the checks CPU makes before those (ops/arg_order_checks.py)."""
    return arg_order_checks.guard(record.op, dtype_refusals.guard(record.op, _schema_kernel(record)))


def _schema_kernel(record: Lowering) -> Callable[..., Any]:
    """The kernel by the record's schema kind; host kernels and decompositions as they are."""
    if record.how == "decomposition":
        return _many_dims_guard(record)
    if record.how == "kernel":
        return record.fn
    kind = schema_kind(record.op)
    if kind == "functional":
        def functional(*args: Any, **kwargs: Any) -> Any:
            return apply(record, args, kwargs)

        return functional
    if kind == "inplace":
        if str(record.op._schema.arguments[0].type).startswith("List"):  # _foreach_*_: returns ()
            def inplace_list(self: list[torch.Tensor], *args: Any, **kwargs: Any) -> None:
                apply(record, (self, *args), kwargs, write_into=self)

            return inplace_list

        def inplace(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            apply(record, (self, *args), kwargs, write_into=(self,))
            return self

        return inplace
    out_names = _out_args(record.op)
    returns = bool(record.op._schema.returns)  # the _foreach_*.out overloads return ()

    def out(*args: Any, **kwargs: Any) -> Any:
        outs = [kwargs.pop(n) for n in out_names]
        targets = [t for o in outs for t in (o if isinstance(o, list) else (o,))]
        check_out_devices(args, kwargs, targets, record.name)
        out_checks.check(record.op, args, kwargs, dict(zip(out_names, outs)))
        apply(record, args, kwargs, out=targets)
        if not returns:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    return out


def _many_dims_guard(record: Lowering) -> Callable[..., Any]:
    """A decomposition's kernel behind many_dims (as `apply` is): a tensor past the driver's rank limit is computed
    on fewer dims or refused as the op, not as the first op of its decomposition."""
    fn, inplace = record.fn, schema_kind(record.op) == "inplace"

    def guarded(*args: Any, **kwargs: Any) -> Any:
        if many_dims.past_limit(args, kwargs):
            with fast_launch.not_stored():
                done = many_dims.run(record.op, args, kwargs, write_into=args[:1] if inplace else None,
                                     decomposed=True)
            if done is not NotImplemented:
                return args[0] if inplace else done
        return fn(*args, **kwargs)

    return guarded


# --- registration ----------------------------------------------------------------------------------------------------

def _sibling(op: OpOverload, inplace: bool) -> OpOverload | None:
    packet_name = op._schema.name.split("::")[1]
    overload = op._overloadname
    ns = torch.ops.aten
    inputs = [(a.name, str(a.type)) for a in op._schema.arguments]
    if inplace:  # the overload of name_ taking the functional's arguments (pow_.Scalar is pow.Tensor_Scalar's)
        packet = getattr(ns, packet_name + "_", None)
        names = [] if packet is None else [overload, *packet.overloads()]
        return next((getattr(packet, n) for n in names if n in packet.overloads() and
                     [(a.name, str(a.type)) for a in getattr(packet, n)._schema.arguments] == inputs), None)
    packet = getattr(ns, packet_name)
    positional = [str(a.type) for a in op._schema.arguments if not a.kwarg_only]
    for candidate in ((f"{overload}_out", "out") if overload == "default" else (f"{overload}_out",)):
        # by name, where its positional arguments have the functional's types (all.out is all.dim's, not
        # all.default's; a factory's out= drops the dtype/device keywords)
        if candidate in packet.overloads() and [str(a.type) for a in getattr(packet, candidate)._schema.arguments
                                                if not a.kwarg_only] == positional:
            return getattr(packet, candidate)
    # otherwise the out= overload whose other arguments are the functional's (sum.dim_IntList -> sum.IntList_out)
    for candidate in packet.overloads():
        other = getattr(packet, candidate)
        if _out_args(other) and [(a.name, str(a.type)) for a in other._schema.arguments
                                 if not (a.kwarg_only and a.is_write)] == inputs:
            return other
    return None


def _derive_siblings() -> None:
    """The in-place and out= records of each functional lowering (where the op has no eager record of its own)."""
    for record in [r for r in TABLE.values() if r.how == "lowering" and schema_kind(r.op) == "functional"]:
        for sibling, how in ((_sibling(record.op, True), "inplace"), (_sibling(record.op, False), "out")):
            if sibling is None or schema_kind(sibling) != how:
                continue
            existing = TABLE.get(sibling)
            if existing is not None and existing.fn is not None:
                continue  # its own record wins
            define(sibling, how, record.fn, None, site=record.site, random=record.random, prepare=record.prepare,
                   static=record.static)


def _argument_modes(record: Lowering) -> list[int]:
    """How the C++ launch cache keys each schema argument's scalars, as eager.run does for this record: by value
    (static), floats by type, or (a traced lowering's Scalar-typed argument) floats, ints and complex by type."""
    names, static, scalars = record.static_spec
    traced = record.how in TRACED
    return [fast_launch.BY_VALUE if n in static else fast_launch.SCALARS if traced and n in scalars
            else fast_launch.FLOATS for n in names]


def registered() -> dict[str, str]:
    """qualified overload name -> how, for every op registered on PrivateUse1 (after `register_all`)."""
    return {r.qualified: r.how for r in TABLE.values() if r.fn is not None}


def register_all() -> None:
    """Registers every eager record (and the derived siblings) on PrivateUse1. Runs once."""
    if _libs:
        return
    from torchtpu.ops import FAMILIES, copy, decompositions, fallback, load_families, optim, sparse_layouts

    load_families()
    import importlib

    copy.register(kernel)
    optim.register(kernel)
    for family in FAMILIES:  # host kernels (data-dependent shapes, in-place statistics)
        module = importlib.import_module(f"torchtpu.ops.{family}")
        if hasattr(module, "register"):
            module.register(kernel)
    composite = [str(r.op) for r in TABLE.values() if r.how == "lowering" and
                 torch._C._dispatch_has_kernel_for_dispatch_key(r.op.name(), "CompositeImplicitAutograd")]
    if composite:  # a PrivateUse1 kernel would hide the composite's autograd (gradients silently None)
        raise ValueError(f"CompositeImplicitAutograd ops must not be lowered (they decompose): {composite}")
    _derive_siblings()
    decompositions.define_all(define)
    lib = torch.library.Library("aten", "IMPL")
    _libs.append(lib)
    for record in TABLE.values():
        if record.fn is None:
            continue  # graph only, or only other dispatch keys
        dispatcher_kernel = make_kernel(record)
        if record.fast_kind is not None:
            name = record.op._schema.name.split("::")[1]
            local = name if record.op._overloadname == "default" else f"{name}.{record.op._overloadname}"
            if fast_launch.register_kernel(local, record.fast_name, dispatcher_kernel, record.fast_kind,
                                           _argument_modes(record)):  # the C++ launch cache, in front of the kernel
                continue
        lib.impl(record.op, dispatcher_kernel, "PrivateUse1")
    for record in TABLE.values():
        for key, fn, _ in record.other_keys:
            lib.impl(record.op, fn, key)
    fallback.register()
    sparse_layouts.register()
