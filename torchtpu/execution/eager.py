"""Eager execution of one ATen op: trace its lowering once per signature into a Program, then replay it.

The signature is the op plus, for every argument, (shape, dtype) for a tensor, the type for a float or for an
int or complex value of a Scalar-typed argument (a program input from the first trace: ops/scalar_args.py; the
value for an argument the lowering declares static), the value itself for anything else (bools included),
plus the current matmul precision. A tpu tensor becomes a Program input; a 0-dim CPU tensor is folded in as a
scalar (as CUDA does: a float or int one as an input, others as constants); any other CPU tensor mixed with tpu
tensors is an error naming both devices.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from torchtpu import dtypes, runtime
from torchtpu.drivers.ir import Builder
from torchtpu.execution import deferred, fast_launch, launch, modes, out_layout
from torchtpu.ops import out_rules, scalar_args
from torchtpu.ops.prims import const, convert
from torchtpu.ops.scalar_args import StaticRead
from torchtpu.ops.tracing import TORCH_TO_IR, Sym, aten_type_name, current_builder, tracing
from torchtpu.precision import current_precision

LoweringFn = Callable[..., Any]


class Traced:
    """A traced op: its Program (compiled on first eager launch), where the outputs go, and `bindings`: the
    Program's 0-d inputs after the tensors, each made from the call's scalar values (ops/scalar_args.py)."""

    __slots__ = ("program", "exe", "out_types", "structure", "bindings", "out_strides")

    def __init__(self, program: Any, out_types: list[tuple[tuple[int, ...], torch.dtype]], structure: Any,
                 bindings: tuple, out_strides: tuple | None = None) -> None:
        self.program, self.out_types, self.structure, self.bindings = program, out_types, structure, bindings
        self.out_strides = out_strides  # per fresh output, strides (None: contiguous); None: all contiguous
        self.exe = None


def _bind(x: Any, syms: Iterator[Sym], placeholders: Iterator[int] | None, kinds: tuple[type, ...],
          what: str) -> Any:
    """The arguments as the lowering sees them: tpu tensors by their Syms (in `signature`'s order), scalars of
    `kinds` and 0-dim CPU float tensors as placeholders (`placeholders`: their indices; None: by value), other
    0-dim CPU tensors as typed constants."""
    if isinstance(x, _TENSOR_TYPE):
        if not x.is_cpu:
            return next(syms)
        if placeholders is not None and x.dtype.is_floating_point:
            p = scalar_args.make(float, next(placeholders), what)
            return Sym(scalar_args.current().input(current_builder(), p, TORCH_TO_IR[x.dtype], None))
        if placeholders is not None and x.dtype in _INT_SCALAR_DTYPES:  # `x + 2`: a wrapped int, an input too
            return const(scalar_args.make(int, next(placeholders), what), x.dtype)
        return const(x.item(), x.dtype)
    if placeholders is not None and x.__class__ in kinds:
        return scalar_args.make(x.__class__, next(placeholders), what)
    if isinstance(x, list | tuple):
        return type(x)(_bind(v, syms, placeholders, kinds, what) for v in x)
    return x


def _flatten_out(result: Any, outs: list[Sym]) -> Any:
    if isinstance(result, Sym):
        outs.append(result)
        return len(outs) - 1
    if isinstance(result, list | tuple):
        return type(result)(_flatten_out(r, outs) for r in result)
    if result is None:
        return None
    raise TypeError(f"a lowering returned {type(result).__name__}; expected Sym or a sequence of Sym")


def trace(lowering: LoweringFn, tensors: list[torch.Tensor], args: tuple, kwargs: dict[str, Any],
          out_dtypes: Sequence[torch.dtype] | None = None, name: str = "main",
          static: Static = None, out_shapes: Sequence[Any] = ()) -> tuple[Any, Any, list[Sym], tuple]:
    """(Program, output structure, output Syms, bindings of its 0-d inputs after the tensors' ones).
    `out_shapes`: the in-place targets' shapes; a result of another shape is left to run's shape check, which
    ATen makes before the cast check (TensorIterator's compute_shape precedes compute_types)."""
    builder = Builder()
    for d in [t.dtype for t in tensors] + list(out_dtypes or ()):
        dtypes.check_compute(d, name)
    inputs = scalar_args.Inputs()
    with tracing(builder), scalar_args.collecting(inputs):
        syms = iter([Sym(builder.input(t.shape, TORCH_TO_IR[t.dtype])) for t in tensors])
        index = itertools.count()
        bound_args = tuple(_bind(v, syms, None if (kinds := _kinds(static, i, None)) is None else index, kinds,
                                 f"argument {_arg_name(static, i)} of {name}") for i, v in enumerate(args))
        bound_kwargs = {k: _bind(v, syms, None if (kinds := _kinds(static, -1, k)) is None else index, kinds,
                                 f"argument {k} of {name}") for k, v in kwargs.items()}
        try:
            result = lowering(*bound_args, **bound_kwargs)
        except KeyError as exc:  # a dtype the IR lacks, asked for inside the lowering (e.g. a dtype= argument)
            refusal = dtypes.refusal_for(exc, name)
            if refusal is None:
                raise
            raise refusal from None
        outs: list[Sym] = []
        structure = _flatten_out(result, outs)
        if out_dtypes is not None:  # in-place results: the result type must cast to the target's, as in ATen
            for i, (s, d) in enumerate(zip(outs, out_dtypes)):
                if i < len(out_shapes) and tuple(s.shape) != tuple(out_shapes[i]):
                    continue
                if not torch.can_cast(s.dtype, d) and name.removeprefix("aten.") not in out_rules.COPIES_INTO_OUT:
                    raise RuntimeError(f"result type {aten_type_name(s.dtype)} can't be cast to the desired "
                                       f"output type {aten_type_name(d)}")
        dtypes.check_complex32_results(outs, name)  # after the cast check, which CPU makes first
        if out_dtypes is not None:
            outs = [convert(s, d) for s, d in zip(outs, out_dtypes)]
        bindings = inputs.finish(builder)
    return builder.finish([s.value for s in outs], name=name), structure, outs, bindings


# How a lowering takes its scalars: (schema argument names, the static ones (keyed and traced by value), the
# Scalar-typed ones, whose int and complex values are program inputs too); None: floats are inputs, nothing else.
Static = tuple[tuple[str, ...], frozenset[str], frozenset[str]] | None
_FLOATS: tuple[type, ...] = (float,)
_SCALARS: tuple[type, ...] = (float, int, complex)  # bool has no placeholder class: bools are keyed by value


class _EveryArgument(frozenset):
    """The static set of an op whose lowering read a scalar it did not declare: every argument is by value."""

    def __contains__(self, _: object) -> bool:
        return True


_EVERY = _EveryArgument()
# Ops whose lowering read an undeclared float (op name -> the read): retraced with every float by value, so the
# call is still right (and the C++ cache, which keys scalars by type, never serves them). Tests set STRICT so a
# missing `static=` declaration raises there instead (tests/conftest.py).
undeclared_reads: dict[str, str] = {}
STRICT = False


def _by_value(static: Static) -> Static:
    return (static[0] if static is not None else (), _EVERY, frozenset())


def _fall_back(op_name: str, static: Static, exc: StaticRead) -> Static:
    """The static set to retrace with after the lowering read an undeclared float (every float by value);
    raises `exc` under STRICT, or when every float was already by value."""
    if STRICT or (static is not None and static[1] is _EVERY):
        raise exc
    undeclared_reads[op_name] = str(exc)
    return _by_value(static)


def _kinds(static: Static, position: int, name: str | None) -> tuple[type, ...] | None:
    """The classes of the argument's scalars that are program inputs; None: it is keyed and traced by value."""
    if static is None:
        return _FLOATS
    names, fixed, scalars = static
    name = name if name is not None else names[position] if position < len(names) else ""
    return None if name in fixed else _SCALARS if name in scalars else _FLOATS


def _arg_name(static: Static, position: int) -> str:
    return repr(static[0][position]) if static is not None and position < len(static[0]) else f"#{position}"


_cache: dict[tuple, Traced] = {}
_MAX_CACHE = 8192
_TENSOR_TYPE = torch.Tensor
# the dtypes of 0-dim CPU int tensors that are program inputs (the same list as build_key's in fast_launch_key.cpp)
_INT_SCALAR_DTYPES = frozenset((torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8))
_HASHABLE_TYPES = (torch.dtype, torch.device, torch.layout, torch.memory_format)
_devices: dict[int, torch.device] = {}


def _scalar_key(x: Any) -> Any:
    """A dict key for a Python scalar that equals another scalar's key only when both trace the same program:
    the type is part of it (True == 1 == 1.0 as dict keys) and so are 0.0's sign and NaN (0.0 == -0.0, nan != nan).
    """
    cls = x.__class__
    if cls is float and (x == 0.0 or x != x):
        return (cls, repr(x))
    return (cls, x)


class _Lazy(Exception):
    """A tpu tensor with a lazy conjugate or negative bit (`run` resolves it and signs the call again)."""


def _devices_error(op_name: str, first: str, other: Any, hint: str = "") -> RuntimeError:
    return RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, {first} "
                        f"and {other}! (in {op_name}{hint})")


def _sig_into(x: Any, tensors: list[torch.Tensor], key: list[Any], device: list[int],
              values: list[Any] | None, kinds: tuple[type, ...], host: list[torch.device]) -> None:
    """The one walk of a call's arguments (positional, then keyword values; lists depth-first). With `values`,
    scalars of `kinds` and 0-dim CPU float tensors enter the key by type and their values go to `values`."""
    if isinstance(x, _TENSOR_TYPE):
        if x.is_cpu and not x.dim() and not x.requires_grad:  # folded in as a scalar, as CUDA does
            if values is not None and (x.dtype.is_floating_point or x.dtype in _INT_SCALAR_DTYPES):
                key.append(("S", x.dtype))
                values.append(x.item())
            else:
                key.append(("S", _scalar_key(x.item()), x.dtype))
            return
        d = x.get_device()
        if d < 0:
            host.append(x.device)
            return
        if device and device[0] != d:
            raise _devices_error(key[0], f"tpu:{device[0]}", x.device)
        if x.is_conj() or x.is_neg():
            raise _Lazy
        if not device:
            device.append(d)
        tensors.append(x)
        shape = x.shape  # the strides too where they are not the default ones: they decide the outputs' layout
        if x.is_contiguous() and ((1 not in shape and 0 not in shape) or out_layout.default_strided(x)):
            key.append((shape, x.dtype))
        else:
            key.append((shape, x.dtype, x.stride()))
        return
    cls = x.__class__
    if values is not None and cls in kinds:
        key.append(cls)
        values.append(x)
    elif cls is int or cls is float or cls is bool or cls is str:
        key.append(_scalar_key(x))
    elif x is None:
        key.append(None)
    elif isinstance(x, list | tuple):
        key.append((cls, len(x)))
        for v in x:
            _sig_into(v, tensors, key, device, values, kinds, host)
    elif isinstance(x, _HASHABLE_TYPES):
        key.append(x)
    else:
        key.append((cls, repr(x)))


def signature(op_name: str, args: Sequence[Any], kwargs: dict[str, Any], out_types: tuple,
              values: list[Any], static: Static = None) -> tuple[tuple | None, list[torch.Tensor], int]:
    """(cache key, tpu tensors in argument order, device index or -1). The key holds the op, the matmul
    precision, the default dtype, the out= / in-place targets' (dtype, shape), the keyword names, each tensor's
    (shape, dtype), the type of each float and of each int or complex value of a Scalar-typed argument (its value
    goes to `values`; a
    `static` argument's value is in the key) and other scalars' type and value. None when a tensor has a lazy
    conjugate/negative bit. A CPU tensor mixed with tpu tensors (other than a 0-dim one) or tensors on two tpu
    devices raise."""
    tensors: list[torch.Tensor] = []
    device: list[int] = []
    host: list[torch.device] = []
    # (an Enum hashes in Python); the default dtype: an integer op's float result, a factory without dtype=
    key: list[Any] = [op_name, current_precision()._value_, torch.get_default_dtype(), out_types]
    try:
        for i, x in enumerate(args):
            kinds = _kinds(static, i, None)
            _sig_into(x, tensors, key, device, None if kinds is None else values, kinds or (), host)
        if kwargs:
            key.append(tuple(kwargs))
            for k, x in kwargs.items():
                kinds = _kinds(static, -1, k)
                _sig_into(x, tensors, key, device, None if kinds is None else values, kinds or (), host)
    except _Lazy:
        return None, tensors, -1
    if host:
        raise _devices_error(op_name, f"tpu:{device[0]}" if device else "tpu", host[0],
                             ": move the CPU tensor with .to('tpu')")
    return tuple(key), tensors, (device[0] if device else -1)


def _resolve_lazy_bits(x: Any) -> Any:
    """A conjugate or negative view materialized (the copy applies the bit), as ATen's fallback would."""
    if isinstance(x, _TENSOR_TYPE):
        return x.resolve_conj().resolve_neg() if x.is_conj() or x.is_neg() else x
    if isinstance(x, list | tuple):
        return type(x)(_resolve_lazy_bits(v) for v in x)
    return x


def _device_obj(index: int) -> torch.device:
    dev = _devices.get(index)
    if dev is None:
        dev = _devices[index] = torch.device("tpu", index)
    return dev


def _unflatten(structure: Any, outputs: list[torch.Tensor]) -> Any:
    if isinstance(structure, int):
        return outputs[structure]
    if isinstance(structure, list | tuple):
        return type(structure)(_unflatten(s, outputs) for s in structure)
    return None


def overlaps_itself(t: torch.Tensor) -> bool:
    """ATen's has_internal_overlap == YES: a dimension of size > 1 with stride 0 (an expanded view)."""
    return not t.is_contiguous() and any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride()))


