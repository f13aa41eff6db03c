"""The contract between the PyTorch front end and a machine: devices, compile(Program), execute, sync, stats.

A driver never imports torch. Buffers are whatever the driver's storage layer hands out: host numpy views for
the simulator, device buffers keyed by storage for PJRT. Executables are cached by the Program's structural key.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from torchtpu.drivers.ir import Program


class ExecutionError(RuntimeError):
    """A runtime failure inside an executable, naming the op (by its index in the Program) that raised it.

    An IndexError or ZeroDivisionError inside is also raised as that class (`except IndexError` catches an
    out-of-range index on the device, as on CPU)."""

    def __new__(cls, op_index: int, op_name: str, cause: BaseException) -> ExecutionError:
        if cls is ExecutionError:
            cls = next((mixed for base, mixed in _KEPT.items() if isinstance(cause, base)), cls)
        return super().__new__(cls, op_index, op_name, cause)

    def __init__(self, op_index: int, op_name: str, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause} (IR op #{op_index} {op_name})")
        self.op_index, self.op_name, self.cause = op_index, op_name, cause


class IndexExecutionError(ExecutionError, IndexError):
    """An index out of range on the device (ExecutionError and IndexError)."""


class ZeroDivisionExecutionError(ExecutionError, ZeroDivisionError):
    """An integer division by zero on the device (ExecutionError and ZeroDivisionError)."""


_KEPT: dict[type, type] = {IndexError: IndexExecutionError, ZeroDivisionError: ZeroDivisionExecutionError}


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    compiles: int = 0
    compile_seconds: float = 0.0


@dataclass
class Executable:
    program: Program
    payload: Any = None
    meta: dict[str, Any] = field(default_factory=dict)


class Driver(ABC):
    """One machine kind: the simulator, or a PJRT client."""

    name: str = "driver"
    # True when buffers are host memory the front end may view directly (the simulator). Otherwise every
    # program input/output is a whole storage's buffer from `storage_buffer`, and values cross the host
    # boundary only through read_storage / write_storage.
    host_addressable: bool = True

    def __init__(self) -> None:
        self._cache: dict[tuple, Executable] = {}
        self.cache_stats = CacheStats()

    # -- devices --
    @abstractmethod
    def device_count(self) -> int: ...

    @abstractmethod
    def device_name(self, index: int) -> str: ...

    @abstractmethod
    def device_properties(self, index: int) -> dict[str, Any]: ...

    @abstractmethod
    def memory_limit(self, index: int) -> int:
        """Bytes of device memory on device `index` (the allocator enforces it)."""

    # -- programs --
    def compile(self, program: Program) -> Executable:
        """The executable for `program`, compiled once per structure and then served from the cache."""
        key = program.key()
        exe = self._cache.get(key)
        if exe is not None:
            self.cache_stats.hits += 1
            return exe
        self.cache_stats.misses += 1
        start = time.perf_counter()
        exe = self._compile(program)
        self.cache_stats.compiles += 1
        self.cache_stats.compile_seconds += time.perf_counter() - start
        self._cache[key] = exe
        return exe

    @abstractmethod
    def _compile(self, program: Program) -> Executable: ...

    @abstractmethod
    def execute(self, exe: Executable, inputs: Sequence[Any], outputs: Sequence[Any], device: int = 0) -> None:
        """Runs `exe` reading `inputs` and writing its results into `outputs` (buffers of the right shape)."""

    @abstractmethod
    def synchronize(self, device: int | None = None) -> None:
        """Waits until every launched executable on `device` (all devices if None) has finished."""

    # -- storages (drivers whose memory is not host-addressable) --
    def storage_buffer(self, key: int, nbytes: int, dtype: str, device: int) -> Any:
        """The buffer standing for a whole storage (flat, nbytes // itemsize elements of `dtype`)."""
        raise NotImplementedError(f"the {self.name} driver's buffers are host memory")

    def read_storage(self, key: int, nbytes: int, dtype: str, device: int) -> Any:
        """A flat host copy (numpy) of a storage's contents."""
        raise NotImplementedError(f"the {self.name} driver's buffers are host memory")

    def write_storage(self, key: int, array: Any, device: int) -> None:
        """Replaces a storage's whole contents with the flat host array `array`."""
        raise NotImplementedError(f"the {self.name} driver's buffers are host memory")

    def free_storage(self, key: int) -> None:
        """Drops the buffer of a storage the allocator has freed."""
        raise NotImplementedError(f"the {self.name} driver's buffers are host memory")

    # -- stats --
    @abstractmethod
    def stats(self) -> dict[str, Any]: ...

    @abstractmethod
    def reset_stats(self) -> None: ...
