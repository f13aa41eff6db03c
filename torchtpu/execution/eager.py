"""Eager execution of one ATen op: trace its lowering once per signature into a Program, then replay it.

The signature is the op plus, for every argument, either (shape, dtype) for a tensor or the value itself for
anything else, plus the current matmul precision. A tpu tensor becomes a Program input; a 0-dim CPU tensor is
folded in as a scalar (as CUDA does); any other CPU tensor mixed with tpu tensors is an error naming both devices.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu import dtypes, runtime
from torchtpu.drivers.ir import Builder
from torchtpu.execution import deferred, fast_launch, float_inputs, modes, poison
from torchtpu.execution.float_inputs import class_key, is_generic
from torchtpu.ops.prims import convert
from torchtpu.ops.tracing import TORCH_TO_IR, Sym, aten_type_name, tracing
from torchtpu.precision import current_precision

LoweringFn = Callable[..., Any]
_TENSOR = "T"


class _Leaf:
    """Marks where a tpu tensor sits in the argument structure."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def flatten_args(op_name: str, args: Sequence[Any], kwargs: dict[str, Any]
                 ) -> tuple[list[torch.Tensor], tuple, tuple, dict[str, Any], int]:
    """(tpu tensors, signature key, args with tensors replaced by leaves, kwargs likewise, device index)."""
    tensors: list[torch.Tensor] = []
    key: list[Any] = []
    device: list[int] = []
    cpu_seen: list[torch.device] = []

    def visit(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            if x.device.type == "tpu":
                if device and device[0] != (x.device.index or 0):
                    raise RuntimeError(
                        f"Expected all tensors to be on the same device, but found at least two devices, "
                        f"tpu:{device[0]} and {x.device}! (in {op_name})")
                device.append(x.device.index or 0)
                tensors.append(x)
                key.append((_TENSOR, tuple(x.shape), x.dtype))
                return _Leaf(len(tensors) - 1)
            if x.dim() == 0 and not x.requires_grad:
                value = x.item()
                key.append(("S", value, x.dtype))
                return _Scalar(value, x.dtype)
            cpu_seen.append(x.device)
            key.append(("C", tuple(x.shape), x.dtype))
            return x
        if isinstance(x, list | tuple):
            key.append(("[", len(x)))
            return type(x)(visit(v) for v in x)
        key.append(x if isinstance(x, int | float | bool | str | type(None)) else repr(x))
        return x

    new_args = tuple(visit(a) for a in args)
    new_kwargs = {k: visit(v) for k, v in kwargs.items()}
    if cpu_seen:
        other = f"tpu:{device[0]}" if device else "tpu"
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, {other} and "
            f"{cpu_seen[0]}! (in {op_name}: move the CPU tensor with .to('tpu'))")
    return tensors, tuple(key), new_args, new_kwargs, (device[0] if device else -1)


class _Scalar:
    """A 0-dim CPU tensor argument, folded into the program as a typed constant."""

    __slots__ = ("value", "dtype")

    def __init__(self, value: Any, dtype: torch.dtype) -> None:
        self.value, self.dtype = value, dtype


class Traced:
    """A traced op: its Program (compiled on first eager launch) plus where the outputs go.

    `launch` is what a direct (non-deferred) launch compiles: `program` itself, or, when the op had a float
    scalar argument, `program` with its float scalar constants turned into 0-d inputs (`scalars`, their buffers)
    so that a new value reuses the compiled executable (see float_inputs.py; with a `template`, the trace too).
    """

    __slots__ = ("program", "exe", "out_types", "structure", "launch", "scalars", "template")

    def __init__(self, program: Any, out_types: list[tuple[tuple[int, ...], torch.dtype]], structure: Any) -> None:
        self.program, self.out_types, self.structure = program, out_types, structure
        self.launch = program
        self.scalars: tuple = ()
        self.exe = None
        self.template: float_inputs.Template | None = None  # set when generic floats are keyed by class


