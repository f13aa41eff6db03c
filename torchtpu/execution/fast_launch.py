"""The cached one-op launch path, Python side (the C++ half is csrc/fast_launch.cpp).

Each lowered functional, in-place, out= and foreach op, and the device-to-device copy, is registered on PrivateUse1
as a C++ kernel that keys the call (operator, matmul precision, every argument: tpu tensors and tensor lists by
dtype and sizes (and strides where they are not the default contiguous ones: they decide the outputs' layout,
execution/out_layout.py), floats by type, other scalars by type and value, devices; the same classes
eager.signature keys by) and, when the key was stored before, allocates the outputs (with the strides stored for
that key), makes numpy views of the buffers and calls the driver's execute on the stored executable. A miss runs
the op's Python kernel (`eager.run`), which stores the launch when the op qualifies (`kind_of`, `store`): fresh
outputs returned as they are (one tensor, a flat tuple, or one list), an in-place write of the first argument (a
tensor or a list), out= tensors written as they are (no resize), on a driver that takes strided views of storages
as operands (the simulator), in DEFER_NEVER. In DEFER_AND_FUSE (and in DEFER_NEVER on a driver whose operands are
whole storages, the PJRT driver, which records each op and flushes it at once) a hit records instead of launching:
the stored entry's callable is `deferred.record_cached`, which appends the op's traced program to the region with
the call's tensors (no dispatcher trampoline, no Python signature, no trace-cache lookup); its entries are keyed
apart from launching ones. LAUNCH_BLOCKING turns the path off (`sync`), and so does a poisoned storage (poison.py)
or, in DEFER_NEVER, a pending region kept by an interrupt (deferred.py).

Floats, and the int and complex values of a traced lowering's Scalar-typed arguments, are program inputs
(ops/scalar_args.py): a hit makes the trace's 0-d inputs from this call's scalars by the trace's bindings (ints
exact; a binding also runs the trace's overflow checks), so an optimizer's per-step bias corrections launch
from the cache. How each schema argument is keyed comes from Python (registry._argument_modes), so the C++ key
and eager.signature treat it alike; the arguments an op declares static (`@lower(..., static=...)`) by value.

TORCHTPU_FAST_LAUNCH=0 turns it off (every call takes the Python kernel, as before); valid values: 0, 1.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from torchtpu import config, runtime

_ENV = "TORCHTPU_FAST_LAUNCH"


def enabled_by_env() -> bool:
    return config.get(_ENV)


_active = False  # set by `register_kernel` once the C++ kernels are in place
_unstored = threading.local()  # .depth > 0: `not_stored` is active on this thread
_synced = False  # the C++ side has been told the state at least once since the driver came up


def _native() -> Any:
    from torchtpu._native import native

    return native()


# What an op does with its outputs (csrc/fast_launch.cpp's Kind).
FUNCTIONAL, INPLACE, INPLACE_LIST, FUNCTIONAL_LIST, OUT, COPY_FROM = range(6)
INFER = -1  # eager.run's default: the kind follows from how the call returned and wrote its outputs
# How an argument's scalars enter the key (csrc/fast_launch_key.h's ArgumentMode, eager._kinds).
BY_VALUE, FLOATS, SCALARS = range(3)


def register_kernel(qualified: str, name: str, kernel: Callable[..., Any], kind: int,
                    modes: Sequence[int] = ()) -> bool:
    """Registers `kernel` behind the C++ launch cache for `qualified` ("add.Tensor"; `kind`: FUNCTIONAL, INPLACE
    (writes its first argument, returns it), INPLACE_LIST (writes each tensor of its first argument, returns
    nothing), FUNCTIONAL_LIST (returns one list), OUT (writes its keyword-only out= tensors, returns them) or
    COPY_FROM (`_copy_from(src, dst)`: writes and returns dst)); `modes`: per schema position, how its scalars
    are keyed (BY_VALUE, FLOATS: floats by type, SCALARS: floats, ints and complex by type; FLOATS past the
    end), as the kernel's eager.run keys them. False when the path is off (then the caller registers `kernel`)."""
    global _active
    if not enabled_by_env():
        return False
    _native().fast_register(qualified, name, kernel, kind, list(modes))
    if not _active:
        _native().fast_numpy_dtypes(runtime.numpy_dtypes())
        _native().fast_scalar_buffer(runtime.scalar_buffer)
        from torchtpu import precision
        from torchtpu.execution import modes

        precision.on_change.append(sync)
        modes.on_change.append(sync)
        runtime.on_driver.append(sync)
        _active = True
        sync()  # a driver made before the kernels were registered is served from the first op on
    return True


def sync() -> None:
    """Tells the C++ side whether cached launches may run now, and the matmul precision keys are made with."""
    global _synced
    if not _active:
        return
    from torchtpu.execution import deferred, launch, modes, one_op_streak, poison
    from torchtpu.precision import current_precision

    drv = runtime._driver
    _synced = drv is not None
    mode = modes.get_eager_mode()
    # a poisoned storage must be checked, and a pending region flushed, in Python (deferred.py, poison.py)
    launching = launch.runs_directly(drv) and mode is modes.EagerMode.DEFER_NEVER and not deferred.pending()
    # a hit records into the region: in DEFER_AND_FUSE, and for a whole-storage driver (which records every op and
    # flushes it at once) in DEFER_NEVER
    recording = drv is not None and (mode is modes.EagerMode.DEFER_AND_FUSE or (
        not drv.strided_operands and mode is modes.EagerMode.DEFER_NEVER and not deferred.pending()))
    _native().fast_set_state((launching or recording) and not poison.active, current_precision().value, recording)
    one_op_streak.reset()  # (the C++ side dropped its budget)