def refuse_internal_overlap(op_name: str, t: torch.Tensor) -> None:
    """ATen's assert_no_internal_overlap for a tensor `op_name` writes: an expanded view is refused."""
    if overlaps_itself(t):
        raise RuntimeError(f"{op_name}: unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the tensor before "
                           "performing the operation.")


# the in-place ops ATen lets write an expanded view (fill_, zero_, masked_fill_, index_put_, index_fill_)
OVERLAP_WRITES = frozenset({"fill", "zero", "masked_fill", "index_put", "_index_put_impl", "index_fill"})
# in-place ops ATen returns from untouched for a tensor that is not complex (conj_physical_ of an expanded bool)
_NO_OP_UNLESS_COMPLEX = frozenset({"conj_physical"})


def overlap_allowed(name: str, t: torch.Tensor) -> bool:
    """Whether in-place op `name` ("aten.fill_.Scalar", "fill_", "_foreach_zero_") may write `t` where `t`
    overlaps itself: ATen's fill_ and its kin (their _foreach_ forms too), and the ops that do not write `t`."""
    parts = name.split(".")
    base = parts[min(1, len(parts) - 1)].removeprefix("_foreach_").rstrip("_")
    return base in OVERLAP_WRITES or (base in _NO_OP_UNLESS_COMPLEX and not t.is_complex())


