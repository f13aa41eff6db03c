"""PjrtDriver: Program -> StableHLO text -> PJRT compile -> execute on storage-keyed device buffers.

The same IR the simulator runs, compiled by XLA for a real PJRT platform: libtpu on a TPU VM, or (for testing the
same path anywhere) JAX's CPU client, `TORCHTPU_PJRT_PLATFORM=tpu|cpu|cuda`. Device memory is not host memory:
the front end names each torch storage by its address (`key`, base.py's buffer model) and the driver keeps one
flat device buffer per storage; operands are whole storages (`strided_operands` is false). PJRT buffers are
immutable, so a program's output *rebinds* its storage to the new buffer; the old one is freed when nothing else
holds it (or donated to the program, `donate`).

Launches are asynchronous: `execute` returns once the program is queued; reading a storage or `synchronize`
waits. Executables are cached by the Program's structure (base class), and per donation pattern here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from torchtpu.drivers import config
from torchtpu.drivers.base import Driver, Executable, ExecutionError
from torchtpu.drivers.ir import ITEMSIZE, Program
from torchtpu.drivers.pjrt import emit
from torchtpu.drivers.pjrt.client import (
    PLATFORMS,
    Client,
    DeviceOutOfMemory,
    PjrtUnavailable,
    install_hint,
    platform_from_env,
)

__all__ = ["PjrtDriver", "PjrtUnavailable", "DeviceOutOfMemory", "PLATFORMS", "install_hint"]

_MAX_INFLIGHT = 256  # launches remembered for `synchronize`; past this the oldest are waited for
_MAX_SCALARS = 1024  # device copies of hoisted scalar inputs kept for reuse


@dataclass(eq=False, slots=True)
class _Storage:
    key: int
    nbytes: int
    device: int
    array: Any = None  # a flat device buffer, or None: never written (reads as zeros)
    shared: bool = False  # `array` is also another storage's buffer


@dataclass(eq=False, slots=True)
class StorageRef:
    """The handle `storage_buffer` returns: a storage seen as a flat array of `dtype`."""

    storage: _Storage
    dtype: str

    @property
    def numel(self) -> int:
        return self.storage.nbytes // ITEMSIZE[self.dtype]


@dataclass
class _Compiled:
    text: str
    inputs: list[tuple[int, str, np.dtype]]  # per program input: element count, IR dtype, numpy dtype
    checks: tuple[emit.Check, ...]  # device-side error checks: the module's last result
    n_outputs: int  # the program's outputs (the module returns one more, the check flags, when `checks`)
    variants: dict[tuple[tuple[int, int], ...], Any] = field(default_factory=dict)  # donation -> loaded
    plain: Any = None  # variants[()]: device 0, nothing donated (the common launch, looked up without a key)


def _donate_default(platform: str) -> bool:
    value = config.get("TORCHTPU_PJRT_DONATE")
    if value is not None:
        return value
    # auto: on for accelerators (halves peak memory of in-place updates). The CPU client hands out zero-copy
    # host views of its buffers, and a buffer with such a view cannot be donated.
    return platform != "cpu"


class PjrtDriver(Driver):
    name = "pjrt"

    def __init__(self, platform: str | None = None, devices: int | None = None, donate: bool | None = None,
                 cache_size: int | None = None) -> None:
        super().__init__(cache_size)
        self.platform = platform or platform_from_env()
        count = devices or (config.get("TORCHTPU_NUM_DEVICES") if config.is_set("TORCHTPU_NUM_DEVICES") else None)
        self.client = Client(self.platform, num_cpu_devices=count if self.platform == "cpu" else None)
        self._count = min(count, len(self.client.devices)) if count else len(self.client.devices)
        self.donate = _donate_default(self.platform) if donate is None else donate
        # errors the sim raises inside ops (index out of range, integer division by zero) are checked on the
        # device; a launch with checks waits for them. TORCHTPU_PJRT_CHECKS=0: no checks, XLA's clamping.
        self.checks = config.get("TORCHTPU_PJRT_CHECKS")
        # f32 matmuls at DEFAULT/HIGH spelled out as the MXU's bf16 passes where the platform ignores the dot
        # algorithm (cpu, cuda); TORCHTPU_PJRT_MXU_PASSES=0 computes them in f32 instead
        passes = config.get("TORCHTPU_PJRT_MXU_PASSES")
        self.emulate_passes = self.platform != "tpu" if passes is None else passes
        self._storages: dict[Any, _Storage] = {}
        self._inflight: list[list[Any]] = [[] for _ in range(self._count)]
        self._scalars: dict[tuple[bytes, np.dtype, int], Any] = {}
        self.reset_stats()

    # -- devices --
    def device_count(self) -> int:
        return self._count

    def device_name(self, index: int) -> str:
        return f"{self.client.device_kind(index)} (PJRT {self.platform})"

    def device_properties(self, index: int) -> dict[str, Any]:
        return {"name": self.device_name(index), "total_memory": self.memory_limit(index),
                "chip": self.client.device_kind(index), "platform": self.platform,
                "platform_version": self.client.platform_version, "jax_version": self.client.jax_version,
                "driver": self.name}

    def memory_limit(self, index: int) -> int:
        stats = self.client.memory_stats(index)
        if stats and stats.get("bytes_limit"):
            return int(stats["bytes_limit"])
        try:  # the CPU client: host memory
            return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            return 16 * 2**30

    # -- programs --
    def emit(self, program: Program, donate: dict[int, int] | None = None) -> str:
        """The StableHLO module text for `program` on this driver's platform."""
        return emit.emit(program, platform=self.platform, donate=donate, checks=self.checks,
                         emulate_passes=self.emulate_passes).text

    def _compile(self, program: Program, device: int) -> Executable:  # loaded per device in `_loaded`
        module = emit.emit(program, platform=self.platform, checks=self.checks, emulate_passes=self.emulate_passes)
        compiled = _Compiled(module.text, [(emit.numel(v.shape), v.dtype, emit.NP_DTYPES[v.dtype])
                                           for v in program.inputs], module.checks, len(program.outputs))
        compiled.variants[()] = compiled.plain = self.client.compile(module.text, 0)
        return Executable(program, payload=compiled, meta={"platform": self.platform})

    def _loaded(self, exe: Executable, donation: tuple[tuple[int, int], ...], device: int) -> Any:
        """The loaded executable for this donation pattern on `device` (compiled on first use)."""
        compiled: _Compiled = exe.payload
        key = donation if device == 0 else (("device", device), *donation)
        loaded = compiled.variants.get(key)
        if loaded is None:
            start = time.perf_counter()
            loaded = self.client.compile(self.emit(exe.program, dict(donation)), device)
            self.cache_stats.compile_seconds += time.perf_counter() - start
            self.cache_stats.compiles += 1
            compiled.variants[key] = loaded
        return loaded

    def _input_buffer(self, meta: tuple[int, str, np.dtype], x: Any, device: int, value: Any) -> Any:
        n, dtype, np_dtype = meta
        if type(x) is StorageRef:
            if x.dtype != dtype or x.storage.nbytes // np_dtype.itemsize != n:
                raise TypeError(f"program input {value} bound to a storage of {x.storage.nbytes} bytes as "
                                f"{x.dtype}: inputs are whole storages, flat, of the input's dtype")
            array = x.storage.array
            if array is not None and array.dtype == np_dtype:
                return array
            return self._storage_array(x, device)
        if isinstance(x, np.ndarray | np.generic | int | float | bool):
            host = np.asarray(x)
            if host.size != n:
                raise TypeError(f"program input {value} bound to a host array of shape {host.shape}")
            host = np.array(host, dtype=np_dtype, copy=True).reshape(-1)
            if n != 1:
                return self.client.put(host, device)
            key = (host.tobytes(), np_dtype, device)  # hoisted scalars repeat: keep their device copies
            buf = self._scalars.get(key)
            if buf is None:
                if len(self._scalars) >= _MAX_SCALARS:
                    self._scalars.clear()
                buf = self._scalars[key] = self.client.put(host, device)
            return buf
        return x  # already a device buffer of this client

    def execute(self, exe: Executable, inputs: Sequence[Any], outputs: Sequence[Any], device: int = 0) -> None:
        """Runs `exe`: inputs are StorageRefs (or host arrays / scalars); each StorageRef output is rebound to its
        result. Host numpy outputs (for direct use without torch) are filled in place, which waits."""
        compiled: _Compiled = exe.payload
        metas = compiled.inputs
        if len(inputs) != len(metas) or len(outputs) != compiled.n_outputs:
            program = exe.program
            raise TypeError(f"program {program.name} takes {len(program.inputs)} inputs and "
                            f"{len(program.outputs)} outputs; got {len(inputs)} and {len(outputs)}")
        buffers = []
        for i, (meta, x) in enumerate(zip(metas, inputs)):
            if type(x) is StorageRef:  # the common case first: a storage holding this input's dtype and size
                s = x.storage
                array = s.array
                if array is not None and x.dtype == meta[1] and s.nbytes == meta[0] * meta[2].itemsize \
                        and array.dtype == meta[2]:
                    buffers.append(array)
                    continue
            buffers.append(self._input_buffer(meta, x, device, exe.program.inputs[i]))
        donation = self._donation(exe.program, inputs, outputs) if self.donate and not compiled.checks else ()
        loaded = compiled.plain if device == 0 and not donation else self._loaded(exe, donation, device)
        results = self.client.execute(loaded, buffers, compiled.n_outputs + bool(compiled.checks))
        self.launches += 1
        if compiled.checks:
            self._raise_failed_check(compiled.checks, results.pop())
        self._track(device, results)
        if len(results) == 1:
            out = outputs[0]
            if type(out) is StorageRef:
                s = out.storage
                s.array = results[0]
                s.shared = False
                return
        for j, (out, result) in enumerate(zip(outputs, results)):
            if type(out) is StorageRef:
                out.storage.array = result
                # one buffer bound to two storages (a value returned twice) must never be donated
                out.storage.shared = any(r is result for k, r in enumerate(results) if k != j)
            else:
                host = self.client.to_host(result, writable=False)
                np.copyto(out, host.reshape(out.shape).astype(out.dtype, copy=False), casting="unsafe")

    def _raise_failed_check(self, checks: tuple[emit.Check, ...], status: Any) -> None:
        """Waits for the launch's check flags and raises the first failed one as the sim would have."""
        flags = self.client.to_host(status, writable=False).reshape(-1, 2)
        for check, (flag, detail) in zip(checks, flags):
            if flag:
                error = {"IndexError": IndexError, "RuntimeError": RuntimeError,
                         "ZeroDivisionError": ZeroDivisionError}.get(check.error, ValueError)
                raise ExecutionError(check.op_index, check.op_name, error(check.message.format(int(detail))))

    @staticmethod
    def _donation(program: Program, inputs: Sequence[Any], outputs: Sequence[Any]) -> tuple[tuple[int, int], ...]:
        """Inputs whose storage this launch overwrites (read once, same type as that output) lend it their buffer."""
        out_index = {}
        for j, out in enumerate(outputs):
            if isinstance(out, StorageRef):
                out_index[id(out.storage)] = j
        seen: dict[int, int] = {}
        for x in inputs:
            if isinstance(x, StorageRef):
                seen[id(x.storage)] = seen.get(id(x.storage), 0) + 1
        pairs = []
        used = set()
        for i, x in enumerate(inputs):
            if not isinstance(x, StorageRef) or seen[id(x.storage)] != 1:
                continue
            j = out_index.get(id(x.storage))
            if j is None or j in used or program.inputs[i].type != program.outputs[j].type:
                continue
            if x.storage.array is None or x.storage.shared:
                continue
            pairs.append((i, j))
            used.add(j)
        return tuple(pairs)

    def _track(self, device: int, results: list[Any]) -> None:
        inflight = self._inflight[device]
        inflight.extend(results)
        if len(inflight) > _MAX_INFLIGHT:
            self.client.block(inflight)
            inflight.clear()

    def synchronize(self, device: int | None = None) -> None:
        for i, inflight in enumerate(self._inflight):
            if device is None or device == i:
                self.client.block(inflight)
                inflight.clear()

    def one_op_runner(self, exe: Executable, input_slots: Sequence[int], output_slots: Sequence[int],
                      slot_types: Sequence[tuple[int, str]], device: int) -> Any:
        """`execute` of a cached one-op region prepared once (one_op.py), or None."""
        from torchtpu.drivers.pjrt.one_op import runner

        return runner(self, exe, input_slots, output_slots, slot_types, device)

    # -- storages --
    def storage_buffer(self, key: int, nbytes: int, dtype: str, device: int) -> StorageRef:
        s = self._storages.get(key)
        if s is None or s.nbytes != nbytes or s.device != device:  # new storage (or an address reused)
            s = self._storages[key] = _Storage(key, int(nbytes), device)
        return StorageRef(s, dtype)

    def _storage_array(self, ref: StorageRef, device: int) -> Any:
        s = ref.storage
        array = s.array
        if array is None:  # never written: zeros (calloc'd on the host, so cheap to make)
            s.array = array = self.client.put(np.zeros(ref.numel, emit.NP_DTYPES[ref.dtype]), s.device)
            return array
        if array.dtype != emit.NP_DTYPES[ref.dtype]:  # the storage seen through another dtype: reinterpret bytes
            host = self._bytes(s)
            s.array = array = self.client.put(host.view(emit.NP_DTYPES[ref.dtype])[: ref.numel].copy(), s.device)
            s.shared = False
        return array

    def _bytes(self, s: _Storage) -> np.ndarray:
        raw = self.client.to_host(s.array, writable=False).view(np.uint8)
        if raw.size < s.nbytes:
            raw = np.concatenate([raw, np.zeros(s.nbytes - raw.size, np.uint8)])
        return raw[: s.nbytes]

    def read_storage(self, key: int, nbytes: int, dtype: str, device: int, writable: bool = True, *,
                     discard: bool = False) -> np.ndarray:
        """A flat host copy of the storage (the caller owns it); zeros if it was never written.

        `writable=False` allows a read-only zero-copy view of the device buffer where the platform has one (the
        CPU client), for callers that only copy out of it (`.cpu()`, `.item()`); `discard=True` skips the
        device read (the caller overwrites every element)."""
        np_dtype = emit.NP_DTYPES[dtype]
        n = nbytes // np_dtype.itemsize
        if discard:
            return np.empty(n, np_dtype)
        s = self._storages.get(key)
        if s is None or s.array is None or s.nbytes != nbytes:
            return np.zeros(n, np_dtype)
        self.reads += 1
        if s.array.dtype == np_dtype:
            return self.client.to_host(s.array, writable=writable)
        return self._bytes(s).view(np_dtype)[:n].copy()

    def write_storage(self, key: int, array: np.ndarray, device: int) -> None:
        """Replaces the storage's contents with the flat host `array` (handed over: it may be aliased on CPU)."""
        flat = np.ascontiguousarray(array).reshape(-1)
        s = self._storages.get(key)
        if s is None or s.nbytes != flat.nbytes or s.device != device:
            s = self._storages[key] = _Storage(key, int(flat.nbytes), device)
        s.array = self.client.put(flat, device)
        s.shared = False
        self.writes += 1

    # -- cross-process collectives (collectives.py; None unless JAX's distributed runtime was joined) --
    @property
    def collectives(self) -> Any:
        return self.client.collectives

    def storage_elements(self, key: int, nbytes: int, dtype: str, device: int, offset: int, n: int) -> Any:
        """Elements offset..offset+n of a storage as a flat device buffer of `dtype` (no host copy where the
        storage holds that dtype already)."""
        ref = self.storage_buffer(key, nbytes, dtype, device)
        return self.client.collectives.slice(self._storage_array(ref, device), offset, n)

    def write_elements(self, key: int, nbytes: int, dtype: str, device: int, offset: int, value: Any) -> None:
        """Replaces elements offset.. of a storage by the flat device buffer `value` (rebinding the storage)."""
        ref = self.storage_buffer(key, nbytes, dtype, device)
        s = ref.storage
        s.array = self.client.collectives.update(self._storage_array(ref, device), value, offset)
        s.shared = False
        self._track(device, [s.array])

    def run_function(self, fn: Any, inputs: Sequence[StorageRef], outputs: Sequence[StorageRef],
                     device: int = 0) -> None:
        """Runs a jitted JAX function (a custom kernel, torchtpu.kernels) in this client on the inputs' flat device
        buffers and binds each output storage to its flat result; waits for it, so that the kernel's errors
        (an interpreted Pallas kernel's out-of-bounds read) raise here."""
        arrays = [self._storage_array(x, device) for x in inputs]
        results = fn(*arrays)
        for out, result in zip(outputs, results):
            if int(result.shape[0]) != out.numel or str(result.dtype) != str(emit.NP_DTYPES[out.dtype]):
                raise TypeError(f"run_function: a result of {result.dtype}[{result.shape[0]}] for a storage of "
                                f"{out.numel} {out.dtype}")
        self.client.block(results)
        for out, result in zip(outputs, results):
            out.storage.array = result
            out.storage.shared = False
        self.launches += 1

    def free_storage(self, key: int) -> None:
        self._storages.pop(key, None)

    def storage_count(self) -> int:
        return len(self._storages)

    # -- stats --
    def stats(self) -> dict[str, Any]:
        live = [s.array for s in self._storages.values() if s.array is not None]
        memory = {}
        for i in range(self._count):
            memory[i] = self.client.memory_stats(i) or {}
        return {"launches": self.launches, "reads": self.reads, "writes": self.writes,
                "platform": self.platform, "storages": len(self._storages),
                "storage_bytes": sum(self.client.nbytes(a) for a in live),
                "executables": len(self._cache), "memory": memory,
                "compile_seconds": self.cache_stats.compile_seconds}

    def reset_stats(self) -> None:
        self.launches = 0
        self.reads = 0
        self.writes = 0
