"""Graphs holding a tensor of more dims than the driver's programs do (the simulator: numpy's 64,
`Driver.max_rank`): such a graph runs eagerly, op by op on "tpu" (counted in compile_stats()["eager_graphs"]), where
each op computes on collapsed dims or refuses naming the limit as in eager mode (torchtpu/ops/many_dims.py), instead
of a Program the driver cannot hold."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu import runtime


def past_rank(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> bool:
    """Whether an input or a node's example value of Dynamo's graph has more dims than the driver holds."""
    limit = runtime.driver().max_rank
    if limit is None:
        return False
    values = [*example_inputs, *(n.meta.get("example_value", n.meta.get("val")) for n in gm.graph.nodes)]
    for value in values:
        for v in value if isinstance(value, list | tuple) else (value,):
            if isinstance(v, torch.Tensor) and v.dim() > limit:
                return True
    return False


def guarded(compiler: Callable[..., Any]) -> Callable[..., Any]:
    """A Dynamo backend that runs a graph past the driver's rank limit eagerly, else `compiler`."""
    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        if not past_rank(gm, example_inputs):
            return compiler(gm, example_inputs)
        from torchtpu.compile import backend as compiled

        compiled.stats.eager_graphs += 1
        return gm.forward

    return backend
