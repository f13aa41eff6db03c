"""A one-op executable's launch without `SimDriver.execute`'s general path (the C++ launch cache calls it).

A program of one op whose fast kernel writes the program's one output itself (`_Plan.last`: an element-wise ufunc
or a small `mm`, fast.py), with no other step, reads its operands straight from the input buffers: `launcher`
returns a callable with `execute`'s signature that runs that kernel into the output buffer under the launch's
error state and charges the launch, with none of `execute`'s value list, straight-line run, direct-output check
or result copies. It does what `execute` does for such a plan, call for call (the same kernel, the same `out=`,
the same `ExecutionError`, the same timeline charge), so values and simulated time are the same; any other call
(another executable or device target, an output dtype the kernel does not write) goes to `execute`. A plan of
any other form, or a driver whose `execute` was replaced on the instance (tests inject faults so), gets `execute`
itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from torchtpu.drivers.base import Executable, ExecutionError

try:  # numpy >= 2: the error state is a context variable (driver._IgnoreErrors)
    from numpy._core._ufunc_config import _extobj_contextvar
except ImportError:  # pragma: no cover - other numpy versions: the driver's enter/exit
    _extobj_contextvar = None

Launch = Callable[[Executable, Sequence[np.ndarray], Sequence[np.ndarray], int], None]


def launcher(drv: Any, exe: Executable, ignore_errors: Any) -> Launch:
    """`drv.execute`, or for a one-kernel plan (module docstring) its direct launch; `ignore_errors`: the
    driver's `_IgnoreErrors` (enter/exit of the launch's numpy error state)."""
    execute = drv.execute
    plan = exe.payload
    last = getattr(plan, "last", None)
    if "execute" in vars(drv) or last is None or plan.steps or plan.direct is not None or len(plan.outputs) != 1 \
            or any(i >= len(exe.program.inputs) for i in last.inputs) or plan.outputs[0] != last.out:
        return execute
    fast, operands, dtype, charge = last.fast, tuple(last.inputs), plan.last_dtype, plan.charge
    chips, targets, target = drv.chips, drv._targets, exe.target
    index, name = last.index, last.op.name
    enter, leave = ignore_errors.enter, ignore_errors.exit

    if operands == (0, 1) and _extobj_contextvar is not None:
        # `ignore_errors.enter()`/`exit` inlined (two Python calls fewer): its cached "ignore" state for the
        # current state, or `enter` itself to make it
        get_state, set_state, reset_state = _extobj_contextvar.get, _extobj_contextvar.set, _extobj_contextvar.reset

        def launch(exe_: Executable, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray],
                   device: int = 0) -> None:
            out = outputs[0]
            if exe_ is not exe or targets[device] is not target or out.dtype != dtype:
                return execute(exe_, inputs, outputs, device)
            cache = ignore_errors._cache
            token = set_state(cache[1]) if cache[0] is get_state() else enter()
            try:
                fast(inputs[0], inputs[1], out=out)
            except Exception as exc:
                raise ExecutionError(index, name, exc) from exc
            finally:
                reset_state(token)
            chip = chips[device]
            chip.timeline.issue(chip.launch_overhead, charge)
            return None
        return launch

    def launch_any(exe_: Executable, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray],
                   device: int = 0) -> None:
        out = outputs[0]
        if exe_ is not exe or targets[device] is not target or out.dtype != dtype:
            return execute(exe_, inputs, outputs, device)
        token = enter()
        try:
            fast(*[inputs[i] for i in operands], out=out)
        except Exception as exc:
            raise ExecutionError(index, name, exc) from exc
        finally:
            leave(token)
        chip = chips[device]
        chip.timeline.issue(chip.launch_overhead, charge)
        return None
    return launch_any
