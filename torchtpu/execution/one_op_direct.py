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
from torchtpu.execution import modes

# (token id, layout) -> per tensor (storage number, numpy dtype, sizes, byte strides, byte offset), or None when
# the op is not taken
_geometry: dict[tuple, tuple | None] = {}
# (token id, device) -> (the op's executable, its launch: `drv.launcher(exe)` or `drv.execute`)
_launches: dict[tuple, tuple[Any, Any]] = {}
_numpy_dtypes: dict[Any, np.dtype] = {}
_MAX = 1 << 14


def clear() -> None:
    """Forgets every cached geometry and launch."""
    _geometry.clear()
    _launches.clear()


def applies(drv: Any) -> bool:
    """Whether a kept one-op region may run directly on `drv` (strided operands over host memory by address)."""
    return drv.strided_operands and drv.host_memory is not None


def _plan(token: tuple, operands: list, outputs: list) -> tuple | None:
    """Each tensor's geometry, storages numbered by first use as the C++ launch path numbers a call's
    `addresses`; None when an output's storage is also read (in place) or a dtype has no numpy equivalent."""
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
    return None if any(g[0] in read for g in geometry[n:]) else tuple(geometry)


def run(token: tuple, operands: list, outputs: list, layout: bytes, addresses: tuple, device: int) -> bool | None:
    """Launches the op of `token` on its tensors' views (`addresses`: each storage's, from the C++ launch path)
    and the 0-d buffers of its scalars (`operands[n:]`). True when it ran; None when it is not taken (an
    in-place op: the region path runs it); False when the launch raised (the long way then raises its error)."""
    memo = (token[5], layout)
    geometry = _geometry.get(memo, False)
    if geometry is False:
        geometry = _plan(token, operands, outputs)
        if len(_geometry) >= _MAX:
            _geometry.clear()
        _geometry[memo] = geometry
    if geometry is None:
        return None
    drv = runtime.driver()
    found = _launches.get((token[5], device))
    if found is None:
        exe = drv.compile(token[1], device)
        launcher = getattr(drv, "launcher", None)
        if len(_launches) >= _MAX:
            _launches.clear()
        found = _launches[(token[5], device)] = (exe, drv.execute if launcher is None else launcher(exe))
    exe, launch = found
    space, first = drv.host_memory
    n = token[3]
    views = [np.ndarray(shape, dtype, space, addresses[s] - first + offset, strides)
             for s, dtype, shape, strides, offset in geometry]
    inputs, outs = views[:n], views[n:]
    scalars = operands[n:]
    if scalars:
        inputs += [value if value.__class__ is np.ndarray else runtime.scalar_buffer(value, v.dtype)
                   for v, value in zip(exe.program.inputs[n:], scalars)]
    try:
        launch(exe, inputs, outs, device)
    except Exception:  # noqa: BLE001 - the long way runs it again and raises the op's error as it always did
        return False
    if modes.get_eager_mode() is modes.EagerMode.LAUNCH_BLOCKING:
        drv.synchronize(device)
    return True
