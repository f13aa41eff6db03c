"""The active driver and the mapping from tpu tensors to driver buffers (drivers/base.py's buffer model).

`TORCHTPU_DRIVER` names a driver of `torchtpu.drivers.registry` (sim, pjrt, or auto: pjrt when a TPU is present,
else sim), made once, on first use. Every driver is reached the same way: a storage is named by its address and
the driver hands out its buffer (`storage_handle`), a host array of its contents (`host_tensor`, a zero-copy view
for the simulator) and takes new contents (`write_from_host`). A driver with strided operands (the simulator) also
takes a tensor's own view of its storage as an operand (`buffer`: zero-copy, strides kept, so views and in-place
writes on slices reach the base tensor's storage).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import ml_dtypes
import numpy as np
import torch

from torchtpu import config
from torchtpu._native import native
from torchtpu.drivers import registry
from torchtpu.drivers.base import Driver

_driver: Driver | None = None
_lock = threading.Lock()


def driver_name_from_env() -> str:
    """TORCHTPU_DRIVER resolved to a registered driver's name ("auto": a present hardware driver, else sim)."""
    return registry.resolve(config.get("TORCHTPU_DRIVER"))


def make_driver(name: str) -> Driver:
    """A new driver of registered kind `name`; an unknown name raises a ValueError listing the valid ones."""
    try:
        return registry.make(name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("torchtpu.drivers."):
            raise RuntimeError(f"the {name} driver's module {exc.name} is missing from this build of torchtpu; "
                               f"valid drivers: {', '.join(registry.names())}") from exc
        raise


def _native_overlap() -> None:
    """The sim driver's output overlap check answered by the shim (drivers/sim/output_overlap.py)."""
    from torchtpu.drivers.sim import output_overlap

    output_overlap.use(native().shared_with_outputs)


on_driver: list = [_native_overlap]  # run once the driver exists (the C++ launch cache may serve it from then on)


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
# dtypes numpy has only through ml_dtypes: torch.from_numpy takes their bits as an integer type of the same width
_ML_DTYPES: dict[torch.dtype, tuple[np.dtype, torch.dtype]] = {
    torch.bfloat16: (_BF16, torch.int16),
    torch.float8_e4m3fn: (np.dtype(ml_dtypes.float8_e4m3fn), torch.uint8),
    torch.float8_e5m2: (np.dtype(ml_dtypes.float8_e5m2), torch.uint8),
    torch.complex32: (np.dtype(np.uint32), torch.int32),  # the IR's complex32 words (drivers/ir.py)
}


_views: dict[tuple, np.ndarray] = {}
_MAX_VIEWS = 2048  # a deferred region maps each storage it touches: new addresses each step fill it (0.8 KB each)


def buffer(t: torch.Tensor) -> np.ndarray:
    """A tpu tensor as an operand of a driver with strided operands: the driver's view of its storage buffer with
    the tensor's sizes, strides and offset (the simulator: a zero-copy numpy view of its memory).

    A view is fully determined by (address, sizes, strides, dtype), so views are cached by that key: a later
    tensor at the same address with the same geometry is the same memory, and a live tensor keeps it mapped.
    """
    key = (t.data_ptr(), t.shape, t.stride(), t.dtype)
    view = _views.get(key)
    if view is None:
        drv = driver()
        storage, nbytes, device = _storage_key(t)
        view = drv.view(drv.storage_buffer(storage, nbytes, _ir_dtype(t.dtype), device), t.shape, t.stride(),
                        t.storage_offset())
        if t.data_ptr() == 0:
            return view
        if len(_views) >= _MAX_VIEWS:
            _views.clear()
        _views[key] = view
    return view


_native_buffers: list = []  # the shim's `buffers`, bound on first use


def buffers(tensors: Sequence[torch.Tensor]) -> list[np.ndarray]:
    """`[buffer(t) for t in tensors]`, the cached views looked up in C++ (csrc/buffer_views.cpp) under `buffer`'s
    key; a view not cached yet is made by `buffer`."""
    if not _native_buffers:
        _native_buffers.append(native().buffers)
    return _native_buffers[0](tensors if type(tensors) is list else list(tensors), _views, buffer)

def numpy_dtypes() -> list[tuple[torch.dtype, np.dtype]]:
    """The numpy dtype `buffer` gives a tensor of each torch dtype that has one."""
    from torchtpu.ops.tracing import TORCH_TO_IR

    pairs = []
    for dtype in TORCH_TO_IR:
        if dtype in _ML_DTYPES:
            pairs.append((dtype, _ML_DTYPES[dtype][0]))
            continue
        try:
            pairs.append((dtype, torch.empty(0, dtype=dtype).numpy().dtype))
        except (TypeError, RuntimeError):  # no numpy equivalent
            continue
    return pairs


def _ir_dtype(dtype: torch.dtype) -> str:
    """The IR name of a storage dtype; refuses (UnsupportedDtypeError) one the device cannot hold, e.g. a
    float8_e4m3fnuz tensor, when it is read or written."""
    from torchtpu import dtypes
    from torchtpu.ops.tracing import TORCH_TO_IR

    dtypes.check_storage(dtype, "tpu storage access")
    return TORCH_TO_IR[dtype]


def _storage_key(t: torch.Tensor) -> tuple[int, int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.nbytes(), t.device.index or 0


def storage_of(t: torch.Tensor) -> tuple[int, int, str, int]:
    """(storage key, storage bytes, IR dtype, device index) of a tpu tensor: how drivers name its storage."""
    collect_freed()
    key, nbytes, device = _storage_key(t)
    return key, nbytes, _ir_dtype(t.dtype), device


def storage_handle(holder: torch.Tensor) -> object:
    """The driver buffer for a whole storage (`holder` is a flat view of all of it)."""
    collect_freed()  # a freed storage's address may already belong to this one: drop the stale buffer first
    key, nbytes, device = _storage_key(holder)
    return driver().storage_buffer(key, nbytes, _ir_dtype(holder.dtype), device)


def collect_freed() -> None:
    """Tells the driver which storages the allocator has freed (drivers that want to hear: `wants_frees`)."""
    drv = driver()
    for key in native().drain_freed():
        drv.free_storage(key)


def _flat_host(t: torch.Tensor, writable: bool = True, discard: bool = False) -> torch.Tensor:
    """The storage's contents as a flat CPU tensor of `t`'s dtype: the memory itself where the driver's buffers
    are host memory (the simulator), else a copy."""
    collect_freed()
    key, nbytes, device = _storage_key(t)
    flat = driver().read_storage(key, nbytes, _ir_dtype(t.dtype), device, writable=writable, discard=discard)
    if not flat.flags.writeable:  # a read-only view (PJRT's CPU client): torch wants writable memory
        flat = flat.copy()
    if t.dtype in _ML_DTYPES:
        bits = _ML_DTYPES[t.dtype][1]
        return torch.from_numpy(flat.view(torch.empty(0, dtype=bits).numpy().dtype)).view(t.dtype)
    return torch.from_numpy(flat)


host_access: list = []  # callables (tensor, write) run before a host read / after a host write (poison.py)


def host_tensor(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor with `t`'s values (zero-copy for the simulator; a device read otherwise). Flush first."""
    for fn in host_access:
        fn(t, False)
    return _flat_host(t, writable=False).as_strided(t.shape, t.stride(), t.storage_offset())


def write_from_host(dst: torch.Tensor, src: torch.Tensor) -> None:
    """dst (a tpu tensor, any view) = src (CPU), with broadcasting and dtype conversion. Flush first."""
    covers = dst.is_contiguous() and dst.storage_offset() == 0 and \
        dst.numel() * dst.element_size() == dst.untyped_storage().nbytes()
    flat = _flat_host(dst, discard=covers)
    flat.as_strided(dst.shape, dst.stride(), dst.storage_offset()).copy_(src)
    key, _, device = _storage_key(dst)
    if dst.dtype in _ML_DTYPES:
        np_dtype, bits = _ML_DTYPES[dst.dtype]
        array = flat.view(bits).numpy().view(np_dtype)
    else:
        array = flat.numpy()
    driver().write_storage(key, array, device)  # the simulator: the storage's own memory, nothing to copy
    for fn in host_access:
        fn(dst, True)


def scalar_buffer(value: object, dtype: str) -> np.ndarray:
    """A host scalar as a 0-d buffer of IR dtype `dtype` (a scalar input of an eager program or a deferred region)."""
    from torchtpu.drivers.sim.kernels import NP_DTYPES, store

    try:
        if dtype in ("bfloat16", "float16"):
            return store(np.asarray(value, np.float32), dtype)
        return np.asarray(value, NP_DTYPES[dtype])
    except (TypeError, ValueError, OverflowError):  # a complex or NaN Scalar for a real or integer operand
        from torchtpu.dtypes import checked_scalar
        from torchtpu.ops.tracing import IR_TO_TORCH

        real = checked_scalar(value, IR_TO_TORCH[dtype])  # c10's overflow error, or a complex's real part
        if real is value:
            raise
        return scalar_buffer(real, dtype)