def _has_float(x: Any) -> bool:
    if x.__class__ is float:
        return True
    if isinstance(x, _Scalar):
        return x.dtype.is_floating_point
    if isinstance(x, list | tuple):
        return any(_has_float(v) for v in x)
    return False


def _bind(x: Any, syms: list[Sym]) -> Any:
    if isinstance(x, _Leaf):
        return syms[x.index]
    if isinstance(x, _Scalar):
        from torchtpu.ops.prims import const
        return const(x.value, x.dtype)
    if isinstance(x, list | tuple):
        return type(x)(_bind(v, syms) for v in x)
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
          out_dtypes: Sequence[torch.dtype] | None = None, name: str = "main") -> tuple[Any, Any, list[Sym]]:
    builder = Builder()
    for d in [t.dtype for t in tensors] + list(out_dtypes or ()):
        dtypes.check_compute(d, name)
    with tracing(builder):
        syms = [Sym(builder.input(t.shape, TORCH_TO_IR[t.dtype])) for t in tensors]
        try:
            result = lowering(*_bind(args, syms), **{k: _bind(v, syms) for k, v in kwargs.items()})
        except KeyError as exc:  # a dtype the IR lacks, asked for inside the lowering (e.g. a dtype= argument)
            refusal = dtypes.refusal_for(exc, name)
            if refusal is None:
                raise
            raise refusal from None
        outs: list[Sym] = []
        structure = _flatten_out(result, outs)
        if out_dtypes is not None:  # in-place results: the result type must cast to the target's, as in ATen
            for s, d in zip(outs, out_dtypes):
                if not torch.can_cast(s.dtype, d):
                    raise RuntimeError(f"result type {aten_type_name(s.dtype)} can't be cast to the desired "
                                       f"output type {aten_type_name(d)}")
            outs = [convert(s, d) for s, d in zip(outs, out_dtypes)]
    return builder.finish([s.value for s in outs], name=name), structure, outs


_cache: dict[tuple, Traced] = {}
_MAX_CACHE = 8192
_TENSOR_TYPE = torch.Tensor
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


class _Slow(Exception):
    """The fast signature met something it leaves to `flatten_args` (CPU tensors, non-tpu devices)."""


def _sig_into(x: Any, tensors: list[torch.Tensor], key: list[Any], device: list[int],
              floats: list[float] | None) -> None:
    if isinstance(x, _TENSOR_TYPE):
        if x.is_cpu:
            if x.dim() or x.requires_grad:
                raise _Slow
            value = x.item()
            key.append(("S", _scalar_key(value), x.dtype))
            return
        d = x.get_device()
        if d < 0 or (device and device[0] != d) or x.is_conj() or x.is_neg():
            raise _Slow
        if not device:
            device.append(d)
        tensors.append(x)
        key.append((x.shape, x.dtype))
        return
    cls = x.__class__
    if cls is float and floats is not None and is_generic(x):
        key.append(class_key(x))
        floats.append(x)
    elif cls is int or cls is float or cls is bool or cls is str:
        key.append(_scalar_key(x))
    elif x is None:
        key.append(None)
    elif cls is list or cls is tuple:
        key.append((cls, len(x)))
        for v in x:
            _sig_into(v, tensors, key, device, floats)
    elif isinstance(x, _HASHABLE_TYPES):
        key.append(x)
    elif isinstance(x, list | tuple):
        key.append((cls, len(x)))
        for v in x:
            _sig_into(v, tensors, key, device, floats)
    else:
        key.append((cls, repr(x)))