def result_types(op_name: str, lowering: LoweringFn, args: Sequence[Any], kwargs: dict[str, Any],
                 static: Static = None) -> list[tuple[tuple[int, ...], torch.dtype]] | None:
    """(shape, dtype) of each result `run` would return, without running it; None if the arguments are not
    ones `run` takes as they are (a lazy conjugate/negative bit; it then resolves them itself)."""
    if undeclared_reads and op_name in undeclared_reads:
        static = _by_value(static)
    key, tensors, _ = signature(op_name, args, kwargs, (), [], static)
    if key is None:
        return None
    traced = _cache.get(key)
    if traced is None:
        try:
            _, _, outs, _ = trace(lowering, tensors, tuple(args), kwargs, name=op_name, static=static)
        except StaticRead as exc:
            return result_types(op_name, lowering, args, kwargs, _fall_back(op_name, static, exc))
        return [(tuple(s.shape), s.dtype) for s in outs]
    return list(traced.out_types)


def _check_written(op_name: str, outputs: list[torch.Tensor], traced: Traced) -> None:
    for t, (shape, _) in zip(outputs, traced.out_types):
        if tuple(t.shape) != shape:
            raise RuntimeError(f"{op_name}: output with shape {list(t.shape)} doesn't match the broadcast "
                               f"shape {list(shape)}")
        if not overlap_allowed(op_name, t):
            refuse_internal_overlap(op_name, t)


