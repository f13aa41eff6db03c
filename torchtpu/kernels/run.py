"""Runs a traced kernel on "tpu" tensors: owns the per-driver execution of a custom kernel and its charge.

A kernel is a fusion boundary: the pending DEFER_AND_FUSE region (or a whole-storage driver's pending op) is
flushed first, so its ops commit whatever the kernel does, and the kernel's outputs are ordinary tensors.
* sim: the JAX function runs on JAX's CPU device on the tensors' host memory (DLPack, zero-copy for contiguous
  inputs); its results are copied into freshly allocated "tpu" tensors; the chip's timeline is charged the
  kernel's cost (cost.py) as one executable, so it shows in `torchtpu.stats()` and the profilers.
* pjrt: the function, jitted around the storages' flat device buffers (slice + reshape in, flatten out), runs
  in the driver's own PJRT client (`PjrtDriver.run_function`): StableHLO from JAX's lowering, the Pallas call
  interpreted on the CPU platform and a Mosaic custom call on TPU; nothing goes through the host.
A kernel that raises is reported as `KernelError` naming the kernel and the user's line; the interpreter's
state is reset after it (JAX's TPU interpret mode must be, after an exception).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from torchtpu import runtime
from torchtpu.execution import deferred, modes, poison
from torchtpu.kernels import deps
from torchtpu.profiler import events


class KernelError(RuntimeError):
    """A custom kernel raised while it ran (or its results disagree with its declared shapes)."""


def interpret_params() -> Any:
    """What a Pallas kernel should pass as `pallas_call(interpret=...)` on the active driver: JAX's TPU
    interpreter (out-of-bounds reads raise, uninitialised VMEM reads NaN) on the simulator and on PJRT's CPU
    platform; False (Mosaic, the real compiler) on a TPU."""
    drv = runtime.driver()
    if getattr(drv, "platform", "cpu") == "tpu":
        return False
    from jax.experimental.pallas import tpu as pltpu

    return pltpu.InterpretParams(out_of_bounds_reads="raise", uninitialized_memory="nan")


def _reset_interpreter() -> None:
    """After a kernel's error: the TPU interpreter's state reset, and JAX's ordered-effect tokens, which hold the
    failed callback's error and would raise it again from every later kernel, dropped (jax 0.10.2's
    `dispatch.runtime_tokens`, after `jax.effects_barrier` raised it once more)."""
    import jax

    try:
        from jax.experimental.pallas import tpu as pltpu

        pltpu.reset_tpu_interpret_mode_state()
    except Exception:  # noqa: BLE001 - nothing to reset (no interpreted kernel ran)
        pass
    try:
        jax.effects_barrier()
    except Exception:  # noqa: BLE001 - the failed kernel's token: forget it
        from jax._src import dispatch

        dispatch.runtime_tokens.clear()


def _raise(name: str, exc: BaseException, where: str) -> None:
    _reset_interpreter()
    text = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    errors = [line for line in text if line.split(":")[0].endswith(("Error", "Exception"))]
    summary = errors[-1] if errors else " ".join(text[:4])  # the interpreter's own error, from its callback
    raise KernelError(f"kernel {name} raised {type(exc).__name__}: {summary} (in kernel {name} called at "
                      f"{where or '<unknown>'})") from exc


def check_results(name: str, results: Sequence[Any], avals: Sequence[Any]) -> None:
    """The kernel's outputs have the shapes and dtypes its fake promised."""
    if len(results) != len(avals):
        raise KernelError(f"kernel {name} returned {len(results)} arrays but its fake declares {len(avals)}")
    for i, (r, a) in enumerate(zip(results, avals)):
        if tuple(r.shape) != tuple(a.shape) or str(r.dtype) != str(a.dtype):
            raise KernelError(f"kernel {name}: output {i} is {r.dtype}{list(r.shape)} but its fake declares "
                              f"{a.dtype}{list(a.shape)}; valid: a fake (or out_shape) that matches what the "
                              "function returns")


def _prepare(name: str, tensors: Sequence[torch.Tensor]) -> int:
    """Flushes what is pending, refuses poisoned inputs and mixed devices; the device index."""
    if deferred.pending():
        deferred.flush()
    if poison.active:
        poison.check_tensors(f"kernel {name}", tensors)
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise ValueError(f"kernel {name}: its tensors are on {sorted(map(str, devices))}; valid: one tpu device")
    return next(iter(devices)).index or 0 if devices else 0


def run(name: str, entry: Any, tensors: Sequence[torch.Tensor], device_hint: torch.device) -> list[torch.Tensor]:
    """Runs `entry` (op.Entry: jitted function, output avals, cost) on "tpu" `tensors`; the outputs."""
    where = events.user_line()
    device = _prepare(name, tensors) if tensors else (device_hint.index or 0)
    drv = runtime.driver()
    dev = torch.device("tpu", device)
    outs = [torch.empty(tuple(a.shape), dtype=deps.torch_dtype(a.dtype, name), device=dev) for a in entry.avals]
    if drv.strided_operands:
        cost = entry.cost(drv, device)  # prices it, and refuses a VMEM over-subscription, before it runs
        _run_host(name, entry, tensors, outs, where)
        drv.charge(cost, device, name=f"kernel:{name}")
    else:
        _run_device(name, entry, tensors, outs, drv, device, where)
    if modes.get_eager_mode() is modes.EagerMode.LAUNCH_BLOCKING:
        drv.synchronize(device)
    return outs


def _run_host(name: str, entry: Any, tensors: Sequence[torch.Tensor], outs: list[torch.Tensor], where: str) -> None:
    jax = deps.jax()
    arrays = [jax.dlpack.from_dlpack(runtime.host_tensor(t).contiguous()) for t in tensors]
    try:
        results = jax.block_until_ready(entry.jitted(*arrays))
    except Exception as exc:  # noqa: BLE001 - any error of the user's function is reported with its name
        _raise(name, exc, where)
    results = list(results) if isinstance(results, list | tuple) else [results]
    check_results(name, results, entry.avals)
    for out, r in zip(outs, results):
        if out.numel():
            runtime.host_tensor(out).copy_(torch.from_dlpack(r))


def _run_device(name: str, entry: Any, tensors: Sequence[torch.Tensor], outs: list[torch.Tensor], drv: Any,
                device: int, where: str) -> None:
    ins, layout = [], []
    for t in tensors:
        t = t.contiguous()
        key, nbytes, dtype, dev = runtime.storage_of(t)
        ins.append(drv.storage_buffer(key, nbytes, dtype, dev))
        layout.append(t.storage_offset())
    refs = []
    for o in outs:
        key, nbytes, dtype, dev = runtime.storage_of(o)
        refs.append(drv.storage_buffer(key, nbytes, dtype, dev))
    fn = entry.on_storages(tuple(layout), tuple(int(r.numel) for r in ins), bool(getattr(drv, "donate", False)))
    try:
        drv.run_function(fn, ins, refs, device)
    except Exception as exc:  # noqa: BLE001 - any error of the user's function is reported with its name
        _raise(name, exc, where)
