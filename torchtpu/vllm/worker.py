"""`TpuWorker`: one vLLM worker process per "tpu" chip (tensor parallel ranks are processes, as torchrun's are).

It binds the chip, joins vLLM's process groups over c10d backend "tpu_dist", builds `TpuModelRunner`, sizes the
KV cache from the chip's HBM (simulated: `torch.tpu.mem_get_info`) after a profiling forward pass, and optionally
precompiles every token-count bucket at start-up (`--additional-config '{"precompile": true}'`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import Any

import torch
from vllm.config import set_current_vllm_config
from vllm.utils.torch_utils import set_random_seed
from vllm.v1.worker.gpu_worker import Worker, init_worker_distributed_environment
from vllm.v1.worker.worker_base import CompilationTimes

from torchtpu import config as tpu_config
from torchtpu.vllm import compiler
from torchtpu.vllm.model_runner import TpuModelRunner, compiled_programs

log = logging.getLogger("vllm.torchtpu")  # under vLLM's logger: its handler and level

GiB = 1 << 30
# The simulator keeps "HBM" in host memory: without an explicit kv_cache_memory_bytes the KV cache is capped at
# this many bytes there (a 16 GiB v5e would otherwise allocate ~14 GiB of host RAM). Real chips are not capped.
SIM_KV_CAP = tpu_config.get("TORCHTPU_VLLM_SIM_KV_BYTES")


def _gib(n: float) -> str:
    return f"{n / GiB:.3f} GiB"


def device_index(local_rank: int, parallel_config: Any) -> int:
    """The chip of `local_rank` (tpu:local_rank), refused by name when this host has fewer chips than the ranks
    it runs (the platform checks the same before any worker starts)."""
    from torchtpu.vllm.platform import check_world_size

    check_world_size(parallel_config)
    return local_rank


class TpuWorker(Worker):
    def init_device(self) -> None:
        if self.device_config.device_type != "tpu":
            raise RuntimeError(f"TpuWorker needs device type 'tpu', got {self.device_config.device}")
        # one process per chip: every worker process sees the host's chips as tpu:0..N-1 (TORCHTPU_NUM_DEVICES or
        # TORCHTPU_TOPOLOGY on the simulator) and binds the one of its local rank, as vLLM's CUDA workers do
        self.device = torch.device("tpu", device_index(self.local_rank, self.parallel_config))
        torch.tpu.set_device(self.device)
        from torchtpu.vllm.platform import TpuPlatform

        TpuPlatform.check_if_supports_dtype(self.model_config.dtype)
        from torchtpu.vllm import moe

        moe.register()  # before the model is built: its MoE layers instantiate our method
        init_worker_distributed_environment(self.vllm_config, self.rank, self.distributed_init_method,
                                            self.local_rank, TpuPlatform.dist_backend)
        set_random_seed(self.model_config.seed)
        self._init_workspace_and_model_runner()

    def serving_stats(self) -> dict[str, Any]:
        """This rank's runner statistics (steps, programs, buckets), its device, the simulator's totals and the
        collectives it ran over "tpu_dist" (`torchtpu.distributed.stats()`); `LLM.collective_rpc("serving_stats")`
        gathers every rank's."""
        from vllm.distributed.parallel_state import get_tp_group

        from torchtpu import distributed as tpu_distributed
        from torchtpu.runtime import driver

        backend = torch.distributed.get_backend_config(get_tp_group().device_group)
        sim = {k: v for k, v in driver().stats().items() if isinstance(v, (int, float))}
        return {**self.model_runner.serving_stats(), "rank": self.rank, "pid": os.getpid(), "device": str(self.device),
                "backend": backend, "collectives": tpu_distributed.stats(), "sim": sim}

    def _make_model_runner(self) -> TpuModelRunner:
        return TpuModelRunner(self.vllm_config, self.device)

    def _maybe_get_memory_pool_context(self, tag: str) -> contextlib.AbstractContextManager:
        """No sleep-mode memory pool on "tpu": weights and KV cache live in the chip's allocator."""
        return contextlib.nullcontext()

    def sleep(self, level: int = 1) -> None:
        log.warning("sleep mode is not supported on tpu; ignored")

    def wake_up(self, tags: list[str] | None = None) -> None:
        log.warning("sleep mode is not supported on tpu; ignored")

    def determine_available_memory(self) -> int:
        """Bytes for the KV cache: the chip's HBM x gpu_memory_utilization minus the weights and the peak of a
        profiling forward pass at max_num_batched_tokens; an explicit kv_cache_memory_bytes is checked to fit."""
        torch.tpu.reset_peak_memory_stats(self.device)
        with set_current_vllm_config(self.vllm_config):
            self.model_runner.profile_run()
        torch.tpu.synchronize(self.device)
        free, total = torch.tpu.mem_get_info(self.device)
        peak = torch.tpu.max_memory_allocated(self.device)
        chip = torch.tpu.get_device_name(self.device)
        explicit = self.cache_config.kv_cache_memory_bytes
        if explicit:
            if explicit > total - peak:
                raise ValueError(
                    f"HBM too small for the KV cache: kv_cache_memory_bytes={explicit} ({_gib(explicit)}) but "
                    f"{chip} has {_gib(total)} of HBM and the weights plus the profiling pass's peak take "
                    f"{_gib(peak)}, leaving {_gib(total - peak)}. Lower kv_cache_memory_bytes or max_model_len, "
                    "or use tensor parallelism.")
            log.info("torchtpu.vllm: KV cache %s (kv_cache_memory_bytes) on %s (%s HBM, %s used at peak)",
                     _gib(explicit), chip, _gib(total), _gib(peak))
            return int(explicit)
        util = self.cache_config.gpu_memory_utilization
        budget = int(total * util) - peak
        if budget <= 0:
            raise ValueError(
                f"HBM too small for the KV cache: {chip} has {_gib(total)}; gpu_memory_utilization="
                f"{util} allows {_gib(total * util)}"
                f" and the weights plus the profiling pass's peak take {_gib(peak)}. Use a larger chip "
                "(TORCHTPU_CHIP), tensor parallelism, a smaller max_num_batched_tokens or a higher utilization.")
        from torchtpu.runtime import driver

        if driver().name == "sim" and budget > SIM_KV_CAP:
            log.info("torchtpu.vllm: simulated HBM allows a %s KV cache; capped at %s of host memory "
                     "(TORCHTPU_VLLM_SIM_KV_BYTES)", _gib(budget), _gib(SIM_KV_CAP))
            budget = SIM_KV_CAP
        log.info("torchtpu.vllm: KV cache %s on %s (%s HBM, %s weights+activations peak)", _gib(budget), chip,
                 _gib(total), _gib(peak))
        return budget

    def compile_or_warm_up_model(self) -> CompilationTimes:
        runner: TpuModelRunner = self.model_runner  # type: ignore[assignment]
        extra: dict[str, Any] = self.vllm_config.additional_config or {}
        start, programs = time.perf_counter(), compiled_programs()
        if extra.get("precompile", False):
            for size in runner.token_buckets:
                runner._dummy_run(size, skip_eplb=True, remove_lora=False)
            torch.tpu.synchronize(self.device)
            log.info("torchtpu.vllm: precompiled %d token buckets %s in %.1f s: %d programs", len(runner.token_buckets),
                     runner.token_buckets, time.perf_counter() - start, compiled_programs() - programs)
        elif compiler.bucket_compiles:
            log.info("torchtpu.vllm: model compiled at start-up per token bucket %s: %d piece programs (vLLM's "
                     "pieces between attention layers x buckets), %d programs compiled since start-up",
                     runner.token_buckets, compiler.bucket_compiles, compiled_programs() - runner._programs_at_start)
        else:
            log.info("torchtpu.vllm: token buckets %s (compiled on first use; additional_config precompile=true "
                     "compiles them at start-up)", runner.token_buckets)
        set_random_seed(self.model_config.seed)
        return CompilationTimes(language_model=time.perf_counter() - start, encoder=0.0)
