"""The contract between the PyTorch front end and a machine: devices, compile(Program), execute, sync, stats.

A driver never imports torch. One buffer model for every driver: the front end names each torch storage by a key
(its address) and asks the driver for the storage's buffer (`storage_buffer`), a host array of its contents
(`read_storage`), to replace them (`write_storage`) and to forget a freed one (`free_storage`). The simulator's
buffers are zero-copy numpy views of the storage's host memory; PJRT's are device buffers. A driver whose
`strided_operands` is true also takes strided views of those buffers (`view`) as program operands, so one eager op
launches on its tensors' own memory; otherwise operands are whole storages, and the front end expresses views
inside the program (deferred regions).

Executables are compiled for one device's target (its chip: MXU width, memory, costs) and cached, least recently
used first out (TORCHTPU_EXECUTABLE_CACHE entries), by the Program's structural key and that target.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from torchtpu.drivers import config
from torchtpu.drivers.ir import Program


class ExecutionError(RuntimeError):
    """A runtime failure inside an executable, naming the op (by its index in the Program) that raised it.

    One class per builtin class the CPU kernel raises: an IndexError or ZeroDivisionError inside is raised as
    IndexExecutionError / ZeroDivisionExecutionError, subclasses of that builtin (`except IndexError` catches an
    out-of-range index on the device, as on CPU); anything else is a RuntimeError, as CPU's TORCH_CHECK.
    `builtin` names the class CPU raises for the same input (what the fuzzer and the tests compare)."""

    builtin: type[BaseException] = RuntimeError

    def __new__(cls, op_index: int, op_name: str, cause: BaseException) -> ExecutionError:
        if cls is ExecutionError:
            cls = next((mixed for base, mixed in _KEPT.items() if isinstance(cause, base)), cls)
        return super().__new__(cls, op_index, op_name, cause)

    def __init__(self, op_index: int, op_name: str, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause} (IR op #{op_index} {op_name})")
        self.op_index, self.op_name, self.cause = op_index, op_name, cause

    @classmethod
    def restated(cls, error: ExecutionError, message: str) -> ExecutionError:
        """`error` (same class, op and cause) with `message` in place of its own: a deferred region's or a
        compiled graph's report naming the user's op and line."""
        out = ExecutionError(error.op_index, error.op_name, error.cause)
        out.args = (message,)
        return out


class IndexExecutionError(ExecutionError, IndexError):
    """An index out of range on the device (ExecutionError and IndexError)."""

    builtin = IndexError


class ZeroDivisionExecutionError(ExecutionError, ZeroDivisionError):
    """An integer division by zero on the device (ExecutionError and ZeroDivisionError). CPU's kernels raise a
    RuntimeError reading "ZeroDivisionError" for it, so that is the class it stands for."""

    builtin = RuntimeError


_KEPT: dict[type, type] = {IndexError: IndexExecutionError, ZeroDivisionError: ZeroDivisionExecutionError}


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    compiles: int = 0
    compile_seconds: float = 0.0
    evictions: int = 0


@dataclass
class Executable:
    program: Program
    payload: Any = None
    meta: dict[str, Any] = field(default_factory=dict)
    target: Any = None  # what it was compiled for (the sim: the chip); `execute` refuses a device of another


class Driver(ABC):
    """One machine kind: the simulator, or a PJRT client."""

    name: str = "driver"
    # Whether `execute` takes strided views of storage buffers (`view`) as operands; otherwise every program
    # input and output is a whole storage's buffer from `storage_buffer`.
    strided_operands: bool = False
    # Whether `free_storage` must hear of every freed storage (a driver that keeps per-storage state); one that
    # keys its buffers by address and size alone (the simulator's views of host memory) need not.
    wants_frees: bool = True
    # (byte array, its first address) over the process's address space where the buffers are host memory and
    # strided views by address are valid operands (the simulator, drivers/sim/host_memory.py); else None.
    host_memory: tuple[Any, int] | None = None
    # The most dims a program's value may have (the simulator: numpy's 64); None: no limit. torchtpu/ops/many_dims.py
    # computes what it can of a tensor past it on views with fewer dims and refuses the rest naming the limit.
    max_rank: int | None = None

    def __init__(self, cache_size: int | None = None) -> None:
        self._cache: OrderedDict[tuple, Executable] = OrderedDict()
        self.cache_size = cache_size or config.get("TORCHTPU_EXECUTABLE_CACHE")
        if self.cache_size < 1:
            raise ValueError(f"executable cache size must be >= 1, got {self.cache_size}")
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
    def target(self, device: int) -> Any:
        """What an executable for `device` is compiled for (devices with equal targets share executables)."""
        return None

    def compile(self, program: Program, device: int = 0) -> Executable:
        """The executable for `program` on `device`, compiled once per structure and target, then served from
        the cache (least recently used evicted past `cache_size`)."""
        target = self.target(device)
        key = (program.key(), target)
        cache = self._cache
        exe = cache.get(key)
        if exe is not None:
            self.cache_stats.hits += 1
            cache.move_to_end(key)
            return exe
        self.cache_stats.misses += 1
        start = time.perf_counter()
        exe = self._compile(program, device)
        exe.target = target
        self.cache_stats.compiles += 1
        self.cache_stats.compile_seconds += time.perf_counter() - start
        cache[key] = exe
        if len(cache) > self.cache_size:
            cache.popitem(last=False)
            self.cache_stats.evictions += 1
        return exe

    @abstractmethod
    def _compile(self, program: Program, device: int) -> Executable: ...

    @abstractmethod
    def execute(self, exe: Executable, inputs: Sequence[Any], outputs: Sequence[Any], device: int = 0) -> None:
        """Runs `exe` reading `inputs` and writing its results into `outputs` (buffers of the right shape)."""

    @abstractmethod
    def synchronize(self, device: int | None = None) -> None:
        """Waits until every launched executable on `device` (all devices if None) has finished."""

    # -- buffers: one model for every driver (module docstring) --
    @abstractmethod
    def storage_buffer(self, key: int, nbytes: int, dtype: str, device: int) -> Any:
        """The buffer standing for a whole storage (flat, nbytes // itemsize elements of `dtype`)."""

    @abstractmethod
    def read_storage(self, key: int, nbytes: int, dtype: str, device: int, writable: bool = True, *,
                     discard: bool = False) -> Any:
        """A flat host array (numpy) of a storage's contents: the memory itself where it is host memory (the
        simulator), else a copy (`writable=False`: possibly a read-only view, for callers that only read;
        `discard=True`: the caller overwrites every element, so a copy need not hold the contents)."""

    @abstractmethod
    def write_storage(self, key: int, array: Any, device: int) -> None:
        """Makes the flat host array `array` a storage's whole contents (a no-op for the array `read_storage`
        returned where that is the memory itself)."""

    @abstractmethod
    def free_storage(self, key: int) -> None:
        """Drops what the driver keeps for a storage the allocator has freed."""

    def view(self, buffer: Any, shape: Sequence[int], strides: Sequence[int], offset: int) -> Any:
        """A strided view (element strides and offset) of a storage buffer, as an operand of `execute`; only
        for drivers with `strided_operands`."""
        raise NotImplementedError(f"the {self.name} driver takes whole storages as operands, not views")

    # -- stats --
    @abstractmethod
    def stats(self) -> dict[str, Any]: ...

    @abstractmethod
    def reset_stats(self) -> None: ...
