"""`TpuPlatform`: vLLM's `Platform` for the "tpu" device (PrivateUse1), what vLLM asks a device about.

Memory is the simulated (or real) HBM of `torch.tpu`, collectives go through c10d backend "tpu_dist", the model is
compiled per token bucket by vLLM's piecewise compilation with our compiler (torchtpu/vllm/compiler.py) and small
`torch.compile` helpers use Dynamo backend "tpu"; the worker, model runner and attention backend are ours
(torchtpu/vllm/worker.py, model_runner.py, attention.py). vLLM's CPU platform cannot be reused: it asserts device
type "cpu" and its attention needs the `vllm._C` kernels.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

import torch
from vllm.platforms.interface import Platform, PlatformEnum

if TYPE_CHECKING:
    from vllm.config import VllmConfig

log = logging.getLogger("vllm.torchtpu")  # under vLLM's logger: its handler and level

# float16 has no TPU MXU/VPU path worth serving in: cast to bfloat16 as the production TPU plugin does.
SERVED_DTYPES = (torch.bfloat16, torch.float32)
ATTENTION_BACKEND = "torchtpu.vllm.attention.TpuAttentionBackend"
BLOCK_SIZE = 16  # KV-cache page size in tokens (the production plugin's ragged paged attention uses 16..128)


def check_world_size(parallel_config: Any) -> None:
    """One process per chip: the ranks on this host (world_size / nnodes) must each have a tpu device."""
    count = torch.tpu.device_count()
    per_host = parallel_config.world_size // max(1, parallel_config.nnodes)
    if per_host > count:
        raise ValueError(
            f"tensor_parallel_size={parallel_config.tensor_parallel_size} x pipeline_parallel_size="
            f"{parallel_config.pipeline_parallel_size} needs {per_host} tpu devices on this host (one process per "
            f"chip) but torch.tpu.device_count() is {count}; valid: a world size of at most {count}, or more "
            f"simulated chips (TORCHTPU_NUM_DEVICES={per_host}, or a TORCHTPU_TOPOLOGY with {per_host} chips per "
            "host)")


class TpuPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name: str = "tpu"
    device_type: str = "tpu"
    dispatch_key: str = "PrivateUse1"
    ray_device_key: str = "TPU"
    dist_backend: str = "tpu_dist"
    simple_compile_backend: str = "tpu"
    device_control_env_var: str = "TPU_VISIBLE_CHIPS"

    @property
    def supported_dtypes(self) -> list[torch.dtype]:
        return list(SERVED_DTYPES)

    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        return torch.tpu.get_device_name(device_id)

    @classmethod
    def get_device_uuid(cls, device_id: int = 0) -> str:
        return f"tpu-{device_id}"

    @classmethod
    def get_device_total_memory(cls, device_id: int = 0) -> int:
        return torch.tpu.mem_get_info(device_id)[1]

    @classmethod
    def get_current_memory_usage(cls, device: Any = None) -> float:
        return float(torch.tpu.memory_allocated(device))

    @classmethod
    def set_device(cls, device: torch.device) -> None:
        torch.tpu.set_device(device)

    @classmethod
    def manual_seed_all(cls, seed: int) -> None:
        torch.tpu.manual_seed_all(seed)

    @classmethod
    def inference_mode(cls):  # noqa: ANN206 - vLLM's signature
        return torch.no_grad()

    @classmethod
    def is_pin_memory_available(cls) -> bool:
        return False

    @classmethod
    def check_if_supports_dtype(cls, dtype: torch.dtype) -> None:
        if dtype not in SERVED_DTYPES:
            raise ValueError(f"torchtpu.vllm serves models in {', '.join(map(str, SERVED_DTYPES))}; the model's "
                             f"dtype is {dtype} (float16 checkpoints are cast to bfloat16; pass --dtype to choose)")

    @classmethod
    def get_attn_backend_cls(cls, selected_backend: Any, attn_selector_config: Any, num_heads: int | None = None
                             ) -> str:
        from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend

        from torchtpu.vllm.attention import check_supported

        check_supported(attn_selector_config)
        register_backend(AttentionBackendEnum.CUSTOM, ATTENTION_BACKEND)
        return ATTENTION_BACKEND

    @classmethod
    def get_compile_backend(cls) -> str:
        """The compiler vLLM's piecewise compilation uses for each piece (one program per token bucket)."""
        return "torchtpu.vllm.compiler.TpuCompiler"

    @classmethod
    def get_punica_wrapper(cls) -> str:
        raise NotImplementedError("LoRA is not supported by torchtpu.vllm")

    @classmethod
    def import_kernels(cls) -> None:
        """vLLM's compiled kernels (`vllm._C`) are CUDA/CPU code: nothing to import for "tpu"."""

    @classmethod
    def register_triton_kernel_overrides(cls) -> None:
        from torchtpu.vllm import kernels

        kernels.register()

    @classmethod
    def use_all_gather(cls) -> bool:
        return True

    @classmethod
    def support_static_graph_mode(cls) -> bool:
        return False

    @classmethod
    def opaque_attention_op(cls) -> bool:
        return True

    @classmethod
    def supports_structured_output(cls) -> bool:
        return False

    @classmethod
    def check_and_update_config(cls, vllm_config: VllmConfig) -> None:
        from vllm.config import CompilationMode, CUDAGraphMode

        from torchtpu.vllm import buckets

        model_config = vllm_config.model_config
        if model_config is not None and model_config.dtype == torch.float16:
            log.warning("torchtpu.vllm: float16 model cast to bfloat16 (no float16 serving path on TPU)")
            model_config.dtype = torch.bfloat16
        if model_config is not None:
            cls.check_if_supports_dtype(model_config.dtype)
        cache_config = vllm_config.cache_config
        if not cache_config.user_specified_block_size:
            cache_config.block_size = BLOCK_SIZE
        parallel_config = vllm_config.parallel_config
        check_world_size(parallel_config)
        if parallel_config.worker_cls == "auto":
            parallel_config.worker_cls = "torchtpu.vllm.worker.TpuWorker"
        parallel_config.disable_custom_all_reduce = True
        if parallel_config.enable_dbo:
            parallel_config.enable_dbo = False
        vllm_config.scheduler_config.async_scheduling = False
        compilation = vllm_config.compilation_config
        # The model is compiled per token bucket (torchtpu/vllm/compiler.py): vLLM's piecewise compilation splits
        # it at the attention ops and our compiler makes one program per piece and bucket; --enforce-eager (mode
        # NONE) runs every op eagerly instead, each op's program cached per shape (docs/serving.md, "Compilation").
        if model_config is not None and model_config.enforce_eager:
            compilation.mode = CompilationMode.NONE
        elif compilation.mode not in (CompilationMode.NONE, CompilationMode.VLLM_COMPILE):
            raise ValueError(f"torchtpu.vllm: compilation mode {compilation.mode.name} is not supported; valid: "
                             "VLLM_COMPILE (the default: the model compiled per token bucket) or NONE (eager)")
        compilation.backend = "tpu"
        for f in dataclasses.fields(compilation.pass_config):  # vLLM's fusions target its CUDA/ROCm kernels
            if f.name.startswith(("fuse_", "enable_")):
                setattr(compilation.pass_config, f.name, False)
        compilation.cudagraph_mode = CUDAGraphMode.NONE
        compilation.cudagraph_capture_sizes = []
        vllm_config.profiler_config.torch_profiler_dump_cuda_time_total = False
        if vllm_config.speculative_config is not None:
            raise ValueError("speculative decoding is not supported by torchtpu.vllm")
        if vllm_config.lora_config is not None:
            raise ValueError("LoRA is not supported by torchtpu.vllm")
        sizes = buckets.configure(vllm_config)
        if compilation.mode == CompilationMode.VLLM_COMPILE:
            compilation.compile_sizes = list(sizes)
