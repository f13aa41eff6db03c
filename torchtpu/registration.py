"""Brings up the "tpu" device: renames PrivateUse1, loads the C++ shim, registers the device module, hooks,
tensor methods and every lowering. Idempotent; `import torch` runs it through the autoload entry point."""

from __future__ import annotations

import sys
import threading

import torch

_done = False
_lock = threading.Lock()


class _Hooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self) -> bool:
        return True

    def has_primary_context(self, device_index: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


def register() -> None:
    global _done
    if _done:
        return
    with _lock:
        if _done:
            return
        if torch._C._get_privateuse1_backend_name() != "tpu":
            torch.utils.rename_privateuse1_backend("tpu")
        from torchtpu import device_module, runtime
        from torchtpu._native import native

        shim = native()
        torch._register_device_module("tpu", device_module)
        sys.modules["torch.tpu"] = device_module
        torch._C._acc.register_python_privateuseone_hook(_Hooks())
        torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)
        drv = runtime.driver()
        shim.set_device_count(drv.device_count())
        shim.set_track_frees(not drv.host_addressable)
        for i in range(drv.device_count()):
            shim.set_limit(i, drv.memory_limit(i))
        from torchtpu.ops.registry import register_all

        register_all()
        from torchtpu.compile.backend import register as register_compile_backend

        register_compile_backend()
        _done = True
