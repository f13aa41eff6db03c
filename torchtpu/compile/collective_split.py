"""ATen graphs that hold collectives, split around them.

DTensor's collectives reach the tpu backend as `_c10d_functional.*` nodes inside the ATen graph (an
`all_reduce` and its `wait_tensor`). A Program cannot hold them: the data moves over tpu_dist between chips.
Instead of running the whole graph op by op, the graph is cut at each collective node: every run of other
nodes becomes a piece compiled as its own graph (one Program per input signature, as any graph), and each
collective node runs eagerly on tpu_dist between the pieces, in the graph's order. Custom kernels
(torchtpu.kernels.jax_op, `OPAQUE`) are cut out the same way: one node in the graph, run on its tensors.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.fx.passes.split_module import split_module

COLLECTIVE_NAMESPACES = frozenset({"_c10d_functional", "c10d_functional", "_dtensor"})
# Other ops a Program cannot hold, cut out the same way: custom kernels (torchtpu.kernels adds each jax_op's
# OpOverloads), one node each, run eagerly on their tensors between the compiled pieces.
OPAQUE: set = set()


def unbox_call_args(call_args: tuple[Any, ...]) -> list[Any]:
    """A compiled graph's arguments as a list, under either calling convention: plain, or AOTAutograd's boxed one
    (one list the callee empties so the caller's references die early). Graph arguments are never lists."""
    if len(call_args) == 1 and isinstance(call_args[0], list):
        boxed = call_args[0]
        args = list(boxed)
        boxed.clear()
        return args
    return list(call_args)


def is_collective(node: torch.fx.Node) -> bool:
    """A node the graph is cut at: a collective, or an opaque op (OPAQUE)."""
    if node.op != "call_function":
        return False
    return getattr(node.target, "namespace", None) in COLLECTIVE_NAMESPACES or node.target in OPAQUE


def _takes_item_of_cut(node: torch.fx.Node) -> bool:
    """`out[i]` of a cut node returning a list (an opaque op's Tensor[]): kept in the cut node's piece."""
    return node.op == "call_function" and node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node) \
        and node.args[0].target in OPAQUE


def _outputs_as_tuple(gm: torch.fx.GraphModule) -> bool:
    """Makes a graph that returns one value return a 1-tuple (as every compiled graph does); whether it did."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    if isinstance(output.args[0], list | tuple):
        return False
    output.args = ((output.args[0],),)
    gm.recompile()
    return True


class _Piece(torch.nn.Module):
    """A piece between collectives: compiled on its first call (its real inputs are its example inputs)."""

    def __init__(self, gm: torch.fx.GraphModule, compile_graph: Callable[[Any, Sequence[Any]], Any]) -> None:
        super().__init__()
        self.gm, self.compile_graph, self.compiled = gm, compile_graph, None
        self.one_value = _outputs_as_tuple(gm)

    def forward(self, *args: Any) -> Any:
        if self.compiled is None:
            self.compiled = self.compile_graph(self.gm, args)
        result = self.compiled(*args)
        return result[0] if self.one_value else tuple(result)


class SplitGraph:
    """The callable torch.compile gets back for an ATen graph holding collectives: its pieces, in order."""

    eager_reason = None  # as CompiledGraph's: the graph as a whole never falls back to op by op

    def __init__(self, gm: torch.fx.GraphModule, split: torch.fx.GraphModule) -> None:
        self.gm, self.split = gm, split

    def __call__(self, *call_args: Any) -> list[Any]:
        return list(self.split(*unbox_call_args(call_args)))


def split_at_collectives(gm: torch.fx.GraphModule, compile_graph: Callable[[Any, Sequence[Any]], Any]
                         ) -> SplitGraph | None:
    """`gm` as compiled pieces with its collectives run eagerly between them; None when it holds no collective."""
    nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output", "get_attr")]
    if not any(is_collective(n) for n in nodes):
        return None
    partition: dict[torch.fx.Node, int] = {}
    current = 0
    for n in nodes:
        if is_collective(n):
            partition[n] = current + 1
            current += 2
        elif _takes_item_of_cut(n):
            partition[n] = partition[n.args[0]]
        else:
            partition[n] = current
    split = split_module(gm, None, lambda n: partition[n], keep_original_order=True)
    for name, piece in list(split.named_children()):
        if isinstance(piece, torch.fx.GraphModule) and not any(is_collective(n) for n in piece.graph.nodes):
            setattr(split, name, _Piece(piece, compile_graph))
    return SplitGraph(gm, split)
