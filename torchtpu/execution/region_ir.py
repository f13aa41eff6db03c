"""Building a deferred region's Program from its recorded events (see deferred.py).

Each storage the region touches has a flat value: its whole contents as a 1-D IR value. Reading a tensor is a
view expression over that value (reshape / transpose / slice, a gather for any other strides); writing one
replaces the value, or scatters into it for a partial view. Each op's scalars are inputs of its traced program
(ops/scalar_args.py), so a step whose learning rate or bias corrections change every time keeps one structure.

An op that fails while its event is replayed raises `BuildError`, which names the event (deferred.py commits the
events before it). The two caches here are LRUs of documented size (`_MAX_PROGRAMS`, `_MAX_STRUCTURES`).
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from torchtpu._native import native
from torchtpu.drivers.ir import Builder, Program, Value
from torchtpu.execution import region_dce, region_fold
from torchtpu.ops import prims as P
from torchtpu.ops.tracing import Sym, tracing

View = tuple[int, int, tuple[int, ...], tuple[int, ...]]  # (slot, storage offset, sizes, strides)


class Slot:
    """A storage the region touches. It holds the storage itself through the shim's StorageKeep (a C++ reference
    to it: a region holds one slot per fresh output until its flush, and a torch.UntypedStorage object per slot
    is one more object the cycle collector tracks and scans on every collection, which made full collections a
    third of a recorded op's time); a flat tensor view of all of it (`holder`) is made only when something needs
    one (a poisoned storage's record): a view costs ~1.7 us per fresh output, most of a recorded op's
    bookkeeping."""

    __slots__ = ("storage", "torch_dtype", "dtype", "written", "key", "nbytes", "numel", "_holder")

    def __init__(self, of: torch.Tensor, torch_dtype: torch.dtype, dtype: str, key: int, nbytes: int,
                 numel: int) -> None:
        self.storage = native().StorageKeep(of)  # keeps the memory of `of`'s storage alive until the flush
        self.torch_dtype = torch_dtype
        self.dtype = dtype  # IR dtype
        self.written = False
        self.key = key  # the storage's address (how drivers name it: runtime.storage_of)
        self.nbytes = nbytes
        self.numel = numel  # its flat length in elements of `torch_dtype`
        self._holder: torch.Tensor | None = None
        native().gc_untrack(self)  # as csrc/record_native.cpp makes them: in no cycle

    @property
    def holder(self) -> torch.Tensor:
        """A flat view of the whole storage (made on first use)."""
        if self._holder is None:
            with torch.no_grad():
                self._holder = self.storage.flat(self.torch_dtype, self.numel)
        return self._holder

    def referenced_elsewhere(self) -> bool:
        """Whether anything but this slot (its StorageKeep and, once made, its holder) references the storage (a
        live tensor, a view, a torch.UntypedStorage object, autograd's saved tensors)."""
        return self.storage.references() > (1 if self._holder is None else 2)


@dataclass(slots=True)
class Event:
    """One recorded op: its traced program, where its inputs and outputs live, its scalars. Without a __dict__:
    a pending region holds one per op until its flush, and every object it holds is one the collector scans."""

    program: Program
    structure: int  # equal for equal programs (structure_of)
    inputs: tuple[View, ...]
    outputs: tuple[View, ...]
    scalars: tuple[Any, ...]
    origin: tuple[str, str]  # (aten op, user line)
    key: int = -1  # its signature's interned id (deferred.signature_id): what a region's replay key holds

    def __post_init__(self) -> None:
        native().gc_untrack(self)  # as Slot: a region holds one per op, in no cycle

    def signature(self) -> tuple:
        return (self.structure, self.inputs, self.outputs)


class BuildError(Exception):
    """Replaying event `event_index` of a region into its Program raised `cause`."""

    def __init__(self, event_index: int, cause: Exception) -> None:
        super().__init__(f"{type(cause).__name__}: {cause} (event #{event_index})")
        self.event_index, self.cause = event_index, cause


@dataclass
class Built:
    """A region's Program and how to bind it: input slots (in order), then its events' scalar inputs."""

    program: Program
    input_slots: list[int]
    output_slots: list[int]
    op_starts: list[int] = field(default_factory=list)  # first IR op of each event
    exe: Any = None  # the driver's executable of `program` (deferred.py compiles it)
    output_set: frozenset[int] = frozenset()  # output_slots as a set (a replay checks liveness against it)

    def __post_init__(self) -> None:
        self.output_set = frozenset(self.output_slots)


def _contiguous_strides(sizes: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def _normalized(sizes: tuple[int, ...], strides: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(contiguous strides of `sizes`, `strides` with each size-1 dimension's stride, which is arbitrary, made
    contiguous)."""
    contiguous = _contiguous_strides(sizes)
    return contiguous, tuple(c if size == 1 else st for size, st, c in zip(sizes, strides, contiguous))


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


def view_of(flat: Sym, offset: int, sizes: tuple[int, ...], strides: tuple[int, ...]) -> Sym:
    """The IR value of the view (offset, sizes, strides) of a storage whose flat value is `flat`."""
    contiguous, strides = _normalized(sizes, strides)
    n, numel = flat.shape[0], math.prod(sizes)
    if numel == 0:  # reads nothing (an expanded empty view can claim an element the storage lacks)
        return P.reshape(P.slice_dim(flat, 0, 0, 0), sizes)
    if strides == contiguous or numel == 1:
        part = flat if (offset == 0 and numel == n) else P.slice_dim(flat, 0, offset, offset + numel)
        return P.reshape(part, sizes)
    if 0 in strides:  # expanded dims: read the unexpanded view, then broadcast
        base = tuple(1 if st == 0 else sz for sz, st in zip(sizes, strides))
        return P.broadcast_to(view_of(flat, offset, base, strides), sizes)
    block = _strided_block(flat, offset, sizes, strides)
    if block is not None:
        return block
    return P.reshape(P.emit1("index_select", [flat, _linear_index(offset, sizes, strides)], dimension=0), sizes)


def covers(view: View, numel: int) -> bool:
    """Whether writing the view writes all of its storage."""
    return dense_order(view, numel) is not None


def dense_order(view: View, numel: int) -> list[int] | None:
    """The dims of size > 1 from the largest stride to the smallest where the view is all of its storage, each
    element once, in some order of its dims (row-major: in order); else None."""
    _, offset, sizes, strides = view
    if offset or math.prod(sizes) != numel:
        return None
    order = sorted((d for d in range(len(sizes)) if sizes[d] != 1), key=lambda d: -strides[d])
    expected = 1
    for d in reversed(order):
        if strides[d] != expected:
            return None
        expected *= sizes[d]
    return order


def build(slots: list[Slot], events: list[Event], live: list[int]) -> Built:
    """The Program of a region: replays its events into a Builder; outputs are the `live` written slots."""
    builder = Builder()
    inputs: list[Value | None] = [None] * len(slots)
    values: list[Value | None] = [None] * len(slots)
    scalars: list[Value] = []
    op_starts: list[int] = []
    views: dict[tuple, Value] = {}  # (flat value id, offset, sizes, strides) -> its view, read once per region

    def value(slot: int) -> Value:
        if values[slot] is None:
            inputs[slot] = values[slot] = builder.input((slots[slot].numel,), slots[slot].dtype)
        return values[slot]

    with tracing(builder):
        for index, event in enumerate(events):
            op_starts.append(len(builder.ops))
            try:
                _replay(builder, slots, event, value, values, scalars, views)
            except Exception as exc:
                raise BuildError(index, exc) from exc
    # (a slot marked written by a record interrupted before its event was added passes through unchanged)
    outputs = [value(s) for s in live]
    input_slots = [s for s in range(len(slots)) if inputs[s] is not None]
    program = builder.finish(outputs, name="deferred_region")
    program.inputs = [inputs[s] for s in input_slots] + scalars
    program, op_starts = region_dce.prune(*region_fold.fold_reshapes(program, op_starts))
    return Built(program, input_slots, list(live), op_starts)


def _replay(builder: Builder, slots: list[Slot], event: Event, value: Callable[[int], Value],
            values: list[Value | None], scalars: list[Value], views: dict[tuple, Value]) -> None:
    """Splices one event's program into `builder`: reads its input views (each distinct view of a flat value
    once: `views`), writes its output views."""
    args = []
    for v in event.inputs:
        flat = value(v[0])
        memo = (flat.id, v[1], v[2], v[3])
        read = views.get(memo)
        if read is None:
            read = views[memo] = view_of(Sym(flat), v[1], v[2], v[3]).value
        args.append(read)
    for constant_input in event.program.inputs[len(event.inputs):]:
        scalars.append(builder.input((), constant_input.dtype))
        args.append(scalars[-1])
    results = builder.splice(event.program, args)
    for view, result in zip(event.outputs, results):
        slot, offset, sizes, strides = view
        numel = slots[slot].numel
        if sizes and 0 in sizes:
            value(slot)  # nothing written: a live slot passes through unchanged (never a None output)
            continue
        order = dense_order(view, numel)
        if order is not None:  # the whole storage, dims in some order (a fresh output laid out as its inputs)
            dims = [d for d in range(len(sizes)) if sizes[d] != 1]
            x = P.reshape(Sym(result), [sizes[d] for d in dims])
            if order != dims:
                x = P.transpose(x, [dims.index(d) for d in order])
            values[slot] = P.reshape(x, (numel,)).value
        else:
            index = _linear_index(offset, sizes, strides)
            values[slot] = P.emit1("scatter_axis", [Sym(value(slot)), index, P.reshape(Sym(result), (-1,))],
                                   dimension=0, reduce="replace").value


# Each traced program's structure id, by the program's id (checked against the program itself): one entry per
# distinct op signature a loop runs; an LRU so that a workload of ever-new signatures stays bounded.
PROGRAMS: OrderedDict[int, tuple[Program, int]] = OrderedDict()
_MAX_PROGRAMS = 4096
# Program structure -> an id that is never reused (equal for traces of one op signature: eager traces take their
# scalars as inputs, ops/scalar_args.py). An LRU: a structure evicted and seen again gets a new id, so a region
# keyed by the old one just misses.
_STRUCTURES: OrderedDict[tuple, int] = OrderedDict()
_MAX_STRUCTURES = 4096
_ids = itertools.count()


def structure_of(program: Program) -> int:
    """`program`'s structure id: equal for equal programs (a step's changing scalars are its inputs already)."""
    cached = PROGRAMS.get(id(program))
    if cached is not None and cached[0] is program:
        PROGRAMS.move_to_end(id(program))
        return cached[1]
    skey = (program.name, program.key())
    structure = _STRUCTURES.get(skey)
    if structure is None:
        structure = _STRUCTURES[skey] = next(_ids)
        while len(_STRUCTURES) > _MAX_STRUCTURES:
            _STRUCTURES.popitem(last=False)
    else:
        _STRUCTURES.move_to_end(skey)
    PROGRAMS[id(program)] = (program, structure)
    while len(PROGRAMS) > _MAX_PROGRAMS:
        PROGRAMS.popitem(last=False)
    return structure
