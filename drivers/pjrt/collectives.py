"""Cross-process XLA collectives for the PJRT driver: JAX's distributed runtime, one device per rank.

`join_distributed()` runs before the client is made (client.py): under torchrun (WORLD_SIZE > 1, or
TORCHTPU_PJRT_DISTRIBUTED=1) it calls `jax.distributed.initialize` with the coordinator on MASTER_ADDR (127.0.0.1
when unset) at MASTER_PORT + 1 and process id RANK; on the CPU client it first selects gloo as XLA's CPU collectives
(`jax_cpu_collectives_implementation`), so the same compiled collectives the chips run work across processes here.

`XlaCollectives` compiles each collective once per (kind, op, dtype, size, ranks, device) as a jitted `shard_map`
over a mesh of one device per rank (rank r: the device `device` of JAX process r), runs it on the ranks' own device
buffers (flat, 1-D) and returns this rank's shard: nothing goes through the host. SUM/AVG/MAX/MIN are XLA's
all-reduce (psum/pmax/pmin) and reduce-scatter (psum_scatter); PRODUCT and the bitwise ops an all-gather reduced
in rank order; broadcast an all-gather of which the root's row is kept; all_to_all XLA's all-to-all. `counts`
says how many of each ran (the proof that the XLA path was taken).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from typing import Any

from torchtpu.drivers import config

REDUCE_OPS = ("SUM", "AVG", "MAX", "MIN", "PRODUCT", "BAND", "BOR", "BXOR")
DTYPES = ("float32", "bfloat16", "float16", "int32", "int16", "int8", "uint8")  # 64-bit: jax runs without x64
_FLOAT = ("float32", "bfloat16", "float16")


def distributed_env() -> tuple[str, int, int] | None:
    """(coordinator address, WORLD_SIZE, RANK) when this process should join JAX's distributed runtime, else None."""
    wanted = config.get("TORCHTPU_PJRT_DISTRIBUTED")
    raw_world = os.environ.get("WORLD_SIZE", "")
    try:
        world = int(raw_world) if raw_world else 1
        rank = int(os.environ.get("RANK", "0") or 0)
        port = int(os.environ.get("MASTER_PORT", "29500") or 29500)
    except ValueError:
        raise ValueError(f"TORCHTPU_PJRT_DISTRIBUTED needs integer WORLD_SIZE, RANK and MASTER_PORT; got "
                         f"WORLD_SIZE={raw_world!r} RANK={os.environ.get('RANK')!r} "
                         f"MASTER_PORT={os.environ.get('MASTER_PORT')!r}") from None
    if wanted is None:
        wanted = world > 1
    if not wanted:
        return None
    if not raw_world or not 0 <= rank < world or not 0 < port < 65535:
        raise ValueError(f"TORCHTPU_PJRT_DISTRIBUTED=1 needs WORLD_SIZE >= 1, 0 <= RANK < WORLD_SIZE and a "
                         f"MASTER_PORT below 65535 (as torchrun sets them); got WORLD_SIZE={raw_world!r} "
                         f"RANK={rank} MASTER_PORT={port}")
    host = os.environ.get("MASTER_ADDR") or "127.0.0.1"
    return f"{host}:{port + 1}", world, rank


def join_distributed(jax: Any, platform: str) -> tuple[int, int] | None:
    """Initialises JAX's distributed runtime when `distributed_env()` asks for it; (process index, count)."""
    spec = distributed_env()
    if spec is None:
        return None
    address, world, rank = spec
    from jax._src import distributed

    if distributed.global_state.client is None:
        if platform == "cpu":
            jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(coordinator_address=address, num_processes=world, process_id=rank,
                                   initialization_timeout=120, heartbeat_timeout_seconds=30,
                                   shutdown_timeout_seconds=10)
    return jax.process_index(), jax.process_count()


class CollectiveFailed(RuntimeError):
    """An XLA collective failed (its transport saw a peer go) or did not finish in time (a peer died or never
    joined)."""



