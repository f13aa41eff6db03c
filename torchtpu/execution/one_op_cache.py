"""The cached one-op regions: an op that is a region of its own (every op on a whole-storage driver such as
pjrt outside DEFER_AND_FUSE; a lone op flushed under DEFER_AND_FUSE) runs from its tensors through the Built its
first run left here, keyed as `deferred.flush` keys a region, without making the region."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from torchtpu import runtime
from torchtpu.execution import deferred as _deferred  # (imported by deferred: its interned signature ids)
from torchtpu.execution import launch, one_op_direct
from torchtpu.execution.region_ir import Built
from torchtpu.ops.tracing import TORCH_TO_IR

# One-op regions by their replay key: a whole-storage driver runs every DEFER_NEVER op as a region of its own, so a
# model has as many of them as distinct op calls (more than deferred's `_MAX_REPLAYS`); an LRU too.
_one_ops: OrderedDict[tuple, Built] = OrderedDict()
_MAX_ONE_OPS = 4096


def remember(key: tuple, built: Built | None) -> None:
    """Keeps the Built of the one-op region of replay key `key` (the long way's, after it ran)."""
    if built is not None:
        _one_ops[key] = built
        while len(_one_ops) > _MAX_ONE_OPS:
            _one_ops.popitem(last=False)


# one_key's answer by (token id, storage layout from the C++ launch path): a repeated op's replay key without
# walking its tensors in Python (~8 us for three); the storage addresses come with each call.
_by_layout: dict[tuple, tuple | bool] = {}
_MAX_LAYOUTS = 1 << 14


def one_key(token: tuple, operands: list, outputs: list[torch.Tensor], layout: bytes,
            addresses: tuple) -> tuple[tuple, tuple, tuple, frozenset[int]] | bool:
    """The replay key of the one-op region of a cached op, its slots' storage addresses and (bytes, IR dtype)
    and the slots it writes; False when the op cannot be a region (an empty tensor, a storage seen under two
    dtypes). `layout` and `addresses`: the call's storage layout (csrc/fast_launch.cpp's storage_layout), which
    with the token fixes the answer but for the addresses: looked up, walked once per layout."""
    memo_key = (token[5], layout)
    found = _by_layout.get(memo_key)
    if found is None:
        walked = _walk(token, operands, outputs)
        found = walked if walked is False else (walked[0], tuple((nb, d) for _, nb, d, _ in walked[1]),
                                                frozenset(walked[2]))
        if len(_by_layout) >= _MAX_LAYOUTS:
            _by_layout.clear()
        _by_layout[memo_key] = found
    if found is False:
        return False
    return found[0], addresses, found[1], found[2]


def _walk(token: tuple, operands: list, outputs: list[torch.Tensor]) -> tuple[tuple, list, set[int]] | bool:
    """`one_key` from the tensors: the key, the slots (storage address, bytes, IR dtype, element size) and the
    written slots."""
    structure, n = token[2], token[3]
    slot_of: dict[int, int] = {}
    slots: list[tuple[int, int, str, int]] = []  # (storage address, bytes, IR dtype, element size)
    views = []
    for t in (*operands[:n], *outputs):
        ptr = t.data_ptr()
        if not ptr or not t.numel():
            return False
        offset = t.storage_offset()
        size = t.element_size()
        slot = slot_of.get(ptr - offset * size)
        dtype = TORCH_TO_IR[t.dtype]
        if slot is None:
            slot = slot_of[ptr - offset * size] = len(slots)
            storage = t.untyped_storage()
            slots.append((storage.data_ptr(), storage.nbytes(), dtype, size))
        elif slots[slot][2] != dtype:
            return False
        views.append((slot, offset, tuple(t.shape), tuple(t.stride())))
    signature = _deferred.signature_id((structure, tuple(views[:n]), tuple(views[n:])))
    key = ((signature,), tuple(v for _, nb, d, _ in slots for v in (d, nb)))  # flush_walks.replay_key's form
    return key, slots, {v[0] for v in views[n:]}


def run_one(key: tuple, addresses: tuple, slots: tuple, written: frozenset[int], scalars: Sequence[Any],
            device: int, direct: tuple | None = None) -> Built | None:
    """Runs the one-op region of replay key `key` from `_one_ops` on its slots (`one_key`: their storage
    addresses, their (bytes, IR dtype)) and its scalar operands; returns its Built; None when it did not run (no
    cached region writing every slot that the op writes, or a launch that raised: a failed launch writes
    nothing, and the long way raises its error). `direct`: the call's (token, operands, outputs, layout), to run
    the op's own executable on its tensors' views where the driver allows it (one_op_direct.py)."""
    built = _one_ops.get(key)
    if built is None or not built.output_set.issuperset(written):
        return None
    drv = runtime.driver()
    if direct is not None and drv.host_memory is not None and drv.strided_operands:
        ran = one_op_direct.run(drv, *direct, addresses, device)
        if ran is not None:
            if not ran:
                return None
            _one_ops.move_to_end(key)
            return built
    runtime.collect_freed()  # a freed storage's address may already belong to one of these: drop it first
    buffer = drv.storage_buffer
    buffers = [buffer(addresses[s], slots[s][0], slots[s][1], device) for s in built.input_slots]
    if len(built.program.inputs) > len(buffers):
        scalar_inputs = built.program.inputs[len(buffers):]
        buffers += [value if value.__class__ is np.ndarray else runtime.scalar_buffer(value, v.dtype)
                    for v, value in zip(scalar_inputs, scalars)]
    out = [buffer(addresses[s], slots[s][0], slots[s][1], device) for s in built.output_slots]
    try:
        launch.execute(drv, built.exe, buffers, out, device)
    except Exception:  # noqa: BLE001 - the long way runs it again and raises the op's error as it always did
        return None
    _one_ops.move_to_end(key)
    return built


