"""Storages that a failed DEFER_AND_FUSE region was to write ("poisoned"): using one raises the region's error.

A region that fails at its flush (an op's error when the region is built, compiled or run, or an interrupt once
it has started to run) leaves every storage it was to write poisoned, and every storage it only read untouched
(deferred.py). Reading a poisoned tensor, to the host or as the input of an op in any eager mode or of a compiled
graph, raises a RuntimeError that names the region's error, the op and the user's line that recorded it.
Writing a poisoned storage whole (`copy_`, `zero_`, `fill_`, a host copy into all of it) makes it valid again; a
partial write leaves it poisoned. An op's argument that its program never reads (`zero_`'s) may be poisoned.

Each entry holds its storage alive until nothing else references it (`sweep`), so that an unrelated tensor
cannot be allocated at a poisoned address meanwhile. A poisoned storage that gets a new block (`resize_` growing it,
`storage.resize_`) stays poisoned at its new address (`moving`); one resized to no bytes is valid (nothing in it).
While any storage is poisoned the C++ launch cache is off: it reads buffers without asking Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch

from torchtpu import runtime
from torchtpu.drivers.ir import Program

_entries: dict[Any, tuple[torch.Tensor, str]] = {}  # storage key -> (flat view holding the storage, message)
active = False  # any storage poisoned (read without a call on every op)
_checks = 0
_moving: list[int] = []  # addresses of poisoned storages about to get a new block: re-keyed at the next lookup
_SWEEP_EVERY = 64  # op-input checks between sweeps for storages nobody references any more


def storage_key(t: torch.Tensor) -> int | tuple:
    """What identifies `t`'s storage while it lives: its address (every zero-byte storage has address 0)."""
    ptr = t.data_ptr() - t.storage_offset() * t.element_size()  # without making a storage object
    return ptr if t.data_ptr() else ("empty", t.dtype)


def moving(block: int) -> None:
    """The storage at address `block` is about to get a new block (realloc_settle.py, before the shim reallocates):
    if it is poisoned, its entry follows it to the new address at the next lookup."""
    if block in _entries:
        _moving.append(block)


def _follow() -> None:
    while _moving:
        entry = _entries.pop(_moving.pop(), None)
        if entry is not None and entry[0].untyped_storage().nbytes():
            _entries[storage_key(entry[0])] = entry
    _set_active()


def _set_active() -> None:
    global active
    now = bool(_entries)
    if now != active:
        active = now
        from torchtpu.execution import fast_launch

        fast_launch.sync()


def mark(holders: Iterable[torch.Tensor], message: str) -> list[Any]:
    """Poisons the storage of each holder (a flat view of a whole storage) that is not poisoned already; the keys
    it poisoned. A holder of no elements is skipped: it had no value to lose. Such a holder is an empty storage's
    (keyed by its dtype alone, so an entry would poison every empty tensor of that dtype) or one an out= resize
    grew after its slot was made; the slot that wrote the grown storage holds all of it and poisons it."""
    if _moving:
        _follow()
    added = []
    for holder in holders:
        if not holder.numel():
            continue
        key = storage_key(holder)
        if key not in _entries:
            _entries[key] = (holder, message)
            added.append(key)
    _set_active()
    return added


def discard(keys: Iterable[Any]) -> None:
    for key in keys:
        _entries.pop(key, None)
    _set_active()


def referenced_elsewhere(holder: torch.Tensor) -> bool:
    """Whether anything but `holder` (a flat view of a whole storage) and this call references its storage."""
    return torch._C._storage_Use_Count(holder.untyped_storage()._cdata) > 2


def error(t: torch.Tensor, use: str) -> RuntimeError:
    """The error for using poisoned `t` (`use`: what tried, e.g. "aten.add.Tensor read")."""
    if _moving:
        _follow()
    message = _entries[storage_key(t)][1]
    return RuntimeError(
        f"{use} a tensor (shape {list(t.shape)}, {t.dtype}) that has no value: {message}. Recompute it, or "
        "overwrite it whole (copy_, zero_, fill_) to use it again.")


def check_inputs(op_name: str, tensors: Sequence[torch.Tensor], program: Program,
                 valid: Callable[[torch.Tensor], bool] = lambda t: False) -> None:
    """Raises if `op_name` reads a poisoned tensor (`program`'s first inputs are `tensors`; an in-place `zero_` or
    `fill_` takes its target but never reads it) unless `valid(tensor)`. Call only while `active`."""
    global _checks
    if _moving:
        _follow()
    _checks += 1
    if _checks % _SWEEP_EVERY == 0:
        sweep()
    for i, t in enumerate(tensors):
        if storage_key(t) in _entries and not valid(t):
            wanted = program.inputs[i].id
            if any(v.id == wanted for op in program.ops for v in op.inputs) or \
                    any(v.id == wanted for v in program.outputs):
                raise error(t, f"{op_name} read")


def check_tensors(use: str, tensors: Iterable[torch.Tensor]) -> None:
    """Raises if any of `tensors` is poisoned (`use`: who reads them, e.g. "kernel mylib::rmsnorm")."""
    if _moving:
        _follow()
    for t in tensors:
        if storage_key(t) in _entries:
            raise error(t, f"{use} read")


def overwritten(tensors: Iterable[torch.Tensor]) -> None:
    """`tensors` were just written: a poisoned storage that one of them covers whole is valid again."""
    if _moving:
        _follow()
    done = [storage_key(t) for t in tensors if storage_key(t) in _entries and t.storage_offset() == 0
            and t.is_contiguous() and t.numel() == t.untyped_storage().nbytes() // t.element_size()]
    if done:
        discard(done)


def sweep() -> None:
    """Forgets poisoned storages that nothing but this table references any more."""
    if _moving:
        _follow()
    dead = [k for k, (holder, _) in _entries.items() if not referenced_elsewhere(holder)]
    if dead:
        discard(dead)


def _host_access(t: torch.Tensor, write: bool) -> None:
    if not active:
        return
    if _moving:
        _follow()
    if write:
        overwritten([t])
    elif storage_key(t) in _entries:
        raise error(t, "Reading to the host")


def clear() -> None:
    """Forgets every poisoned storage (tests)."""
    _entries.clear()
    _moving.clear()
    _set_active()


runtime.host_access.append(_host_access)
