"""Graphs whose out= call resizes a graph input run eagerly on tpu.

Dynamo graph-breaks an out= call that resizes its `out=` tensor (AOTAutograd's functionalization does not carry
a graph input's new shape back: the epilogue copies the result into the old-shaped input), but it only looks
at a kwarg named `out`. A multi-output out= overload names its outputs otherwise (aminmax.out's `min` / `max`,
var_mean.correction_out's `out0` / `out1`), so such a call reached the graph and the compiled out tensors kept
their old shapes (fuzz seed 3: aminmax.out's `min` stayed [0] where CPU resizes it to []). Such a graph is run
as Dynamo captured it, op by op in eager mode, where each out= kernel resizes as CPU does."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch


def _resized_input(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> str | None:
    """The first out= call that writes a graph input of another shape than its result's, named; None if none."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    shapes = {n: tuple(x.shape) for n, x in zip(placeholders, example_inputs) if isinstance(x, torch.Tensor)}
    for node in gm.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        arguments = node.target._schema.arguments
        outs = [(i, a.name) for i, a in enumerate(arguments) if a.is_out]
        if not outs:
            continue
        value = node.meta.get("example_value")
        results = list(value) if isinstance(value, tuple | list) else [value]
        for k, (i, name) in enumerate(outs):
            target = node.kwargs.get(name, node.args[i] if i < len(node.args) else None)
            result = results[k] if k < len(results) else None
            if target in shapes and isinstance(result, torch.Tensor) and tuple(result.shape) != shapes[target]:
                return f"{node.target}: out tensor {name} resized from {list(shapes[target])} to " \
                       f"{list(result.shape)}"
    return None


def eager_if_out_resized(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]
                         ) -> Callable[..., Any] | None:
    """`gm` itself (run eagerly, counted in compile_stats()["eager_graphs"]) where an out= call resizes a graph
    input; None where the graph can be compiled."""
    if _resized_input(gm, example_inputs) is None:
        return None
    from torchtpu.compile import backend

    backend.stats.eager_graphs += 1
    return gm.forward


def guarded(compiler: Callable[..., Any]) -> Callable[..., Any]:
    """A Dynamo backend that runs a graph eagerly where an out= call resizes a graph input, else `compiler`."""
    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        return eager_if_out_resized(gm, example_inputs) or compiler(gm, example_inputs)

    return backend
