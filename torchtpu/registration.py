"""Brings up the "tpu" device: renames PrivateUse1, loads the C++ shim (allocator, guard, hooks), registers the
device module, tensor methods, every lowering, the compile backend and autocast. Idempotent; `import torch`
runs it through the autoload entry point."""

from __future__ import annotations

import sys
import threading

import torch

_done = False
_renamed = False  # this module renamed PrivateUse1 (a failed register() may have got that far and be retried)
_lock = threading.Lock()


class BackendConflictError(RuntimeError):
    """PrivateUse1 already belongs to another backend in this process."""


def _claim_privateuse1() -> None:
    global _renamed
    name = torch._C._get_privateuse1_backend_name()
    if name == "tpu" and _renamed:
        return
    if name != "privateuseone":
        raise BackendConflictError(
            f"torchtpu cannot register the 'tpu' device: another package already renamed PyTorch's PrivateUse1 "
            f"backend to {name!r}, and a process has only one PrivateUse1 backend. Keep one such backend per "
            "environment (pip uninstall the other), or turn off autoloading (TORCH_DEVICE_BACKEND_AUTOLOAD=0) and "
            "import only the one you want.")
    torch.utils.rename_privateuse1_backend("tpu")
    _renamed = True


def _dynamo_finds_the_entry_point() -> bool:
    from importlib.metadata import entry_points

    return any(ep.value.startswith("torchtpu.") for ep in entry_points(group="torch_dynamo_backends", name="tpu"))


def _register_compile_backend() -> None:
    """torch.compile(backend="tpu") reaches the backend through its `torch_dynamo_backends` entry point, which
    loads torchtpu.compile.backend on first use: importing Dynamo is about a third of `import torch`'s time with
    the device, so autoload does not. Where Dynamo is already imported, or no installed entry point names the
    backend (a source tree on sys.path), it is registered now."""
    if "torch._dynamo" in sys.modules or not _dynamo_finds_the_entry_point():
        __import__("torchtpu.compile.backend")


def register() -> None:
    global _done
    if _done:
        return
    with _lock:
        if _done:
            return
        from torchtpu import config

        config.check_all()  # a bad TORCHTPU_* value fails here, before anything is registered
        _claim_privateuse1()
        from torchtpu import device_module, runtime
        from torchtpu._native import native

        shim = native()
        torch._register_device_module("tpu", device_module)
        sys.modules["torch.tpu"] = device_module
        __import__("torchtpu.legacy_storage").legacy_storage.install(device_module)  # torch.tpu.FloatStorage, ...
        __import__("torchtpu.profiler").profiler.install(device_module)  # memory API, OOM note, torch.profiler
        torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)
        drv = runtime.driver()
        shim.set_device_count(drv.device_count())
        from torchtpu import dtypes

        shim.set_storage_dtypes(list(dtypes.STORAGE), dtypes.all_names(), dtypes.storage_names())  # the factories
        # refuse the others as `.to` does
        shim.set_track_frees(drv.wants_frees)
        for i in range(drv.device_count()):
            shim.set_limit(i, drv.memory_limit(i))
        from torchtpu.ops.registry import register_all

        register_all()
        _register_compile_backend()
        from torchtpu import autocast

        autocast.register()
        # Module.to("tpu") must keep tied parameters tied: PyTorch only updates parameters in place (.data) for
        # its built-in dense backends, and otherwise makes one new Parameter per module, untying shared ones.
        # Swapping tensors keeps each Parameter object, as it already does for CUDA.
        torch.__future__.set_swap_module_params_on_conversion(True)
        _done = True
