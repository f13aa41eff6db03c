"""The active driver and the mapping from tpu tensors to driver buffers.

`TORCHTPU_DRIVER=sim|pjrt|auto` picks the driver once, on first use (auto: pjrt when a TPU PJRT platform is
present, else sim). For the simulator a tensor's buffer is a numpy view of its host memory (zero-copy, strides
kept), so views and in-place writes on slices reach the base tensor's storage.
"""

from __future__ import annotations

import os
import threading

import ml_dtypes
import numpy as np
import torch

from torchtpu import config
from torchtpu._native import native
from torchtpu.drivers.base import Driver

DRIVERS = ("sim", "pjrt", "auto")
_driver: Driver | None = None
_lock = threading.Lock()


def _tpu_present() -> bool:
    return os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0")


def driver_name_from_env() -> str:
    name = config.get("TORCHTPU_DRIVER")
    if name == "auto":
        return "pjrt" if _tpu_present() else "sim"
    return name


def make_driver(name: str) -> Driver:
    if name == "sim":
        from torchtpu.drivers.sim.driver import SimDriver

        return SimDriver()
    try:
        from torchtpu.drivers.pjrt.driver import PjrtDriver
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("torchtpu.drivers.pjrt"):
            raise RuntimeError(
                "TORCHTPU_DRIVER=pjrt is not available yet in this build of torchtpu: the PJRT driver (libtpu, "
                "or JAX's CPU client for testing) lands with its own issue. Use TORCHTPU_DRIVER=sim.") from exc
        raise
    return PjrtDriver()


on_driver: list = []  # callables run once the driver exists (the C++ launch cache may serve it from then on)


def driver() -> Driver:
    global _driver
    if _driver is None:
        created = False
        with _lock:
            if _driver is None:
                _driver = make_driver(driver_name_from_env())
                created = True
        if created:
            for fn in on_driver:
                fn()
    return _driver


_BF16 = np.dtype(ml_dtypes.bfloat16)


_views: dict[tuple, np.ndarray] = {}
_MAX_VIEWS = 2048  # a deferred region maps each storage it touches: new addresses each step fill it (0.8 KB each)


def buffer(t: torch.Tensor) -> np.ndarray:
    """The simulator's buffer for a tpu tensor: a numpy view of its memory with its sizes and strides.

    A view is fully determined by (address, sizes, strides, dtype), so views are cached by that key: a later
    tensor at the same address with the same geometry is the same memory, and a live tensor keeps it mapped.
    """
    key = (t.data_ptr(), t.shape, t.stride(), t.dtype)
    view = _views.get(key)
    if view is None:
        alias = native().cpu_alias(t)
        view = alias.view(torch.int16).numpy().view(_BF16) if t.dtype == torch.bfloat16 else alias.numpy()
        if t.data_ptr() == 0:
            return view
        if len(_views) >= _MAX_VIEWS:
            _views.clear()
        _views[key] = view
    return view


def numpy_dtypes() -> list[tuple[torch.dtype, np.dtype]]:
    """The numpy dtype `buffer` gives a tensor of each torch dtype that has one."""
    from torchtpu.ops.tracing import TORCH_TO_IR

    pairs = []
    for dtype in TORCH_TO_IR:
        if dtype == torch.bfloat16:
            pairs.append((dtype, _BF16))
            continue
        try:
            pairs.append((dtype, torch.empty(0, dtype=dtype).numpy().dtype))
        except (TypeError, RuntimeError):  # no numpy equivalent
            continue
    return pairs


def _ir_dtype(dtype: torch.dtype) -> str:
    from torchtpu.ops.tracing import TORCH_TO_IR

    return TORCH_TO_IR[dtype]


def storage_handle(holder: torch.Tensor) -> object:
    """The driver buffer for a whole storage (`holder` is a flat view of all of it)."""
    drv = driver()
    if drv.host_addressable:
        return buffer(holder)
    collect_freed()  # a freed storage's address may already belong to this one: drop the stale buffer first
    storage = holder.untyped_storage()
    return drv.storage_buffer(storage.data_ptr(), storage.nbytes(), _ir_dtype(holder.dtype),
                              holder.device.index or 0)


def collect_freed() -> None:
    """Tells a non-host-addressable driver which storages the allocator has freed."""
    drv = driver()
    if not drv.host_addressable:
        for key in native().drain_freed():
            drv.free_storage(key)


def _flat_host(t: torch.Tensor) -> torch.Tensor:
    collect_freed()
    storage = t.untyped_storage()
    drv = driver()
    flat = drv.read_storage(storage.data_ptr(), storage.nbytes(), _ir_dtype(t.dtype), t.device.index or 0)
    if t.dtype == torch.bfloat16:
        return torch.from_numpy(np.ascontiguousarray(flat).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(flat))


host_access: list = []  # callables (tensor, write) run before a host read / after a host write (poison.py)


def host_tensor(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor with `t`'s values (zero-copy for the simulator; a device read otherwise). Flush first."""
    for fn in host_access:
        fn(t, False)
    if driver().host_addressable:
        return native().cpu_alias(t)
    return _flat_host(t).as_strided(t.shape, t.stride(), t.storage_offset())


def write_from_host(dst: torch.Tensor, src: torch.Tensor) -> None:
    """dst (a tpu tensor, any view) = src (CPU), with broadcasting and dtype conversion. Flush first."""
    drv = driver()
    if drv.host_addressable:
        native().cpu_alias(dst).copy_(src)
    else:
        _write_storage(drv, dst, src)
    for fn in host_access:
        fn(dst, True)


def _write_storage(drv: Driver, dst: torch.Tensor, src: torch.Tensor) -> None:
    collect_freed()
    storage = dst.untyped_storage()
    n = storage.nbytes() // dst.element_size()
    covers = dst.is_contiguous() and dst.storage_offset() == 0 and dst.numel() == n
    flat = torch.empty(n, dtype=dst.dtype) if covers else _flat_host(dst).clone()
    flat.as_strided(dst.shape, dst.stride(), dst.storage_offset()).copy_(src)
    array = flat.view(torch.int16).numpy().view(_BF16) if dst.dtype == torch.bfloat16 else flat.numpy()
    drv.write_storage(storage.data_ptr(), array, dst.device.index or 0)


def scalar_buffer(value: object, dtype: str) -> np.ndarray:
    """A host scalar as a 0-d buffer of IR dtype `dtype` (hoisted constants of deferred regions)."""
    from torchtpu.drivers.sim.kernels import NP_DTYPES, store

    if dtype in ("bfloat16", "float16"):
        return store(np.asarray(value, np.float32), dtype)
    return np.asarray(value, NP_DTYPES[dtype])
