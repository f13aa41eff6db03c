"""DEFER_AND_FUSE: ops append to a pending region; a flush turns the region into one Program, cached by
structure, which the driver fuses and runs in one launch.

State is kept per storage: each storage the region touches has a flat value (its whole contents as a 1-D IR
value). Reading a tensor is a view expression over its storage's value (reshape / transpose / slice, or a gather
for any other strides); writing one replaces the storage's value (or scatters into it for a partial view). A
flush reads the storages that were read before being written as program inputs, and writes back only storages
that someone besides the region still references: an intermediate that died before the flush never touches
memory. Deferred outputs hold their storage from the call, so memory accounting is exact.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from torchtpu import runtime
from torchtpu.drivers.base import ExecutionError
from torchtpu.drivers.ir import Builder, Program, Value
from torchtpu.ops import prims as P
from torchtpu.ops.tracing import TORCH_TO_IR, Sym, tracing

MAX_REGION_OPS = int(os.environ.get("TORCHTPU_MAX_REGION_OPS", "20000"))
_PACKAGE_DIRS = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(torch.__file__))


@dataclass
class _Storage:
    holder: torch.Tensor  # flat view of the whole storage: keeps it alive and is the buffer at flush
    input: Value | None = None
    value: Value | None = None
    written: bool = False


@dataclass
class _Region:
    builder: Builder = field(default_factory=Builder)
    storages: dict[int, _Storage] = field(default_factory=dict)
    scalars: list[tuple[Value, Any]] = field(default_factory=list)  # hoisted constants: (input, host value)
    origins: list[tuple[int, str, str]] = field(default_factory=list)  # (first IR op index, aten op, user line)
    device: int = -1


@dataclass
class RegionStats:
    flushes: int = 0
    hits: int = 0
    misses: int = 0
    ops_deferred: int = 0
    consecutive_misses: int = 0
    warned: bool = False
    last_inputs: tuple = ()


_lock = threading.RLock()
_region = _Region()
stats = RegionStats()


def pending() -> bool:
    return bool(_region.builder.ops) or bool(_region.storages)


def _key(t: torch.Tensor) -> int | tuple:
    ptr = t.data_ptr() - t.storage_offset() * t.element_size()  # the storage's address, without a storage object
    return ptr if t.data_ptr() else ("empty", t.dtype)  # every zero-byte storage has address 0


def _user_line() -> str:
    frame = sys._getframe(2)
    for _ in range(40):
        if frame is None:
            break
        name = frame.f_code.co_filename
        if not name.startswith(_PACKAGE_DIRS) and "<frozen" not in name:
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def can_defer(tensors: list[torch.Tensor], targets: list[torch.Tensor] | None) -> bool:
    """Zero-size tensors, storages seen under two dtypes and cross-device regions run eagerly instead."""
    for t in (*tensors, *(targets or ())):
        if t.numel() == 0 or not t.data_ptr():
            return False
        entry = _region.storages.get(_key(t))
        if entry is not None and entry.holder.dtype != t.dtype:
            return False
        if _region.device >= 0 and (t.device.index or 0) != _region.device:
            return False
    return True


def _entry(t: torch.Tensor, need_input: bool) -> _Storage:
    key = _key(t)
    entry = _region.storages.get(key)
    if entry is None:
        n = t.untyped_storage().nbytes() // t.element_size()
        holder = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), 0, (n,), (1,))
        entry = _region.storages[key] = _Storage(holder)
    if entry.value is None and need_input:
        entry.input = entry.value = _region.builder.input(entry.holder.shape, TORCH_TO_IR[t.dtype])
    return entry


def _contiguous_strides(sizes: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _linear_index(offset: int, sizes: tuple[int, ...], strides: tuple[int, ...]) -> Sym:
    index = P.full(offset, sizes, torch.int64)
    for dim, stride in enumerate(strides):
        if stride and sizes[dim] > 1:
            index = index + P.iota(sizes, dim) * stride
    return P.reshape(index, (-1,))


def _strided_block(flat: Sym, offset: int, sizes: tuple[int, ...], strides: tuple[int, ...]) -> Sym | None:
    """A strided view as slice -> reshape -> slice -> transpose, when each stride (largest first) is a multiple
    of the next and rows do not overlap (split/chunk/narrow/transpose of views in real models); else None."""
    dims = [d for d in range(len(sizes)) if sizes[d] != 1]
    order = sorted(dims, key=lambda d: -strides[d])
    ns = [sizes[d] for d in order]
    ss = [strides[d] for d in order]
    if any(ss[j] % ss[j + 1] or ns[j + 1] * ss[j + 1] > ss[j] for j in range(len(ss) - 1)):
        return None
    span = ns[0] * ss[0]
    part = P.slice_dim(flat, 0, offset, min(offset + span, flat.shape[0]))
    if part.shape[0] < span:
        part = P.emit1("pad", [part], value=0, low=(0,), high=(span - part.shape[0],), interior=(0,))
    block = [ns[0]] + [ss[j] // ss[j + 1] for j in range(len(ss) - 1)] + [ss[-1]]
    x = P.reshape(part, block)
    limits = tuple(ns) + (1,)
    if tuple(block) != limits:
        x = P.emit1("slice", [x], start=(0,) * len(block), limit=limits, strides=(1,) * len(block))
    x = P.reshape(x, ns)
    x = P.transpose(x, [order.index(d) for d in dims])
    return P.reshape(x, sizes)


def _view(flat: Sym, t: torch.Tensor) -> Sym:
    """The IR value of tensor `t` read through its storage's flat value."""
    sizes, strides, offset = tuple(t.shape), tuple(t.stride()), t.storage_offset()
    n, numel = flat.shape[0], t.numel()
    if strides == _contiguous_strides(sizes) or numel == 1:
        part = flat if (offset == 0 and numel == n) else P.slice_dim(flat, 0, offset, offset + numel)
        return P.reshape(part, sizes)
    if 0 in strides:  # expanded dims: read the unexpanded view, then broadcast
        base = t.as_strided([1 if st == 0 else sz for sz, st in zip(sizes, strides)], strides, offset)
        return P.broadcast_to(_view(flat, base), sizes)
    block = _strided_block(flat, offset, sizes, strides)
    if block is not None:
        return block
    return P.reshape(P.emit1("index_select", [flat, _linear_index(offset, sizes, strides)], dimension=0), sizes)


