"""The one way a traced program reaches the device, for eager ops, compiled graphs and deferred regions.

`launch(name, program, inputs, outputs, device)` either runs `program` now on the tensors' own memory (a driver
whose operands are strided views of storages, outside DEFER_AND_FUSE: any pending region is flushed first, a
poisoned input raises, see poison.py) or records it into the pending region (deferred.py), which a driver whose
operands are whole storages always does, flushing at once unless the mode is DEFER_AND_FUSE. `execute` is the
driver call itself (and LAUNCH_BLOCKING's synchronize), which a region's flush uses too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from torchtpu import runtime
from torchtpu.drivers.base import Driver
from torchtpu.drivers.ir import Program
from torchtpu.execution import deferred, modes, poison

_FUSE = modes.EagerMode.DEFER_AND_FUSE


def runs_directly(drv: Driver | None) -> bool:
    """Whether a launch now runs on the tensors' own memory (else it is recorded into the deferred region)."""
    return drv is not None and drv.strided_operands and modes.get_eager_mode() is not _FUSE


def execute(drv: Driver, exe: Any, inputs: Sequence[Any], outputs: Sequence[Any], device: int) -> None:
    """The driver's launch of `exe` on buffers (then a synchronize under LAUNCH_BLOCKING)."""
    drv.execute(exe, inputs, outputs, device)
    if modes.get_eager_mode() is modes.EagerMode.LAUNCH_BLOCKING:
        drv.synchronize(device)


def launch(name: str, program: Program, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor],
           device: int, scalars: Sequence[Any] = (), exe: Any = None) -> Any:
    """Runs `program` (inputs: `inputs`, then one 0-d buffer per value of `scalars`), writing `outputs`; `exe`: the
    executable a previous launch returned. Returns the executable it ran, or None when the launch was recorded
    into the deferred region (a DEFER_AND_FUSE region, or each launch of a whole-storage driver)."""
    drv = runtime.driver()
    if not drv.strided_operands or (modes.get_eager_mode() is _FUSE and deferred.can_defer(inputs, outputs)):
        deferred.record(name, program, list(inputs), list(outputs), device, scalars)
        if modes.get_eager_mode() is not _FUSE:
            deferred.flush(raised_at_call=True)
        return None
    if deferred.pending():
        deferred.flush()
    if poison.active:
        poison.check_inputs(name, inputs, program)
    if exe is None or exe.target != drv.target(device):  # devices may be different chips
        exe = drv.compile(program, device)
    buffers = runtime.buffers
    execute(drv, exe, buffers(inputs) + list(scalars), buffers(outputs), device)
    if poison.active:
        poison.overwritten(outputs)
    return exe