def signature(op_name: str, args: Sequence[Any], kwargs: dict[str, Any], out_dtypes: tuple,
              floats: list[float] | None = None) -> tuple[tuple | None, list[torch.Tensor], int]:
    """(cache key, tpu tensors in argument order, device index or -1). The key holds the op, the matmul
    precision, the out= / in-place result dtypes, the keyword names, each tensor's (shape, dtype) and each
    scalar's type and value. None when an argument needs `flatten_args` (which reports the error). With a
    `floats` list, generic floats enter the key by class only and are appended to it (float_inputs.py)."""
    tensors: list[torch.Tensor] = []
    device: list[int] = []
    key: list[Any] = [op_name, current_precision()._value_, out_dtypes]  # (an Enum hashes in Python)
    try:
        for x in args:
            _sig_into(x, tensors, key, device, floats)
        if kwargs:
            key.append(tuple(kwargs))
            for x in kwargs.values():
                _sig_into(x, tensors, key, device, floats)
    except _Slow:
        return None, tensors, -1
    return tuple(key), tensors, (device[0] if device else -1)


def _has_lazy_bits(x: Any) -> bool:
    if isinstance(x, _TENSOR_TYPE):
        return x.is_conj() or x.is_neg()
    if isinstance(x, list | tuple):
        return any(_has_lazy_bits(v) for v in x)
    return False


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


def _overlaps_itself(t: torch.Tensor) -> bool:
    """ATen's has_internal_overlap == YES: a dimension of size > 1 with stride 0 (an expanded view)."""
    return not t.is_contiguous() and any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride()))


# the in-place ops ATen lets write an expanded view (fill_, zero_, masked_fill_, index_put_, index_fill_)
_OVERLAP_WRITES = frozenset({"fill", "zero", "masked_fill", "index_put", "_index_put_impl", "index_fill"})
_BY_VALUE = object()  # cache entry: this op's generic floats shape its program, key them by value


def result_types(op_name: str, lowering: LoweringFn, args: Sequence[Any],
                 kwargs: dict[str, Any]) -> list[tuple[tuple[int, ...], torch.dtype]] | None:
    """(shape, dtype) of each result `run` would return, without running it; None if the arguments are not
    ones `run` takes as they are (it then reports the error itself)."""
    key, _, _ = signature(op_name, args, kwargs, ())
    if key is None:
        return None
    traced = _cache.get(key)
    if traced is None or traced is _BY_VALUE:
        tensors, _, bargs, bkwargs, _ = flatten_args(op_name, args, kwargs)
        _, _, outs = trace(lowering, tensors, bargs, bkwargs, name=op_name)
        return [(tuple(s.shape), s.dtype) for s in outs]
    return list(traced.out_types)


