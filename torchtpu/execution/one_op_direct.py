"""DEFER_AND_FUSE's kept one-op region (deferred.py `_single`) flushed on a driver whose buffers are host memory
and whose operands are strided views of it (the simulator): the op's own executable runs on views of its tensors,
as DEFER_NEVER's launch runs it, instead of the one-op region's storage-level Program (flat storages reshaped into
the op's operands, its result reshaped and copied back), whose general `execute` and per-storage buffers
(a new output's storage is a buffer-cache miss) cost about three times the op's direct launch.

It is the executable DEFER_NEVER compiles for the op (the driver's compile cache, by structure), launched
through the driver's `launcher` (a one-kernel plan writes its output straight from its operands), on the views
the C++ launch path makes (the tensors' sizes, strides and offsets over their memory, by the numpy dtype
`runtime.numpy_dtypes` gives): so the values, the error state and the simulated charge are DEFER_NEVER's. It is
taken only where the long way would run the same op (one_op_cache.run_one's conditions: a cached one-op region
that writes every slot the op writes) and where a failed launch can be run again the long way: no storage the op
writes is one it reads (an in-place op keeps the region path, whose failed launch writes nothing). Each call's
views are made from its storage addresses over the driver's `host_memory` (~0.5 us each), with the geometry
worked out once per (op, storage layout).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from torchtpu import runtime
from torchtpu.execution import fast_launch

# (token id, layout) -> ((driver, device), the op's executable, its launch: `drv.launcher(exe)` or `drv.execute`,
# number of tensor inputs, per tensor (storage number, numpy dtype, sizes, byte strides, byte offset)), or None
# when the op is not taken
_plans: dict[tuple, tuple | None] = {}
_numpy_dtypes: dict[Any, np.dtype] = {}
_MAX = 1 << 14


def clear() -> None:
    """Forgets every cached plan."""
    _plans.clear()


def _plan(drv: Any, token: tuple, operands: list, outputs: list, device: int) -> tuple | None:
    """The launch of `token`'s op and each tensor's geometry, storages numbered by first use as the C++ launch
    path numbers a call's `addresses`; None when an output's storage is also read (in place) or a dtype has no
    numpy equivalent."""
    if not _numpy_dtypes:
        _numpy_dtypes.update(runtime.numpy_dtypes())
    n = token[3]
    number: dict[int, int] = {}
    geometry = []
    for t in (*operands[:n], *outputs):
        dtype = _numpy_dtypes.get(t.dtype)
        if dtype is None:
            return None
        size, offset = t.element_size(), t.storage_offset()
        base = t.data_ptr() - offset * size
        s = number.get(base)
        if s is None:
            s = number[base] = len(number)
        geometry.append((s, dtype, tuple(t.shape), tuple(st * size for st in t.stride()), offset * size))
    read = {g[0] for g in geometry[:n]}
    if any(g[0] in read for g in geometry[n:]):
        return None
    exe = drv.compile(token[1], device)
    return (drv, device), exe, fast_launch.launch_of(drv, exe), n, tuple(geometry)


def run(drv: Any, token: tuple, operands: list, outputs: list, layout: bytes, addresses: tuple,
        device: int) -> bool | None:
    """Launches the op of `token` on `drv` (one with `strided_operands` and `host_memory`) on its tensors' views
    (`addresses`: each storage's, from the C++ launch path) and the 0-d buffers of its scalars (`operands[n:]`).
    True when it ran; None when it is not taken (an in-place op: the region path runs it); False when the launch
    raised (the long way then raises its error). A kept region exists only in DEFER_AND_FUSE, and a mode change
    flushes it first: no LAUNCH_BLOCKING sync."""
    memo = (token[5], layout)
    plan = _plans.get(memo, False)
    if plan is False or (plan is not None and (plan[0][0] is not drv or plan[0][1] != device)):
        plan = _plan(drv, token, operands, outputs, device)
        if len(_plans) >= _MAX:
            _plans.clear()
        _plans[memo] = plan
    if plan is None:
        return None
    _, exe, launch, n, geometry = plan
    space, first = drv.host_memory
    ndarray = np.ndarray
    try:  # (a view past the address space `host_memory` spans raises TypeError: the long way then)
        views = [ndarray(shape, dtype, space, addresses[s] - first + offset, strides)
                 for s, dtype, shape, strides, offset in geometry]
        inputs = views[:n]
        if len(operands) > n:
            inputs += [value if value.__class__ is ndarray else runtime.scalar_buffer(value, v.dtype)
                       for v, value in zip(exe.program.inputs[n:], operands[n:])]
        launch(exe, inputs, views[n:], device)
    except Exception:  # noqa: BLE001 - the long way runs it again and raises the op's error as it always did
        return False
    return True