class XlaCollectives:
    """Compiled cross-process collectives on one device per rank (module docstring)."""

    def __init__(self, jax: Any, devices_of_process: dict[int, list[Any]]) -> None:
        self._jax = jax
        self._devices = devices_of_process
        self.process_count = len(devices_of_process)
        self.counts: dict[str, int] = {}
        self.compiles = 0

    @staticmethod
    def supports(kind: str, op: str | None, dtype: str) -> bool:
        """Whether XLA runs this collective here (else the caller moves it through the host)."""
        if dtype not in DTYPES:
            return False
        if op is None:
            return True
        if op in ("BAND", "BOR", "BXOR"):
            return dtype not in _FLOAT
        if op == "AVG":
            return dtype in _FLOAT
        return op in REDUCE_OPS

    def _mesh(self, ranks: tuple[int, ...], device: int) -> Any:
        import numpy as np
        from jax.sharding import Mesh

        try:
            return Mesh(np.array([self._devices[r][device] for r in ranks]), ("r",))
        except (KeyError, IndexError):
            raise ValueError(f"XLA collective over processes {list(ranks)} on local device {device}: some process "
                             "has no such device") from None

    @functools.lru_cache(maxsize=512)  # noqa: B019 - one object per driver, kept for the process
    def _program(self, kind: str, op: str | None, dtype: str, n: int, ranks: tuple[int, ...], device: int,
                 root: int) -> Any:
        jax = self._jax
        import jax.numpy as jnp
        from jax import lax
        from jax.sharding import PartitionSpec as P

        w = len(ranks)

        def fold(rows: Any) -> Any:  # (w, m) -> (m,), in rank order
            f = {"PRODUCT": jnp.multiply, "BAND": jnp.bitwise_and, "BOR": jnp.bitwise_or,
                 "BXOR": jnp.bitwise_xor, "SUM": jnp.add, "MAX": jnp.maximum, "MIN": jnp.minimum}[op]
            acc = rows[0]
            for j in range(1, w):
                acc = f(acc, rows[j])
            return acc

        def mean(s: Any) -> Any:
            # a true division, correctly rounded as gloo's AVG: XLA's simplifier turns a division by a broadcast
            # constant (s / w) into a multiplication by its reciprocal (off by an ulp for w = 3 in a third of
            # fp32 values); the barrier hides the constant from it
            return (s / lax.optimization_barrier(jnp.full_like(s, w))).astype(s.dtype)

        def body(x: Any) -> Any:
            if kind == "all_reduce":
                if op in ("SUM", "AVG"):
                    s = lax.psum(x, "r")
                    return mean(s) if op == "AVG" else s
                if op == "MAX":
                    return lax.pmax(x, "r")
                if op == "MIN":
                    return lax.pmin(x, "r")
                return fold(lax.all_gather(x, "r"))
            if kind == "all_gather":
                return lax.all_gather(x, "r", tiled=True)
            if kind == "broadcast":
                return lax.all_gather(x, "r")[root]
            if kind == "reduce_scatter":
                if op in ("SUM", "AVG"):
                    s = lax.psum_scatter(x, "r", tiled=True)
                    return mean(s) if op == "AVG" else s
                return fold(lax.all_to_all(x.reshape(w, -1), "r", 0, 0, tiled=True))
            if kind == "all_to_all":
                return lax.all_to_all(x.reshape(w, -1), "r", 0, 0, tiled=True).reshape(-1)
            raise ValueError(f"no XLA collective {kind!r}")

        mesh = self._mesh(ranks, device)
        self.compiles += 1
        fn = jax.shard_map(body, mesh=mesh, in_specs=P("r"), out_specs=P("r"))  # each rank: its own result
        return jax.jit(fn), mesh

    def run(self, kind: str, op: str | None, local: Any, ranks: Sequence[int], device: int, root: int = 0,
            timeout_s: float = 300.0) -> Any:
        """This rank's result of `kind` over `ranks` (JAX process ids, in group rank order) for its flat device
        buffer `local`; waits at most `timeout_s` for it (a dead peer: CollectiveFailed, never a hang)."""
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        ranks = tuple(ranks)
        n = int(local.shape[0])
        fn, mesh = self._program(kind, op, str(local.dtype), n, ranks, device, root)
        glob = self._jax.make_array_from_single_device_arrays((n * len(ranks),), NamedSharding(mesh, P("r")),
                                                              [local])
        deadline = time.monotonic() + timeout_s
        pause = 1e-4
        try:
            shard = fn(glob).addressable_shards[0].data
            while not shard.is_ready():
                if time.monotonic() > deadline:
                    raise CollectiveFailed(f"XLA {kind} over processes {list(ranks)} did not finish in "
                                           f"{timeout_s:.0f} s: a peer died or did not join")
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        except (RuntimeError, ValueError) as exc:  # jaxlib's runtime errors (a peer's connection closed: ValueError)
            if isinstance(exc, CollectiveFailed):
                raise
            raise CollectiveFailed(f"XLA {kind} over processes {list(ranks)} failed: {type(exc).__name__}: "
                                   f"{exc}") from exc
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return shard

    def slice(self, buffer: Any, offset: int, n: int) -> Any:
        """Elements offset..offset+n of a flat device buffer, on its device."""
        if offset == 0 and n == int(buffer.shape[0]):
            return buffer
        return _local_program(self._jax, "slice", offset, n)(buffer)

    def concat(self, buffers: Sequence[Any]) -> Any:
        """Flat device buffers of one device joined end to end."""
        return _concat(self._jax, len(buffers))(*buffers)

    def update(self, buffer: Any, value: Any, offset: int) -> Any:
        """A new flat device buffer: `buffer` with elements from `offset` replaced by `value`."""
        if offset == 0 and int(value.shape[0]) == int(buffer.shape[0]):
            return value
        return _local_program(self._jax, "update", offset)(buffer, value)


@functools.lru_cache(maxsize=512)
def _local_program(jax: Any, name: str, *static: int) -> Any:
    from jax import lax

    if name == "slice":
        offset, n = static
        return jax.jit(lambda s: lax.slice(s, (offset,), (offset + n,)))
    (offset,) = static
    return jax.jit(lambda s, v: lax.dynamic_update_slice(s, v, (offset,)))


@functools.lru_cache(maxsize=64)
def _concat(jax: Any, count: int) -> Any:
    from jax import lax

    return jax.jit(lambda *xs: lax.concatenate(xs, 0))
