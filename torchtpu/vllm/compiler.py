"""`TpuCompiler`: the compiler vLLM's piecewise compilation (CompilationMode.VLLM_COMPILE) hands each piece of the
model to on "tpu", through `TpuPlatform.get_compile_backend`.

vLLM traces the model's forward once with Dynamo, splits the graph at the attention ops (each layer's
`ragged_paged_attention` runs eagerly between the pieces: its per-request lengths change every step) and asks
the compiler for each piece once per token bucket (`compile_sizes`, torchtpu/vllm/buckets.py) and once for the
general range. A bucket's piece goes through Dynamo backend "tpu" (AOTAutograd -> one IR Program -> one
executable), so a step runs a few fused programs instead of every op one by one, and the simulator prices fused
programs. The general range only serves shapes that are no bucket, which the runner never issues (it pads every
step to a bucket); it runs the piece eagerly on "tpu", counted in `general_range_calls`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch
from vllm.compilation.compiler_interface import CompilerInterface

log = logging.getLogger("vllm.torchtpu")

general_range_calls = 0  # steps that ran a piece outside every bucket (eagerly)
bucket_compiles = 0  # pieces compiled for a concrete bucket


class TpuCompiler(CompilerInterface):
    name = "tpu"

    def compute_hash(self, vllm_config: Any) -> str:
        return "torchtpu"

    def compile(self, graph: torch.fx.GraphModule, example_inputs: list[Any], compiler_config: dict[str, Any],
                compile_range: Any, key: str | None = None) -> tuple[Callable[..., Any] | None, Any | None]:
        global bucket_compiles
        if not compile_range.is_single_size():
            return _eager(graph), None
        from torchtpu.compile.backend import tpu_backend

        bucket_compiles += 1
        # vLLM turns AOTAutograd's cache on for Inductor; its entries hold Inductor's OutputCode, not ours
        with torch._functorch.config.patch(enable_autograd_cache=False):
            return tpu_backend(graph, example_inputs), None


def _eager(graph: torch.fx.GraphModule) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        global general_range_calls
        general_range_calls += 1
        return graph(*args)

    return run
