"""The legacy typed-storage classes of the tpu device (`torch.tpu.FloatStorage`, ...), as `torch.cuda` has them.

torch 2.13 looks a tensor's legacy storage class up in the device's module: `TypedStorage._get_legacy_storage_class`
returns `getattr(torch.<privateuse1 name>, "FloatStorage")` for a PrivateUse1 tensor (None where the module has no
such class; `tensor.storage_type()` then returned None on tpu), and a `_LegacyStorage` subclass makes and recognizes
storages of the device named by the last part of its `__module__` (`_get_device_from_module`). The classes here
therefore say `__module__ = "torch.tpu"`: `torch.tpu.FloatStorage(3)` is a float32 storage on tpu,
`isinstance(t.storage(), torch.tpu.FloatStorage)` holds for a float32 tpu tensor, and `t.storage_type()` is
`torch.tpu.FloatStorage`, as a CUDA tensor's is `torch.cuda.FloatStorage`. One class per dtype of torch's legacy
map that the device holds (torchtpu.dtypes.STORAGE); the quantized ones are not defined (the device holds no
quantized tensor), so their lookup stays None as before.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._utils import classproperty
from torch.storage import _LegacyStorage, _warn_typed_storage_removal

from torchtpu import dtypes


class _TpuLegacyStorage(_LegacyStorage):
    """Base of the tpu classes: what a device storage cannot do fails as CUDA's does (no host buffer, no shared
    memory file)."""

    @classmethod
    def from_buffer(cls, *args: Any, **kwargs: Any) -> Any:
        _warn_typed_storage_removal()
        raise RuntimeError("from_buffer: Not available for tpu storage")

    @classmethod
    def _new_with_weak_ptr(cls, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("_new_with_weak_ptr: Not available for tpu storage")

    @classmethod
    def _new_shared_filename(cls, manager: Any, obj: Any, size: int, *, device: Any = None, dtype: Any = None) -> Any:
        raise RuntimeError("_new_shared_filename: Not available for tpu storage")


def _make(name: str, dtype: torch.dtype) -> type:
    def _dtype(cls: type) -> torch.dtype:
        return dtype

    def public_dtype(cls: type) -> torch.dtype:
        _warn_typed_storage_removal()
        return dtype

    return type(name, (_TpuLegacyStorage,), {
        "__module__": "torch.tpu", "__qualname__": name, "_dtype": classproperty(_dtype),
        "dtype": classproperty(public_dtype),
        "__doc__": f"Legacy typed storage of {dtype} on the tpu device (torch.cuda.{name}'s counterpart)."})


CLASSES: dict[str, type] = {
    name: _make(name, dtype)
    for dtype, name in torch.storage._dtype_to_storage_type_map().items() if dtype in dtypes.STORAGE
}


def install(module: Any) -> None:
    """Bind every class on the device module (`torch.tpu`) under its legacy name."""
    for name, cls in CLASSES.items():
        setattr(module, name, cls)
