"""Eager execution of one ATen op: trace its lowering once per signature into a Program, then replay it.

The signature is the op plus, for every argument, either (shape, dtype) for a tensor or the value itself for
anything else, plus the current matmul precision. A tpu tensor becomes a Program input; a 0-dim CPU tensor is
folded in as a scalar (as CUDA does); any other CPU tensor mixed with tpu tensors is an error naming both devices.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu import runtime
from torchtpu.drivers.ir import Builder
from torchtpu.execution import deferred, modes
from torchtpu.ops.prims import convert
from torchtpu.ops.tracing import TORCH_TO_IR, Sym, tracing
from torchtpu.precision import current_precision

Lowering = Callable[..., Any]
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
    """A traced op: its Program (compiled on first eager launch) plus where the outputs go."""

    __slots__ = ("program", "exe", "out_types", "structure")

    def __init__(self, program: Any, out_types: list[tuple[tuple[int, ...], torch.dtype]], structure: Any) -> None:
        self.program, self.out_types, self.structure = program, out_types, structure
        self.exe = None


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


def trace(lowering: Lowering, tensors: list[torch.Tensor], args: tuple, kwargs: dict[str, Any],
          out_dtypes: Sequence[torch.dtype] | None = None, name: str = "main") -> tuple[Any, Any, list[Sym]]:
    builder = Builder()
    with tracing(builder):
        syms = [Sym(builder.input(t.shape, TORCH_TO_IR[t.dtype])) for t in tensors]
        result = lowering(*_bind(args, syms), **{k: _bind(v, syms) for k, v in kwargs.items()})
        outs: list[Sym] = []
        structure = _flatten_out(result, outs)
        if out_dtypes is not None:
            outs = [convert(s, d) for s, d in zip(outs, out_dtypes)]
    return builder.finish([s.value for s in outs], name=name), structure, outs


_cache: dict[tuple, Traced] = {}
_MAX_CACHE = 8192


def _unflatten(structure: Any, outputs: list[torch.Tensor]) -> Any:
    if isinstance(structure, int):
        return outputs[structure]
    if isinstance(structure, list | tuple):
        return type(structure)(_unflatten(s, outputs) for s in structure)
    return None


def run(op_name: str, lowering: Lowering, args: Sequence[Any], kwargs: dict[str, Any],
        write_into: Sequence[torch.Tensor] | None = None, device: int | None = None) -> Any:
    """Runs `lowering` on the active driver. With `write_into`, results land in those tensors (in-place/out=)."""
    tensors, key, bargs, bkwargs, dev = flatten_args(op_name, args, kwargs)
    if dev < 0:
        dev = device if device is not None else torch.tpu.current_device()
    out_dtypes = [t.dtype for t in write_into] if write_into is not None else None
    full_key = (op_name, key, current_precision(), tuple(out_dtypes or ()))
    traced = _cache.get(full_key)
    if traced is None:
        program, structure, outs = trace(lowering, tensors, bargs, bkwargs, out_dtypes, name=op_name)
        traced = Traced(program, [(s.shape, s.dtype) for s in outs], structure)
        if len(_cache) >= _MAX_CACHE:  # scalar arguments are part of the key (a changing lr makes new entries)
            _cache.clear()
        _cache[full_key] = traced
    if write_into is not None:
        outputs = list(write_into)
        for t, (shape, _) in zip(outputs, traced.out_types):
            if tuple(t.shape) != shape:
                raise RuntimeError(f"{op_name}: output with shape {list(t.shape)} doesn't match the broadcast "
                                   f"shape {list(shape)}")
    else:
        dev_obj = torch.device("tpu", dev)
        outputs = [torch.empty(shape, dtype=dtype, device=dev_obj) for shape, dtype in traced.out_types]
    drv = runtime.driver()
    mode = modes.get_eager_mode()
    if not drv.host_addressable:  # every op goes through storage-level buffers; eager modes flush each op
        deferred.record(op_name, traced.program, tensors, outputs, dev)
        if mode is not modes.EagerMode.DEFER_AND_FUSE:
            deferred.flush()
    elif mode is modes.EagerMode.DEFER_AND_FUSE and deferred.can_defer(tensors, outputs):
        deferred.record(op_name, traced.program, tensors, outputs, dev)
    else:
        if deferred.pending():
            deferred.flush()
        if traced.exe is None:
            traced.exe = drv.compile(traced.program)
        modes.execute(drv, traced.exe, tensors, outputs, dev, op_name)
    return _unflatten(traced.structure, outputs)
