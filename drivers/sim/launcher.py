"""A one-op executable's launch without `SimDriver.execute`'s general path (the C++ launch cache calls it).

A program of one op whose fast kernel writes the program's one output itself (`_Plan.last`: an element-wise ufunc
or a small `mm`, fast.py), with no other step, reads its operands straight from the input buffers: `launcher`
returns a callable with `execute`'s signature that runs that kernel into the output buffer under the launch's
error state and charges the launch, with none of `execute`'s value list, straight-line run, direct-output check
or result copies. It does what `execute` does for such a plan, call for call (the same kernel, the same `out=`,
the same `ExecutionError`, the same timeline charge), so values and simulated time are the same; any other call
(another executable or device target, an output dtype the kernel does not write) goes to `execute`. A plan of
any other form, or a driver whose `execute` was replaced on the instance (tests inject faults so), gets `execute`
itself. A small exact `mm`'s launch also carries `native` (`_native`): its kernel as a C function, which the C++
side calls on the tensors' memory after a Python check-and-charge, with no numpy views and no numba dispatch.
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
        native = getattr(fast, "native_exact", None)
        if native is not None and dtype == np.float32:
            launch.native = _native(native, targets, target, chips, charge)  # type: ignore[attr-defined]
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


def _native(native: tuple, targets: Any, target: Any, chips: Any, charge: tuple) -> tuple:
    """(address, ready, m, k, n, tile) for the C++ launch cache: `address` the native kernel (sim/mxu_native.py)
    it calls on C-contiguous float32 (m, k), (k, n) and (m, n) buffers, after `ready(device)` returned True;
    `ready` does the launch's checks (device target, the exact mode: the kernel the Python launch would run) and,
    when they pass, its timeline charge (the kernel cannot fail: no error to raise, no numpy error state to set).
    When `ready` returns False the C++ side calls the launch itself."""
    exact, (m, k, n), tile = native
    from torchtpu.sim.mxu_native import mm_into_address

    def ready(device: int) -> bool:
        if targets[device] is not target or not exact():
            return False
        chip = chips[device]
        chip.timeline.issue(chip.launch_overhead, charge)
        return True

    return mm_into_address(), ready, m, k, n, tile
