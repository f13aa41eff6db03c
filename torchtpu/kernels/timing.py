"""Simulated time of a kernel without running it: owns `simulated_cost` (a jax_op at given arguments) and
`function_cost` (any JAX function at given shapes), each priced on a chip by cost.py from the jaxpr alone."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchtpu.kernels import deps
from torchtpu.kernels.cost import kernel_cost
from torchtpu.sim.cost import CostModel, CostRecord


def _model(chip: str | None) -> CostModel:
    if chip is None:
        from torchtpu.drivers import config

        chip = config.get("TORCHTPU_CHIP")
    return CostModel(chip)


def function_cost(fn: Callable[..., Any], avals: Sequence[Any], chip: str | None = None, name: str = "") -> CostRecord:
    """The CostRecord of one call of JAX function `fn` on arrays of `avals` (jax.ShapeDtypeStruct) on `chip`."""
    closed = deps.jax().make_jaxpr(fn)(*avals)
    return kernel_cost(closed, _model(chip), name or getattr(fn, "__name__", "kernel"))


def simulated_cost(op: Any, *args: Any, chip: str | None = None) -> CostRecord:
    """What `op` (a JaxOp) is charged for a call with `args` (tensors of any device, and its static values) on
    `chip` (default TORCHTPU_CHIP); nothing runs."""
    import inspect

    bound = inspect.signature(op.fn).bind(*args)
    values = [bound.arguments.get(p.name, p.default) for p in op.params]
    from torchtpu.kernels.op import _encode

    tensors = [values[i] for i in op.tensor_pos]
    if not all(isinstance(t, torch.Tensor) for t in tensors):
        raise TypeError(f"simulated_cost({op.name}): tensor arguments must be tensors")
    entry = op.entry(op._metas(tensors), _encode([values[i] for i in op.static]))
    return kernel_cost(deps.jax().make_jaxpr(entry.fn)(*entry.in_avals), _model(chip), op.name)
