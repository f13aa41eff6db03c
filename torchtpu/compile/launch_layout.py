"""The per-program part of a compiled graph's launch (compile/backend.py), computed on its first launch.

A compiled AdamW step is one launch of ~140 inputs (parameters, gradients, both moments, one step count per
parameter) and ~110 outputs: what each launch would otherwise work out per input (which inputs are 0-d host
scalars, each output's torch shape and dtype) is fixed per program, and the step counts' device outputs are
pooled (see `LaunchLayout`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from torchtpu.drivers.ir import Program
from torchtpu.execution.out_layout import allocate, contiguous_strides, dense
from torchtpu.ops.copy import ScalarGather, copy_to_host_many
from torchtpu.ops.tracing import IR_TO_TORCH


class _Pool(dict):
    """One launch's set of pooled device outputs (in-place output index -> device tensor) and their copy-back's
    gather."""

    __slots__ = ("gather",)

    def __init__(self) -> None:
        super().__init__()
        self.gather: ScalarGather | None = None


class LaunchLayout:
    """The per-program part of a compiled graph's launch, computed once: the torch shapes and dtypes of its fresh
    outputs and of its in-place outputs, which tensor inputs go to the device (the rest, 0-d host scalars, are
    scalar inputs, with their IR dtypes), and a pool of device outputs for mutated 0-d host scalars (Adam's step
    counts: one per parameter), which are copied back right after each launch and never escape, so one set per
    concurrent launch serves every launch (stable buffers keep the runtime's view and the sim's decisions
    cached; tests/test_compile_launch_fast.py), and their copy-back is one gather (`copy_back`)."""

    __slots__ = ("fresh", "strides", "mutated", "on_device", "host", "views", "_free")

    def __init__(self, program: Program, mutated: Sequence[int], host_scalars: Sequence[int], n_tensors: int,
                 n_extra: int, strides: dict[int, tuple] | None = None, graph_views: frozenset[int] = frozenset()
                 ) -> None:
        n_fresh = len(program.outputs) - len(mutated)
        self.fresh = [(tuple(v.shape), IR_TO_TORCH[v.dtype]) for v in program.outputs[:n_fresh]]
        # the fresh outputs' strides where the graph's fake outputs are not contiguous (graph_strides); None: all are
        found = [None if (fs := (strides or {}).get(k)) is None or fs[0] != shape else fs[1]
                 for k, (shape, _) in enumerate(self.fresh)]
        self.strides = tuple(found) if any(s is not None for s in found) else None
        self.mutated = [(tuple(v.shape), IR_TO_TORCH[v.dtype]) for v in program.outputs[n_fresh:]]
        host = set(host_scalars)
        self.on_device = [i for i in range(n_tensors) if i not in host]
        first = len(program.inputs) - len(host_scalars) - n_extra  # then the host scalars, then `extra`
        self.host = [(i, v.dtype) for i, v in zip(host_scalars, program.inputs[first:])]
        self._free: dict[torch.device, list[_Pool]] = {}
        # (fresh output index, tensor input index, permutations): outputs returned as views of inputs, where the
        # graph says the output is a view of an input (`graph_views`): the IR has no clone, so a program output
        # that is a transpose of an input may be the graph's `w.t().clone()`, a tensor of its own
        self.views = [] if mutated else [(k, self.on_device[p], perms) for k, p, perms in
                                         input_transposes(program, n_fresh, len(self.on_device)) if k in graph_views]

    def allocate(self, tensors: Sequence[torch.Tensor], dev: torch.device) -> list[torch.Tensor]:
        """The fresh outputs of a launch with `tensors` (the graph's tensor arguments): new tensors laid out as
        the graph's fake outputs, except each output that is a transpose of an input on `dev` (`views`) where
        that view has the same layout: the view itself (module docstring)."""
        outputs = allocate(self.fresh, self.strides, dev)
        for k, i, perms in self.views:
            view = tensors[i]
            if view.device != dev:
                continue
            for perm in perms:
                view = view.permute(perm)
            out = outputs[k]
            if view.shape == out.shape and view.stride() == out.stride() and view.dtype == out.dtype:
                outputs[k] = view
        return outputs

    def host_outputs(self, dev: torch.device, mutated: list[torch.Tensor], outputs: list[Any]) -> _Pool:
        """Appends the in-place outputs to `outputs`: a tpu input itself, a 0-d host one's pooled device tensor,
        any other host tensor's fresh device tensor; returns the pooled set taken (for `give_back`)."""
        free = self._free.get(dev)
        pooled = free.pop() if free else _Pool()  # list.pop is atomic: concurrent launches take different sets
        for k, (t, (shape, dtype)) in enumerate(zip(mutated, self.mutated)):
            if t.device.type == "tpu":
                outputs.append(t)
            elif shape:
                outputs.append(torch.empty(shape, dtype=dtype, device=dev))
            else:
                out = pooled.get(k)
                if out is None:
                    out = pooled[k] = torch.empty(shape, dtype=dtype, device=dev)
                outputs.append(out)
        return pooled

    def copy_back(self, pool: _Pool | None, back: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Copies the launch's in-place outputs (`back`: device output, host input) into the host inputs, after
        the launch: CPU ones without autograd in one `copy_to_host_many` (with the pool's gather where every
        source is pooled), others by `copy_`."""
        if not all(t.device.type == "cpu" and not t.requires_grad for _, t in back):
            for out, t in back:
                t.copy_(out)
            return
        gather = None
        if pool is not None and len(back) == len(pool):  # every source pooled: the same tensors each launch
            gather = pool.gather
            if gather is None:
                gather = pool.gather = ScalarGather.of([out for out, _ in back])
        copy_to_host_many(back, gather)

    def give_back(self, dev: torch.device, pool: _Pool) -> None:
        self._free.setdefault(dev, []).append(pool)


def graph_strides(gm: torch.fx.GraphModule, output_map: Sequence[tuple[str, int]]) -> dict[int, tuple]:
    """Fresh output index -> (shape, strides) of the graph's fake output (ATen's meta layout: what the compiled
    caller expects, as eager's out_layout.py gives) where it is a dense non-contiguous layout of static sizes."""
    output = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    values = output.args[0] if output is not None and output.args else ()
    if not isinstance(values, list | tuple) or len(values) != len(output_map):
        return {}
    found: dict[int, tuple] = {}
    for (kind, index), node in zip(output_map, values):
        val = node.meta.get("val") if kind == "value" and isinstance(node, torch.fx.Node) else None
        if not isinstance(val, torch.Tensor):
            continue
        shape, strides = tuple(val.shape), tuple(val.stride())
        if not all(type(n) is int for n in (*shape, *strides)):  # symbolic sizes (a dynamic graph): contiguous
            continue
        if strides != contiguous_strides(shape) and dense(shape, strides):
            found[index] = (shape, strides)
    return found


_VIEW_TARGETS = ("aten.t.default", "aten.transpose.int", "aten.permute.default")


def graph_layout(gm: torch.fx.GraphModule, output_map: Sequence[tuple[str, int]]
                 ) -> tuple[dict[int, tuple], frozenset[int]]:
    """`graph_strides`, and the fresh output indices whose graph node is transposes of a graph input and nothing
    else (no clone between): the outputs `LaunchLayout.allocate` may return as views of that input."""
    output = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    values = output.args[0] if output is not None and output.args else ()
    views: set[int] = set()
    if isinstance(values, list | tuple) and len(values) == len(output_map):
        for (kind, index), node in zip(output_map, values):
            while isinstance(node, torch.fx.Node) and node.op == "call_function" and str(node.target) in _VIEW_TARGETS:
                node = node.args[0]
            if kind == "value" and isinstance(node, torch.fx.Node) and node.op == "placeholder":
                views.add(index)
    return graph_strides(gm, output_map), frozenset(views)


def input_transposes(program: Program, n_fresh: int, n_device: int) -> list[tuple[int, int, tuple]]:
    """(output index, input position, permutations in order) of each of the first `n_fresh` outputs of `program`
    that is one or more transposes of one of its first `n_device` inputs, and no other output."""
    producer = {v.id: op for op in program.ops for v in op.outputs}
    position = {v.id: p for p, v in enumerate(program.inputs[:n_device])}
    count: dict[int, int] = {}
    for v in program.outputs:
        count[v.id] = count.get(v.id, 0) + 1
    found: list[tuple[int, int, tuple]] = []
    for k, value in enumerate(program.outputs[:n_fresh]):
        if count[value.id] != 1:
            continue
        perms = []
        while (op := producer.get(value.id)) is not None and op.name == "transpose":
            perms.append(tuple(op.attr("permutation")))
            value = op.inputs[0]
        if perms and value.id in position and all(p != position[value.id] for _, p, _ in found):  # one per input
            found.append((k, position[value.id], tuple(reversed(perms))))
    return found
