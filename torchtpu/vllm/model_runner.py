"""`TpuModelRunner`: vLLM's V1 GPU model runner on a "tpu" device.

vLLM's GPU runner is device-generic torch code apart from CUDA streams/events and CUDA graphs; we replace the
former for construction (as vLLM's CPU and XPU runners do), run without graphs, and pad every step's token count
to a bucket (torchtpu/vllm/buckets.py) so the ops' programs are compiled once per bucket and replayed after. The
runner counts the programs compiled while it runs (torchtpu's executable cache) and logs the first step's latency.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Iterator
from typing import Any

import torch
from vllm.v1.worker.gpu_model_runner import GPUModelRunner

from torchtpu.vllm import buckets

log = logging.getLogger("vllm.torchtpu")  # under vLLM's logger: its handler and level


def compiled_programs() -> int:
    """Programs the driver has compiled in this process so far (executable-cache misses)."""
    from torchtpu.runtime import driver

    return int(driver().cache_stats.compiles)


@contextlib.contextmanager
def _no_cuda_streams() -> Iterator[None]:
    """GPUModelRunner builds CUDA events/streams for async output copies: placeholders while it is constructed
    (async scheduling is off on "tpu", so they are never used)."""

    class _Event:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.record = lambda *a, **k: None
            self.synchronize = lambda: None
            self.wait = lambda *a, **k: None

    class _Stream:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.wait_stream = lambda *a, **kw: None
            self.device = torch.device("tpu")

    saved = torch.Event, torch.cuda.Stream, torch.cuda.Event
    try:
        torch.Event, torch.cuda.Stream, torch.cuda.Event = _Event, _Stream, _Event
        yield
    finally:
        torch.Event, torch.cuda.Stream, torch.cuda.Event = saved


_TorchGenerator = torch.Generator


@contextlib.contextmanager
def _host_generators() -> Iterator[None]:
    """Per-request seeded generators are host generators: "tpu" keeps one Philox state per device and has no
    device `torch.Generator`. Seeded rows draw their noise on the host (`_random_sample`), the rest on the device."""

    def generator(device: Any = None) -> torch.Generator:
        return _TorchGenerator(device="cpu")

    torch.Generator = generator  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        torch.Generator = _TorchGenerator  # type: ignore[misc]


def _random_sample(probs: torch.Tensor, generators: dict[int, torch.Generator], use_fp64_gumbel: bool = False
                   ) -> torch.Tensor:
    """vLLM's `random_sample` (exponential-noise sampling), with seeded rows' noise drawn by their host generator."""
    from vllm.v1.sample.ops import topk_topp_sampler as ts

    q = ts.empty_exponential_noise_like(probs, use_fp64_gumbel)
    if len(generators) != probs.shape[0]:
        q.exponential_()
    for i, gen in generators.items():
        if gen.device.type == "cpu" and q.device.type != "cpu":
            q[i] = torch.empty(q.shape[1:], dtype=q.dtype).exponential_(generator=gen).to(q.device)
        else:
            q[i].exponential_(generator=gen)
    return ts.sample_with_exponential_noise(probs, q)


def _install_sampler() -> None:
    from vllm.v1.sample.ops import topk_topp_sampler as ts

    ts.random_sample = _random_sample


_MEMORY_CALLS = ("empty_cache", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
                 "memory_stats", "memory_reserved", "max_memory_reserved")


def route_accelerator_memory() -> None:
    """Points `torch.accelerator`'s memory calls at `torch.tpu`'s in this worker process.

    torch 2.13's generic versions require the device allocator to be a c10 `DeviceAllocator`, which the "tpu"
    allocator (a plain c10::Allocator with HBM accounting, torchtpu/csrc) is not: they hit an internal assert."""
    for name in _MEMORY_CALLS:
        if hasattr(torch.tpu, name):
            setattr(torch.accelerator, name, getattr(torch.tpu, name))
    torch.accelerator.get_memory_info = torch.tpu.mem_get_info
    torch.accelerator.empty_host_cache = _no_host_cache  # the generic one segfaults without a DeviceAllocator


def _no_host_cache() -> None:
    """"tpu" keeps no pinned host cache (pinned memory is off)."""


class TpuModelRunner(GPUModelRunner):
    def __init__(self, vllm_config: Any, device: torch.device) -> None:
        if device.type != "tpu":
            raise ValueError(f"TpuModelRunner runs on a 'tpu' device, got {device}")
        route_accelerator_memory()
        _install_sampler()
        with _no_cuda_streams():
            super().__init__(vllm_config, device)
        self.use_cuda_graph = False
        self.token_buckets = buckets.buckets() or buckets.make(self.max_num_tokens)
        self.steps = 0
        self.first_step_s: float | None = None
        self._programs_at_start = compiled_programs()
        self._programs_after_first = 0
        self._step_bucket = 0
        self.buckets_used: dict[int, int] = {}  # bucket -> programs compiled when its first step ended

    def _sync_device(self) -> None:
        torch.tpu.synchronize(self.device)

    def _to_list(self, sampled_token_ids: torch.Tensor) -> list[list[int]]:
        return sampled_token_ids.tolist()

    def _zero_block_ids(self, block_ids: list[int]) -> None:
        """Zeroes reused KV pages (partial writes must not see stale data), as the CPU runner does."""
        seen: set[int] = set()
        for kv in self.kv_caches:
            if isinstance(kv, torch.Tensor) and kv.data_ptr() not in seen:
                seen.add(kv.data_ptr())
                if block_ids:
                    kv[torch.tensor(block_ids, device=kv.device)] = 0

    def _update_states(self, *args: Any, **kwargs: Any) -> Any:
        with _host_generators():
            return super()._update_states(*args, **kwargs)

    def _dummy_sampler_run(self, *args: Any, **kwargs: Any) -> Any:
        with _host_generators():
            return super()._dummy_sampler_run(*args, **kwargs)

    def _determine_batch_execution_and_padding(self, num_tokens: int, *args: Any, **kwargs: Any) -> Any:
        mode, descriptor, ubatch, across_dp, stats = super()._determine_batch_execution_and_padding(
            num_tokens, *args, **kwargs)
        padded = min(buckets.pad(descriptor.num_tokens, self.token_buckets), self.max_num_tokens)
        if padded != descriptor.num_tokens:
            descriptor = dataclasses.replace(descriptor, num_tokens=padded)
        self._step_bucket = padded
        return mode, descriptor, ubatch, across_dp, stats

    def execute_model(self, scheduler_output: Any, *args: Any, **kwargs: Any) -> Any:
        first = self.first_step_s is None and scheduler_output.total_num_scheduled_tokens > 0
        t0 = time.perf_counter()
        out = super().execute_model(scheduler_output, *args, **kwargs)
        programs = compiled_programs() - self._programs_at_start
        if first:
            self.first_step_s = time.perf_counter() - t0
            self._programs_after_first = programs
            log.info("torchtpu.vllm: first request's first step (%d tokens) took %.3f s host time; %d programs "
                     "compiled", scheduler_output.total_num_scheduled_tokens, self.first_step_s, programs)
        if scheduler_output.total_num_scheduled_tokens > 0 and self._step_bucket not in self.buckets_used:
            self.buckets_used[self._step_bucket] = programs
            log.info("torchtpu.vllm: token bucket %d first used (%d tokens scheduled): %d of %d buckets used, "
                     "%d programs compiled since start-up", self._step_bucket,
                     scheduler_output.total_num_scheduled_tokens, len(self.buckets_used), len(self.token_buckets),
                     programs)
        self.steps += 1
        return out

    def serving_stats(self) -> dict[str, Any]:
        """Steps run, programs compiled since start-up and the first step's host latency; the model's piece
        programs compiled per bucket and the steps that ran a piece outside every bucket (torchtpu/vllm/compiler.py)."""
        from torchtpu.vllm import compiler

        return {"bucket_compiles": compiler.bucket_compiles, "general_range_calls": compiler.general_range_calls,
                "steps": self.steps, "programs_compiled": compiled_programs() - self._programs_at_start,
                "programs_after_first_step": self._programs_after_first, "first_step_s": self.first_step_s,
                "token_buckets": list(self.token_buckets), "buckets_used": sorted(self.buckets_used)}