def _aliases(write_into: Sequence[torch.Tensor], tensors: list[torch.Tensor]) -> tuple[tuple[int, int], ...]:
    """(output, input) for each in-place target that is the program input at its own position (the first
    argument's tensors come first): that output overwrites that input's memory, same view, same storage."""
    return tuple((j, j) for j, t in enumerate(write_into) if j < len(tensors) and tensors[j] is t)


def run(op_name: str, lowering: LoweringFn, args: Sequence[Any], kwargs: dict[str, Any],
        write_into: Sequence[torch.Tensor] | None = None, device: int | None = None,
        fast_kind: int | None = fast_launch.INFER, static: Static = None, in_place: bool = False,
        meta: out_layout.MetaFn | None = None) -> Any:
    """Runs `lowering` on the active driver. With `write_into`, results land in those tensors (in-place/out=).
    `fast_kind`: how the C++ launch cache may serve this call again (fast_launch kinds; None: it may not);
    `static`: the schema's argument names and those whose value the lowering branches on; `in_place`: the call is
    an in-place op's (`write_into` is its first argument), so each result the program writes into the very input
    tensor it read is marked an alias of it (Program.aliases: what a cost may price as the elements written);
    `meta`: the op on meta tensors, which lays fresh outputs out as ATen does when an input is not
    default-contiguous (out_layout.py; None: contiguous)."""
    if undeclared_reads and op_name in undeclared_reads:
        static, fast_kind = _by_value(static), None
    # the targets' shapes too: copy_'s target is no argument, and a broadcasting copy's program is the target's
    out_types = tuple((t.dtype, t.shape) for t in write_into) if write_into is not None else ()
    out_dtypes = tuple(d for d, _ in out_types)
    values: list[Any] = []
    key, tensors, dev = signature(op_name, args, kwargs, out_types, values, static)
    if key is None:  # mm, bmm, dot: ATen's Conjugate-key fallthroughs
        args, kwargs = _resolve_lazy_bits(args), {k: _resolve_lazy_bits(v) for k, v in kwargs.items()}
        values = []
        key, tensors, dev = signature(op_name, args, kwargs, out_types, values, static)
    aliases = _aliases(write_into, tensors) if in_place and write_into is not None else ()
    if aliases:
        key = (*key, ("aliases", aliases))
    traced = _cache.get(key)
    if traced is None:
        try:
            program, structure, outs, bindings = trace(lowering, tensors, tuple(args), kwargs,
                                                       out_dtypes if write_into is not None else None, op_name,
                                                       static, [shape for _, shape in out_types])
        except StaticRead as exc:
            return run(op_name, lowering, args, kwargs, write_into, device, None, _fall_back(op_name, static, exc),
                       in_place, meta)
        program.aliases = aliases
        out_types = [(s.shape, s.dtype) for s in outs]
        strides = None
        if write_into is None and meta is not None and (out_layout.asks_always(meta) or
                                                        not all(map(out_layout.default_strided, tensors))):
            strides = out_layout.output_strides(meta, args, kwargs, out_types)
        traced = Traced(program, out_types, structure, bindings, strides)
        if len(_cache) >= _MAX_CACHE:  # a workload of ever-new shapes stays bounded
            _cache.clear()
        _cache[key] = traced
    if dev < 0:
        dev = device if device is not None else torch.tpu.current_device()
    if write_into is not None:
        outputs = list(write_into)
        _check_written(op_name, outputs, traced)
    else:
        dev_obj = _device_obj(dev)
        if traced.out_strides is None:
            outputs = [torch.empty(shape, dtype=dtype, device=dev_obj) for shape, dtype in traced.out_types]
        else:
            outputs = out_layout.allocate(traced.out_types, traced.out_strides, dev_obj)
    scalars = scalar_args.buffers(traced.bindings, values, runtime.scalar_buffer) if traced.bindings else ()
    exe = launch.launch(op_name, traced.program, tensors, outputs, dev, scalars, traced.exe)
    if exe is not None:
        traced.exe = exe
    mode = modes.get_eager_mode()
    if mode is not modes.EagerMode.LAUNCH_BLOCKING:
        kind = fast_kind
        if kind == fast_launch.INFER:
            kind = fast_launch.kind_of(traced.structure, len(outputs), args, tensors, outputs, write_into)
        if kind is None:
            pass
        elif exe is not None:
            fast_launch.store(op_name, exe, len(tensors), traced.bindings, traced.out_types, dev,
                              runtime.driver(), kind, traced.out_strides)
        else:  # recorded into the region (DEFER_AND_FUSE, or a whole-storage driver): a hit records from C++
            fast_launch.store_record(op_name, traced.program, deferred.structure_of(traced.program),
                                     len(tensors), traced.bindings, traced.out_types, dev, kind,
                                     traced.out_strides)
    structure = traced.structure
    return outputs[structure] if structure.__class__ is int else _unflatten(structure, outputs)