def run(op_name: str, lowering: LoweringFn, args: Sequence[Any], kwargs: dict[str, Any],
        write_into: Sequence[torch.Tensor] | None = None, device: int | None = None,
        fast_kind: int | None = fast_launch.INFER, floats_as_inputs: bool = False) -> Any:
    """Runs `lowering` on the active driver. With `write_into`, results land in those tensors (in-place/out=).
    `fast_kind`: how the C++ launch cache may serve this call again (fast_launch kinds; None: it may not);
    `floats_as_inputs`: the op's record says its generic floats are program inputs (float_inputs.py)."""
    out_dtypes = tuple(t.dtype for t in write_into) if write_into is not None else ()
    drv = runtime.driver()
    mode = modes.get_eager_mode()
    floats: list[float] | None = None
    if floats_as_inputs and drv.strided_operands:
        floats = []
    key, tensors, dev = signature(op_name, args, kwargs, out_dtypes, floats)
    if key is None and _has_lazy_bits((*args, *kwargs.values())):  # mm, bmm, dot: ATen's Conjugate-key fallthroughs
        args, kwargs = _resolve_lazy_bits(args), {k: _resolve_lazy_bits(v) for k, v in kwargs.items()}
        key, tensors, dev = signature(op_name, args, kwargs, out_dtypes, floats)
    traced = _cache.get(key) if key is not None else None
    if traced is _BY_VALUE:
        floats = None
        key, tensors, dev = signature(op_name, args, kwargs, out_dtypes)
        traced = _cache.get(key)
    if traced is None:
        tensors, _, bargs, bkwargs, dev = flatten_args(op_name, args, kwargs)
        if key is None:  # flatten_args raises for what the fast signature refused; a meta tensor would land here
            raise RuntimeError(f"{op_name}: unsupported arguments for the tpu device")
        targets = list(out_dtypes) if write_into is not None else None
        program, structure, outs = trace(lowering, tensors, bargs, bkwargs, targets, name=op_name)
        traced = Traced(program, [(s.shape, s.dtype) for s in outs], structure)
        if _has_float(bargs) or _has_float(tuple(bkwargs.values())):  # a value that may change each call
            traced.launch, traced.scalars, values = float_inputs.hoist(program)
            if floats:
                def retrace(a: tuple, k: dict[str, Any]) -> Any:
                    return trace(lowering, tensors, a, k, targets, name=op_name)[0]

                traced.template = float_inputs.template(retrace, bargs, bkwargs, traced.launch, values, floats)
                if traced.template is None:
                    _cache[key] = _BY_VALUE
                    floats = None
                    key = signature(op_name, args, kwargs, out_dtypes)[0]
            traced.launch, traced.scalars, traced.template = float_inputs.share(
                traced.launch, traced.scalars, values, traced.template)
        if len(_cache) >= _MAX_CACHE:  # scalar arguments are part of the key (a changing lr makes new entries)
            _cache.clear()
        _cache[key] = traced
    if dev < 0:
        dev = device if device is not None else torch.tpu.current_device()
    if write_into is not None:
        outputs = list(write_into)
        for t, (shape, _) in zip(outputs, traced.out_types):
            if tuple(t.shape) != shape:
                raise RuntimeError(f"{op_name}: output with shape {list(t.shape)} doesn't match the broadcast "
                                   f"shape {list(shape)}")
            if _overlaps_itself(t) and op_name.split(".")[1].rstrip("_") not in _OVERLAP_WRITES:
                raise RuntimeError(f"{op_name}: unsupported operation: more than one element of the written-to "
                                   "tensor refers to a single memory location. Please clone() the tensor before "
                                   "performing the operation.")
    else:
        dev_obj = _device_obj(dev)
        outputs = [torch.empty(shape, dtype=dtype, device=dev_obj) for shape, dtype in traced.out_types]
    if not drv.strided_operands:  # operands are whole storages (deferred regions view them); flush each op
        deferred.record(op_name, traced.program, tensors, outputs, dev)
        if mode is not modes.EagerMode.DEFER_AND_FUSE:
            deferred.flush(raised_at_call=True)
    elif mode is modes.EagerMode.DEFER_AND_FUSE and deferred.can_defer(tensors, outputs):
        # the float-hoisted program: a loop's per-step floats are event scalars, so its region replays
        scalars = float_inputs.buffers(traced.template, floats) if floats else traced.scalars
        deferred.record(op_name, traced.launch, tensors, outputs, dev, scalars)
    else:
        if deferred.pending():
            deferred.flush()
        if poison.active:
            poison.check_inputs(op_name, tensors, traced.launch)
        exe = traced.exe
        if exe is None:
            exe = traced.exe = drv.compile(traced.launch)  # the driver caches by structure: hoisted scalars hit
        buffer = runtime.buffer
        inputs = [buffer(t) for t in tensors]
        if floats:
            inputs += float_inputs.buffers(traced.template, floats)
        elif traced.scalars:
            inputs += traced.scalars
        drv.execute(exe, inputs, [buffer(t) for t in outputs], dev)
        if poison.active and write_into is not None:
            poison.overwritten(outputs)
        if mode is modes.EagerMode.LAUNCH_BLOCKING:
            drv.synchronize(dev)
        else:
            kind = fast_kind
            if kind == fast_launch.INFER:
                kind = fast_launch.kind_of(traced.structure, len(outputs), args, tensors, outputs, write_into)
            if kind is not None:
                fast_launch.store(op_name, exe, len(tensors), inputs[len(tensors):], traced.out_types, dev, drv, kind,
                                  traced.template if floats else None)
    structure = traced.structure
    return outputs[structure] if structure.__class__ is int else _unflatten(structure, outputs)
