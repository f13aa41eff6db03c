"""Graph constants that FX's generated code cannot spell: a graph that runs op by op (the backend's eager
fallback) runs through that code, so such constants are rewritten into nodes first."""

from __future__ import annotations

import cmath
from typing import Any

import torch


def spell_complex_literals(gm: torch.fx.GraphModule) -> None:
    """Makes `gm`'s generated code valid for complex constants with a NaN or infinite part (a decomposition's
    `scalar_tensor((nan+nanj))`): FX writes them with repr(), which names `nanj`/`infj`, so each becomes a
    `complex(re, im)` node, which FX writes with its `nan`/`inf` globals."""
    def spell(node: torch.fx.Node, value: Any) -> Any:
        if isinstance(value, complex) and not cmath.isfinite(value):
            with gm.graph.inserting_before(node):
                return gm.graph.call_function(complex, (value.real, value.imag))
        if isinstance(value, list | tuple):
            return type(value)(spell(node, v) for v in value)
        return value

    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        args = tuple(spell(node, a) for a in node.args)
        kwargs = {k: spell(node, v) for k, v in node.kwargs.items()}
        if args != node.args or kwargs != node.kwargs:
            node.args, node.kwargs, changed = args, kwargs, True
    if changed:
        gm.recompile()