def _read(t: torch.Tensor) -> Value:
    entry = _entry(t, need_input=True)
    return _view(Sym(entry.value), t).value


def _write(t: torch.Tensor, value: Value) -> None:
    if t.numel() == 0:
        return
    covers = (t.storage_offset() == 0 and tuple(t.stride()) == _contiguous_strides(tuple(t.shape))
              and t.numel() * t.element_size() == t.untyped_storage().nbytes())
    entry = _entry(t, need_input=not covers)
    if covers:
        entry.value = P.reshape(Sym(value), entry.holder.shape).value
    else:
        index = _linear_index(t.storage_offset(), tuple(t.shape), tuple(t.stride()))
        entry.value = P.emit1("scatter_axis", [Sym(entry.value), index, P.reshape(Sym(value), (-1,))],
                              dimension=0, reduce="replace").value
    entry.written = True


_hoisted: dict[int, tuple[Program, Program, list[Any]]] = {}


def _hoist_scalars(program: Program) -> tuple[Program, list[Any]]:
    """`program` with each scalar constant turned into an extra input, plus the constants' values.

    Scalars that change every step (a learning rate, Adam's bias corrections) would otherwise make each
    region a new program; as inputs they leave the region's structure, and its cache key, unchanged.
    """
    cached = _hoisted.get(id(program))
    if cached is not None and cached[0] is program:
        return cached[1], cached[2]
    builder = Builder()
    env = {v.id: builder.input(v.shape, v.dtype) for v in program.inputs}
    values: list[Any] = []
    for op in program.ops:
        if op.name == "constant" and op.outputs[0].shape == ():
            env[op.outputs[0].id] = builder.input((), op.outputs[0].dtype)
            values.append(op.attr("value"))
            continue
        outs = builder.emit(op.name, [env[v.id] for v in op.inputs], **dict(op.attrs))
        for o, n in zip(op.outputs, outs):
            env[o.id] = n
    hoisted = builder.finish([env[v.id] for v in program.outputs], program.name)
    _hoisted[id(program)] = (program, hoisted, values)
    return hoisted, values


