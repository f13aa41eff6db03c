"""Re-simulation of a recorded run under a change: owns `step_time` (a window's launches replayed on a chip's
timeline, each executable re-priced, optionally with its MXU ops rewritten) and the op rewrites the advisor
predicts with (`with_precision`, `with_dim`, `with_rows`).

A replay keeps the recorded host work between launches and the launch overhead of the target chip, so
re-pricing on the run's own chip with no rewrite reproduces the recorded simulated wall time.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Sequence
from typing import Any

from torchtpu.drivers.ir import Op, Program, TensorType, Value
from torchtpu.drivers.sim.driver import SimDriver
from torchtpu.sim.chips import get_chip
from torchtpu.sim.cost import CostModel

__all__ = ["OpRewrite", "cost_model", "step_time", "with_dim", "with_precision", "with_rows"]

OpRewrite = Callable[[Op], Op]
_MXU = ("dot_general", "convolution")


def cost_model(chip: Any = None) -> CostModel:
    """The target chip's cost rules; None: the chip the sim driver runs."""
    if chip is None:
        from torchtpu import runtime

        model = getattr(runtime.driver(), "cost_model", None)
        if model is None:
            raise RuntimeError("advise/resimulate needs the sim driver (TORCHTPU_DRIVER=sim) or an explicit chip")
        return model
    return CostModel(get_chip(chip))


def _retype(value: Value, shape: Sequence[int]) -> Value:
    return Value(value.id, TensorType(tuple(int(s) for s in shape), value.type.dtype))


def with_precision(precision: str) -> OpRewrite:
    """MXU ops at `precision` (DEFAULT / HIGH / HIGHEST)."""
    def rewrite(op: Op) -> Op:
        attrs = tuple((k, precision if k == "precision" else v) for k, v in op.attrs)
        return Op(op.name, op.inputs, attrs, op.outputs)
    return rewrite


def with_dim(old: int, new: int) -> OpRewrite:
    """MXU ops with every axis of size `old` resized to `new` (a layer width changed)."""
    def rewrite(op: Op) -> Op:
        def fix(v: Value) -> Value:
            return _retype(v, [new if s == old else s for s in v.shape])
        return Op(op.name, tuple(fix(v) for v in op.inputs), op.attrs, tuple(fix(v) for v in op.outputs))
    return rewrite


def with_rows(factor: int) -> OpRewrite:
    """MXU ops with `factor` times the streamed rows (a batch `factor` times larger)."""
    def rewrite(op: Op) -> Op:
        lhs, rhs = op.inputs[0], op.inputs[1]
        out = op.outputs[0]
        if op.name == "convolution":
            axis_l, axis_o = 0, 0
        else:
            skip = set(op.attr("lhs_batch") or ()) | set(op.attr("lhs_contract") or ())
            free = [i for i in range(len(lhs.shape)) if i not in skip]
            if not free:
                return op
            axis_l = free[0]
            axis_o = len(op.attr("lhs_batch") or ())  # dot_general output: batch dims, lhs free dims, rhs free
        ls = list(lhs.shape)
        ls[axis_l] *= factor
        os_ = list(out.shape)
        os_[axis_o] *= factor
        return Op(op.name, (_retype(lhs, ls), rhs, *op.inputs[2:]), op.attrs, (_retype(out, os_), *op.outputs[1:]))
    return rewrite


def program_seconds(program: Program, model: CostModel, rewrite: OpRewrite | None = None,
                    select: Callable[[Op], bool] | None = None, other_scale: float = 1.0) -> float:
    """One launch of `program` on `model`'s chip, its MXU ops rewritten (those `select` accepts); the VPU and
    HBM times scaled by `other_scale` (a batch that grows every activation)."""
    driver = types.SimpleNamespace(cost_model=model)
    if rewrite is not None:
        ops = [rewrite(op) if op.name in _MXU and (select is None or select(op)) else op for op in program.ops]
        new = SimDriver.program_cost(driver, Program(program.inputs, ops, program.outputs, program.name))
    else:
        new = SimDriver.program_cost(driver, program)
    if other_scale == 1.0:
        return new.seconds
    old = SimDriver.program_cost(driver, program)
    return max(new.mxu_seconds, old.vpu_seconds * other_scale, old.hbm_seconds * other_scale)


def step_time(launches: Sequence[Any], chip: Any = None, rewrite: OpRewrite | None = None,
              select: Callable[[Op], bool] | None = None, launch_scale: float = 1.0,
              other_scale: float = 1.0, scale_if: Callable[[Program], bool] | None = None,
              drop: Callable[[Any], bool] | None = None) -> float:
    """Simulated wall time of `launches` (a window's, one chip) replayed on `chip`'s timeline, with each
    executable re-priced (and rewritten). `launch_scale` scales the number of launches' overheads (a mode
    that merges launches); `other_scale` the VPU and HBM times of the programs `scale_if` accepts (all);
    launches `drop` accepts are removed (their device time and launch overhead; the host work before them
    stays)."""
    model = cost_model(chip)
    overhead = float(model.chip.launch_overhead_s)
    cache: dict[int, float] = {}
    host = free = 0.0
    prev_issued: float | None = None
    recorded_overhead = float(cost_model(None).chip.launch_overhead_s) if chip is not None else overhead
    for la in launches:
        r = la.record
        program = r.source
        key = id(program)
        if key not in cache:
            scale = other_scale if program is not None and (scale_if is None or scale_if(program)) else 1.0
            cache[key] = program_seconds(program, model, rewrite, select, scale) if program is not None \
                else r.seconds
        gap = 0.0 if prev_issued is None else max(r.issued - prev_issued - recorded_overhead, 0.0)
        prev_issued = r.issued
        if drop is not None and drop(la):
            host += gap
            continue
        host += gap + overhead * launch_scale
        start = max(host, free)
        free = start + cache[key]
    return max(host, free)


def has_dim(size: int) -> Callable[[Program], bool]:
    """Whether a program reads or writes a value with an axis of `size`."""
    def test(program: Program) -> bool:
        return any(size in v.shape for v in (*program.inputs, *program.outputs))
    return test


def mxu_dims(op: Op) -> tuple[int, int, int, int]:
    """(batch, m, n, k) of an MXU op, as the cost rules read them."""
    lhs, rhs = op.inputs[0], op.inputs[1]
    if op.name == "convolution":
        out = op.outputs[0]
        groups = op.attr("feature_group_count") or 1
        return groups, out.shape[0] * math.prod(out.shape[2:]), rhs.shape[0] // groups, \
            rhs.shape[1] * math.prod(rhs.shape[2:])
    lb, lc = op.attr("lhs_batch") or (), op.attr("lhs_contract") or ()
    rb, rc = op.attr("rhs_batch") or (), op.attr("rhs_contract") or ()
    batch = math.prod(lhs.shape[d] for d in lb)
    k = math.prod(lhs.shape[d] for d in lc)
    m = math.prod(d for i, d in enumerate(lhs.shape) if i not in lb and i not in lc)
    n = math.prod(d for i, d in enumerate(rhs.shape) if i not in rb and i not in rc)
    return batch, m, n, k