@contextlib.contextmanager
def not_stored() -> Iterator[None]:
    """Ops run inside store nothing: a Python kernel that computes its call through other calls of the same op
    (ops/many_dims.py: views of fewer dims) must not have their launches stored under its own call's key (the
    miss in progress is the outer call's, whose tensors the stored launch does not fit)."""
    _unstored.depth = getattr(_unstored, "depth", 0) + 1
    try:
        yield
    finally:
        _unstored.depth -= 1


def launch_of(drv: Any, exe: Any) -> Any:
    """How a cached launch runs `exe`: the driver's `launcher` of it (the sim: a one-kernel plan's direct launch),
    else the driver's `execute`."""
    launcher = getattr(drv, "launcher", None)
    return drv.execute if launcher is None else launcher(exe)


def store(op_name: str, exe: Any, n_tensors: int, bindings: tuple, out_types: Sequence[tuple],
          device: int, drv: Any, kind: int, out_strides: tuple | None = None) -> None:
    """Stores the launch of the op whose miss is in progress: `exe` on the tensors' buffers plus one 0-d buffer
    per binding (source: the index of the call's float, or a function of the floats; IR dtype); `out_types` for
    fresh outputs, `out_strides` their strides (eager.Traced.out_strides: None, or None per contiguous one; the
    key holds every input's non-default strides, so a hit allocates the layout made for its own inputs')."""
    if not _active or getattr(_unstored, "depth", 0):
        return
    if not _synced:  # the path starts off: the driver did not exist when the kernels were registered
        sync()
    execute = launch_of(drv, exe)
    # a small exact mm's native kernel (drivers/sim/launcher.py `_native`), which C++ calls on the tensors' memory
    native = getattr(execute, "native", None) if not bindings else None
    _native().fast_store(op_name, execute, exe, bindings, device, n_tensors, _fresh(out_types, kind, out_strides),
                         kind, False, native)


_tokens = itertools.count()  # each recording entry's token a unique id (one_op_cache keys its layouts by it)


def store_record(op_name: str, program: Any, structure: int, n_tensors: int, bindings: tuple,
                 out_types: Sequence[tuple], device: int, kind: int, out_strides: tuple | None = None) -> None:
    """DEFER_AND_FUSE: stores how to record the op whose miss (recorded into the pending region) is in progress:
    a hit calls `record_fast.record_cached` (its common case; else `deferred.record_cached`) with the tensors and
    the 0-d buffers of its scalars, no Python kernel."""
    if not _active or getattr(_unstored, "depth", 0):
        return
    if not _synced:
        sync()
    from torchtpu.execution import record_fast

    token = (op_name, program, structure, n_tensors, kind in (FUNCTIONAL, FUNCTIONAL_LIST), next(_tokens))
    fresh = _fresh(out_types, kind, out_strides)
    _native().fast_store(op_name, record_fast.record_cached, token, bindings, device, n_tensors, fresh, kind, True,
                         None)
    drv = runtime._driver
    if drv is not None and drv.strided_operands:  # its launching twin (one_op_streak.py), compiled when first used
        _native().fast_store(op_name, _Twin(drv, program), None, bindings, device, n_tensors, fresh, kind, False,
                             None)


class _Twin:
    """A recorded op's launch, as DEFER_NEVER's entry launches it (the driver's `launcher` of its executable);
    compiled on its first call (most recorded ops never launch so)."""

    __slots__ = ("drv", "program", "exe", "launch")

    def __init__(self, drv: Any, program: Any) -> None:
        self.drv, self.program, self.exe, self.launch = drv, program, None, None

    def __call__(self, _: None, inputs: list, outputs: list, device: int) -> None:
        exe = self.exe
        if exe is None or exe.target != self.drv.target(device):
            self.exe = exe = self.drv.compile(self.program, device)
            self.launch = launch_of(self.drv, exe)
        self.launch(exe, inputs, outputs, device)


def _fresh(out_types: Sequence[tuple], kind: int, out_strides: tuple | None) -> list:
    """(sizes, dtype, strides: [] for contiguous) per fresh output."""
    if kind not in (FUNCTIONAL, FUNCTIONAL_LIST):
        return []
    strides = out_strides or (None,) * len(out_types)
    return [(list(shape), dtype, list(s or ())) for (shape, dtype), s in zip(out_types, strides)]


def kind_of(structure: Any, n_outputs: int, args: Sequence[Any], tensors: Sequence[Any],
            outputs: Sequence[Any], write_into: Sequence[Any] | None) -> int | None:
    """The Kind of an eager call from how it returned and wrote its outputs, or None if the cache cannot serve
    it (a nested structure, out= tensors)."""
    if write_into is None:
        if structure.__class__ is int or (structure.__class__ is tuple and structure == tuple(range(n_outputs))):
            return FUNCTIONAL
        if structure.__class__ is list and structure == list(range(n_outputs)):
            return FUNCTIONAL_LIST
        return None
    if not args or not tensors:
        return None
    first = args[0]
    if len(outputs) == 1 and first is tensors[0] and outputs[0] is first:
        return INPLACE
    if first.__class__ is list and len(first) == len(outputs) and all(o is t for o, t in zip(outputs, first)) \
            and all(t is o for t, o in zip(tensors, outputs)):
        return INPLACE_LIST
    return None


def clear() -> None:
    """Forgets every stored launch (the Python trace cache was cleared)."""
    if _active:
        _native().fast_clear()


def counters() -> dict[str, int]:
    """hits (launches from the C++ cache), misses (calls that took the Python kernel), entries."""
    if not _active:
        return {"hits": 0, "misses": 0, "entries": 0}
    hits, misses, entries = _native().fast_counters()
    return {"hits": hits, "misses": misses, "entries": entries}
