"""The one module that touches JAX: a PJRT client from jaxlib, used without tracing anything.

Everything the PJRT driver needs from jax goes through this file: creating the platform's client (libtpu, the CPU
client, CUDA), compiling a StableHLO module given as text, moving flat arrays between host and device, running an
executable, waiting, and memory statistics. These are jax's private client objects (`jax._src.xla_bridge`,
`jaxlib`'s `Client`, `LoadedExecutable`, `ArrayImpl`, `batched_device_put`), whose signatures change between
releases: this file is pinned to the version below, and a jax upgrade touches only it. jax.numpy is never used and
no Python function is traced; the runtime hands XLA the module text that `emit.py` printed. The one exception is
collectives.py, which joins JAX's distributed runtime and traces the cross-process collectives (shard_map).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from torchtpu.drivers import config

JAX_VERSION_TESTED = "0.10.2"  # jax and jaxlib; the `pjrt` extra and constraints.txt pin it
PLATFORMS = ("tpu", "cpu", "cuda")
_EXTRA = {"tpu": "tpu", "cpu": "pjrt", "cuda": "pjrt"}


def _first_shard(shards: list[Any]) -> Any:
    return shards[0]


class PjrtUnavailable(RuntimeError):
    """The PJRT driver cannot start: jax missing, an unknown platform, or no devices of that platform."""


class DeviceOutOfMemory(MemoryError):
    """PJRT could not allocate device memory (RESOURCE_EXHAUSTED) for a transfer or a launch."""


def _reraise(exc: Exception, what: str) -> None:
    text = str(exc)
    if "RESOURCE_EXHAUSTED" in text or "Out of memory" in text or "out of memory" in text:
        raise DeviceOutOfMemory(f"{what}: {text}") from None
    raise exc


def install_hint(platform: str) -> str:
    extra = _EXTRA.get(platform, "pjrt")
    cmd = f"pip install 'torchtpu[{extra}]'"
    if platform == "cuda":
        cmd += " 'jax[cuda12]'"
    return cmd


def platform_from_env() -> str:
    return config.get("TORCHTPU_PJRT_PLATFORM")


def _import_jax() -> tuple[Any, Any, Any, Any]:
    try:
        import jax
        from jax._src import core, xla_bridge
        from jax._src.lib import xla_client
    except ImportError as exc:
        raise PjrtUnavailable(exc.msg) from exc
    return jax, core, xla_bridge, xla_client


def jax_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("jax")
    except Exception:  # noqa: BLE001 - not installed
        return None


class Client:
    """A PJRT client for one platform; buffers are jaxlib arrays on one device each (flat, 1-D)."""

    def __init__(self, platform: str, num_cpu_devices: int | None = None) -> None:
        if platform not in PLATFORMS:
            raise ValueError(f"unknown PJRT platform {platform!r}; valid values: {', '.join(PLATFORMS)}")
        try:
            jax, core, xb, xc = _import_jax()
        except PjrtUnavailable as exc:
            raise PjrtUnavailable(
                f"TORCHTPU_DRIVER=pjrt needs jax and jaxlib (tested: {JAX_VERSION_TESTED}), which are not "
                f"installed ({exc}). Install them with: {install_hint(platform)}") from None
        self._jax, self._core, self._xc = jax, core, xc
        if not xb.backends_are_initialized():
            if platform == "cpu" and num_cpu_devices:
                jax.config.update("jax_num_cpu_devices", int(num_cpu_devices))
            if not os.environ.get("JAX_PLATFORMS"):
                # only the requested platform: on a TPU VM, a CPU-platform run must not take the chips
                jax.config.update("jax_platforms", "cpu" if platform == "cpu" else f"{platform},cpu")
        from torchtpu.drivers.pjrt import collectives

        try:
            self.process = collectives.join_distributed(jax, platform)  # before the client: (index, count)
        except Exception as exc:  # noqa: BLE001 - jax raises RuntimeError/ValueError variants per version
            raise PjrtUnavailable(f"TORCHTPU_DRIVER=pjrt could not join JAX's distributed runtime: {exc}") from None
        try:
            self.backend = xb.get_backend(platform)
            devices = list(self.backend.local_devices())
        except Exception as exc:  # noqa: BLE001 - jax raises RuntimeError/ValueError variants per version
            reason = re.sub(r"\s*\(set JAX_PLATFORMS=.*?\)", "", str(exc)).rstrip(". ")
            raise PjrtUnavailable(
                f"TORCHTPU_DRIVER=pjrt could not open the PJRT platform {platform!r}: {reason}. "
                f"Install the client for it with: {install_hint(platform)}"
                + (" (on a TPU VM; libtpu allows one process per chip)" if platform == "tpu" else "")) from None
        if not devices:
            raise PjrtUnavailable(f"the PJRT platform {platform!r} has no devices. Install the client for it with: "
                                  f"{install_hint(platform)}")
        if platform == "cpu" and num_cpu_devices and len(devices) < int(num_cpu_devices):
            raise PjrtUnavailable(
                f"{num_cpu_devices} PJRT cpu devices were asked for, but JAX's cpu client is already open in this "
                f"process with {len(devices)}; set TORCHTPU_NUM_DEVICES={num_cpu_devices} before torchtpu or jax "
                f"first opens it (the device count is fixed at that point)")
        self.platform = platform
        self.platform_version = str(getattr(self.backend, "platform_version", ""))
        self.devices = devices
        self._device_lists = [xc.DeviceList((d,)) for d in devices]
        from jax._src.sharding_impls import SingleDeviceSharding

        self._shardings = [SingleDeviceSharding(d) for d in devices]
        self._avals: dict[tuple[int, np.dtype], Any] = {}
        self._handlers = [[_first_shard] * n for n in range(16)]
        self.jax_version = jax.__version__
        self.collectives = None
        if self.process is not None:
            by_process: dict[int, list[Any]] = {}
            for d in sorted(jax.devices(platform), key=lambda d: d.id):
                by_process.setdefault(d.process_index, []).append(d)
            self.collectives = collectives.XlaCollectives(jax, by_process)

    # -- devices --
    def device_kind(self, index: int) -> str:
        return str(self.devices[index].device_kind)

    def memory_stats(self, index: int) -> dict[str, int] | None:
        try:
            stats = self.devices[index].memory_stats()
        except Exception:  # noqa: BLE001 - unsupported on some platforms
            return None
        return dict(stats) if stats else None

    # -- programs --
    def compile(self, module_text: str, device: int = 0) -> Any:
        """Compiles a StableHLO module (text) for one device; raises RuntimeError with XLA's message."""
        if "@lapack_" in module_text:
            self._init_lapack()
        options = self._xc.CompileOptions()
        options.device_assignment = self._xc.DeviceAssignment.create(np.array([[self.devices[device].id]]))
        try:
            return self.backend.compile_and_load(module_text, executable_devices=self._device_lists[device],
                                                 compile_options=options)
        except Exception as exc:  # noqa: BLE001 - jaxlib's JaxRuntimeError
            raise RuntimeError(f"PJRT compile failed: {exc}") from None

    def _init_lapack(self) -> None:
        """Loads the LAPACK kernels behind jaxlib's `lapack_*_ffi` CPU custom calls (jax does this on first use
        of jax.lax.linalg; calling them before it crashes)."""
        if not getattr(self, "_lapack_ready", False):
            from jaxlib.cpu import _lapack

            _lapack.initialize()
            self._lapack_ready = True

    def execute(self, loaded: Any, buffers: list[Any], n_results: int) -> list[Any]:
        """Launches `loaded` on its device; returns its `n_results` results (futures: reading or `block` waits)."""
        try:
            results = loaded.execute_sharded(buffers)
        except Exception as exc:  # noqa: BLE001 - jaxlib's JaxRuntimeError
            _reraise(exc, "PJRT execute")
        # each result's one shard as it is (no jax.Array assembled around it): a handler per result
        n = n_results
        handlers = self._handlers[n] if n < len(self._handlers) else [_first_shard] * n
        return results.consume_with_handlers(handlers)

    # -- buffers --
    def put(self, array: np.ndarray, device: int = 0) -> Any:
        """A device buffer with `array`'s contents (1-D). The CPU client may alias `array` (zero-copy): the
        caller hands it over and must not write to it afterwards."""
        array = np.ascontiguousarray(array).reshape(-1)
        key = (array.shape[0], array.dtype)
        aval = self._avals.get(key)
        if aval is None:
            aval = self._avals[key] = self._core.ShapedArray(array.shape, array.dtype)
        try:
            return self._xc.batched_device_put(aval, self._shardings[device], [array], [self.devices[device]], True,
                                               False, self._xc.HostBufferSemantics.ZERO_COPY, True)
        except Exception as exc:  # noqa: BLE001 - jaxlib's JaxRuntimeError
            _reraise(exc, f"PJRT transfer of {array.nbytes} bytes")

    def to_host(self, buffer: Any, writable: bool = True) -> np.ndarray:
        """The buffer's contents on the host. CPU: a zero-copy view of device memory, copied only when
        `writable` (the caller then owns it). TPU/GPU: one device-to-host copy, owned by the caller."""
        host, did_copy = buffer._single_device_array_to_np_array_did_copy()
        if did_copy:
            try:
                host.flags.writeable = True
            except ValueError:
                host = host.copy()
            return host
        if writable:
            return np.array(host, copy=True)
        return host

    def block(self, buffers: Sequence[Any]) -> None:
        for b in buffers:
            if not b.is_deleted():
                b.block_until_ready()

    @staticmethod
    def is_deleted(buffer: Any) -> bool:
        return bool(buffer.is_deleted())

    @staticmethod
    def nbytes(buffer: Any) -> int:
        return int(buffer.nbytes)
