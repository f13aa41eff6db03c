"""The `torch.tpu` module: devices, memory, RNG, precision and eager-mode controls, as `torch.cuda` has them."""

from __future__ import annotations

from typing import Any

import torch

from torchtpu import runtime
from torchtpu._native import native
from torchtpu.execution import deferred, realloc_settle
from torchtpu.execution.modes import EagerMode, eager_mode, get_eager_mode, set_eager_mode
from torchtpu.precision import Precision, get_precision, precision, set_precision
from torchtpu.random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from torchtpu.streams import Event, Stream, current_stream, default_stream, set_stream, stream

__all__ = [
    "Event", "Stream", "current_stream", "default_stream", "set_stream", "stream",
    "EagerMode", "Precision", "current_device", "device", "device_count", "eager_mode", "get_amp_supported_dtype",
    "get_device_name", "get_device_properties", "get_eager_mode", "get_precision", "get_rng_state",
    "get_rng_state_all", "initial_seed", "is_available", "is_bf16_supported", "is_initialized", "manual_seed",
    "manual_seed_all", "max_memory_allocated", "memory_allocated", "memory_stats", "empty_cache", "precision",
    "reset_accumulated_memory_stats", "reset_peak_memory_stats", "seed", "seed_all", "set_device", "set_eager_mode",
    "set_precision", "set_rng_state", "set_rng_state_all", "synchronize",
]

_current = [0]
realloc_settle.install()


class InvalidDeviceError(RuntimeError, ValueError):
    """A tpu device index outside 0..device_count()-1 (a RuntimeError as CUDA's "invalid device ordinal"; also a
    ValueError, which this module raised before)."""


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    return runtime.driver().device_count()


def _index(d: Any = None) -> int:
    if d is None:
        return current_device()
    if isinstance(d, int):
        index = d
    else:
        dev = torch.device(d)
        if dev.type != "tpu":
            raise ValueError(f"expected a tpu device, got {dev}")
        index = dev.index if dev.index is not None else current_device()
    count = device_count()
    if not 0 <= index < count:
        raise InvalidDeviceError(
            f"tpu:{index} is not a device of this process (invalid device ordinal {index}); valid indices are "
            f"0..{count - 1} ({count} tpu device{'s' if count != 1 else ''}: this host's chips; TORCHTPU_NUM_DEVICES "
            "or TORCHTPU_TOPOLOGY sets how many the simulator has)")
    return index


def current_device() -> int:
    return torch._C._get_accelerator().index if False else _guard_device()


def _guard_device() -> int:
    return torch.accelerator.current_device_index() if hasattr(torch, "accelerator") else _current[0]


def set_device(d: Any) -> None:
    torch.accelerator.set_device_index(_index(d))


class device:  # noqa: N801 - the name torch.load and user code expect
    """Context manager that makes `d` the current tpu device inside the block."""

    def __init__(self, d: Any) -> None:
        self.index = -1 if d is None else _index(d)
        self.prev = -1

    def __enter__(self) -> None:
        if self.index >= 0:
            self.prev = current_device()
            set_device(self.index)

    def __exit__(self, *exc: object) -> None:
        if self.prev >= 0:
            set_device(self.prev)


def synchronize(d: Any = None) -> None:
    """Waits for every launched op on the device, on every stream (all pending work is flushed first)."""
    deferred.flush()
    drv = runtime._driver
    (drv if drv is not None else runtime.driver()).synchronize(None if d is None else _index(d))


def get_device_name(d: Any = None) -> str:
    return runtime.driver().device_name(_index(d))


class _DeviceProperties:
    def __init__(self, props: dict[str, Any]) -> None:
        self.__dict__.update(props)

    def __repr__(self) -> str:
        return (f"_TpuDeviceProperties(name='{self.name}', total_memory={self.total_memory // 2**20}MB, "
                f"chip={self.chip})")


def get_device_properties(d: Any = None) -> _DeviceProperties:
    return _DeviceProperties(runtime.driver().device_properties(_index(d)))


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.bfloat16, torch.float16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def _counters(d: Any) -> list[int]:
    return native().memory_counters(_index(d))


def memory_allocated(d: Any = None) -> int:
    return _counters(d)[0]


def max_memory_allocated(d: Any = None) -> int:
    return _counters(d)[1]


def reset_peak_memory_stats(d: Any = None) -> None:
    native().reset_peak(_index(d))


def reset_accumulated_memory_stats(d: Any = None) -> None:
    """Zeroes the allocation and free counts (and OOMs) since start, as torch.cuda's does; live values stay."""
    native().reset_accumulated(_index(d))


def memory_stats(d: Any = None) -> dict[str, int]:
    """torch.cuda's keys that the allocator has. It caches nothing (each free returns the memory), so the
    active and reserved bytes are the allocated bytes and an allocation is never retried."""
    allocated, peak, limit, allocs, frees, ooms, live = _counters(d)
    return {"allocated_bytes.all.current": allocated, "allocated_bytes.all.peak": peak,
            "active_bytes.all.current": allocated, "active_bytes.all.peak": peak,
            "reserved_bytes.all.current": allocated, "reserved_bytes.all.peak": peak,
            "allocation.all.allocated": allocs, "allocation.all.freed": frees,
            "allocation.all.current": live, "num_alloc_retries": 0, "num_ooms": ooms,
            "limit_bytes": limit}


def empty_cache() -> None:
    """Nothing to release: the allocator keeps no cache (as `memory_stats` says)."""


def mem_get_info(d: Any = None) -> tuple[int, int]:
    allocated, _, limit, *_ = _counters(d)
    return limit - allocated, limit