def record(op_name: str, program: Program, tensors: list[torch.Tensor], outputs: list[torch.Tensor],
           device: int) -> None:
    """Appends one traced op to the pending region: inputs are read through their storages, outputs written."""
    hoisted, constants = _hoist_scalars(program)
    if _region.device >= 0 and device != _region.device:
        flush()
    with _lock, tracing(_region.builder):
        _region.device = device
        start = len(_region.builder.ops)
        inputs = [_read(t) for t in tensors]
        for value, v in zip(constants, hoisted.inputs[len(tensors):]):
            scalar = _region.builder.input((), v.dtype)
            _region.scalars.append((scalar, value))
            inputs.append(scalar)
        results = _region.builder.splice(hoisted, inputs)
        for t, value in zip(outputs, results):
            _write(t, value)
        _region.origins.append((start, op_name, _user_line()))
        stats.ops_deferred += 1
        if len(_region.builder.ops) > MAX_REGION_OPS:
            flush()


def _alive_elsewhere(entry: _Storage) -> bool:
    storage = entry.holder.untyped_storage()
    return torch._C._storage_Use_Count(storage._cdata) > 2  # more than our holder and this Python handle


def flush() -> None:
    """Compiles (or reuses) the pending region's Program and runs it; afterwards every tensor is materialized."""
    global _region
    with _lock:
        if not pending():
            return
        region = _region
        _region = _Region()
        # Tensors that died in reference cycles during the region (autograd graphs make them) must be collected
        # now, or liveness, and with it the program's outputs and cache key, would vary from step to step.
        gc.collect(1)
        written = [e for e in region.storages.values() if e.written and _alive_elsewhere(e)]
        inputs = [e for e in region.storages.values() if e.input is not None]
        program = region.builder.finish([e.value for e in written], name="deferred_region")
        program.inputs = [e.input for e in inputs] + [v for v, _ in region.scalars]
        drv = runtime.driver()
        misses_before = drv.cache_stats.misses
        exe = drv.compile(program)
        miss = drv.cache_stats.misses > misses_before
        _count(program, miss)
        try:
            runtime.collect_freed()
            buffers = [runtime.storage_handle(e.holder) for e in inputs]
            buffers += [runtime.scalar_buffer(value, v.dtype) for v, value in region.scalars]
            drv.execute(exe, buffers, [runtime.storage_handle(e.holder) for e in written], max(region.device, 0))
        except ExecutionError as exc:
            where = _origin_of_region(region, exc.op_index)
            raise RuntimeError(f"{exc.cause} (in {where}; raised when the deferred region ran)") from exc.cause
        from torchtpu.execution import modes

        if modes.get_eager_mode() is modes.EagerMode.LAUNCH_BLOCKING:
            drv.synchronize(max(region.device, 0))


def _origin_of_region(region: _Region, op_index: int) -> str:
    found = "<unknown>"
    for start, name, line in region.origins:
        if start > op_index:
            break
        found = f"{name} issued at {line}"
    return found


def _count(program: Program, miss: bool) -> None:
    stats.flushes += 1
    shapes = tuple((v.shape, v.dtype) for v in program.inputs)
    if not miss:
        stats.hits += 1
        stats.consecutive_misses = 0
    else:
        stats.misses += 1
        stats.consecutive_misses += 1
        if stats.consecutive_misses >= 8 and stats.flushes > 8 and not stats.warned:
            stats.warned = True
            changed = [f"{a} -> {b}" for a, b in zip(stats.last_inputs, shapes) if a != b][:3]
            reason = ("input shapes changed: " + "; ".join(str(c) for c in changed)) if changed else \
                "the op graph changed between regions"
            warnings.warn(f"DEFER_AND_FUSE keeps recompiling: the last {stats.consecutive_misses} regions all "
                          f"compiled a new program ({reason}). Keep shapes static (pad to buckets) to get cache "
                          "hits.", RuntimeWarning, stacklevel=3)
    stats.last_inputs = shapes


def is_materialized(t: torch.Tensor) -> bool:
    """False while `t`'s storage has a pending (not yet computed) value in the current region."""
    entry = _region.storages.get(_key(t))
    return entry is None or not entry.written


def touches(t: torch.Tensor) -> bool:
    return _key(t) in _region.storages


def pending_ir() -> str:
    """The pending region as text IR (for debugging)."""
    with _lock:
        written = [e.value for e in _region.storages.values() if e.written]
        program = Program([e.input for e in _region.storages.values() if e.input is not None]
                          + [v for v, _ in _region.scalars], list(_region.builder.ops), written,
                          name="pending_region")
        return program.text()


def reset_stats() -> None:
    global stats
    stats = RegionStats()
