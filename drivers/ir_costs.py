"""The cost rules an IR op's record names: shapes and dtypes in, a `torchtpu.sim.cost.CostRecord` out.

Rules never see values. Element-wise ops are VPU work (`EUP` for those the transcendental unit serves);
movement ops are HBM traffic; reductions read their input once; dot_general and convolution are MXU work priced
by the systolic model with the precision's passes; factorizations are blocked VPU loops. Each IR op's record
(drivers/ir_ops.py) names one of these or its own rule; the sim driver charges them, the profiler re-prices with
them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Op
    from torchtpu.sim.cost import CostModel, CostRecord

CostRule = Callable[["CostModel", "Op"], "CostRecord"]


def _bytes_in(op: Op) -> int:
    return sum(v.type.nbytes for v in op.inputs)


def _bytes_out(op: Op) -> int:
    return sum(v.type.nbytes for v in op.outputs)


def VPU(model: CostModel, op: Op) -> CostRecord:  # noqa: N802 - a rule's name, as the records spell it
    """One VPU operation per output element."""
    return model.vpu(op.name, op.outputs[0].type.numel, 1.0, _bytes_in(op), _bytes_out(op), False)


def EUP(model: CostModel, op: Op) -> CostRecord:  # noqa: N802
    """One operation per output element on the transcendental unit (exp, log, divide, the special functions)."""
    return model.vpu(op.name, op.outputs[0].type.numel, 1.0, _bytes_in(op), _bytes_out(op), True)


def MOVEMENT(model: CostModel, op: Op) -> CostRecord:  # noqa: N802
    """HBM traffic only: every operand read once, every result written once."""
    return model.data_movement(op.name, _bytes_in(op), _bytes_out(op))


def REDUCTION(model: CostModel, op: Op) -> CostRecord:  # noqa: N802
    """One VPU operation per input element."""
    return model.vpu(op.name, op.inputs[0].type.numel, 1.0, _bytes_in(op), _bytes_out(op), False)


def SORT(model: CostModel, op: Op) -> CostRecord:  # noqa: N802
    """log2(n) VPU operations per element along the sorted axis (a bitonic network's depth, per stage)."""
    x = op.inputs[0]
    per = math.log2(max(x.shape[op.attr("dimension", 0)] if x.shape else 1, 2))
    return model.vpu(op.name, x.type.numel, per, _bytes_in(op), _bytes_out(op), False)


def DOT_GENERAL(model: CostModel, op: Op) -> CostRecord:  # noqa: N802
    lhs, rhs = op.inputs
    lb, lc = op.attr("lhs_batch"), op.attr("lhs_contract")
    rb, rc = op.attr("rhs_batch"), op.attr("rhs_contract")
    batch = math.prod(lhs.shape[d] for d in lb)
    k = math.prod(lhs.shape[d] for d in lc)
    m = math.prod(d for i, d in enumerate(lhs.shape) if i not in lb and i not in lc)
    n = math.prod(d for i, d in enumerate(rhs.shape) if i not in rb and i not in rc)
    out = op.outputs[0].dtype
    int8 = lhs.dtype in ("int8", "uint8")
    if int8 and out == "int32" or lhs.dtype.startswith("float8") or rhs.dtype.startswith("float8"):
        for d in {lhs.dtype, rhs.dtype}:  # a quantized matmul: s8 x s8 -> s32 or fp8 products on the MXU
            model.chip.check_mxu_operands(d, f"dot_general {lhs.dtype} x {rhs.dtype} -> {out}")
    elif lhs.dtype in ("int64", "int32", "int16", "uint8", "bool") or int8 and not model.chip.mxu_int8:
        # no integer MXU path wider than int8; a wrapping int8 matmul on a chip without int8 MXU runs there too
        return model.vpu("dot_general_int", batch * m * n * k, 2.0, _bytes_in(op), _bytes_out(op), False)
    return model.matmul(batch, m, n, k, lhs.dtype, op.outputs[0].dtype, op.attr("precision"))


def CONVOLUTION(model: CostModel, op: Op) -> CostRecord:  # noqa: N802
    lhs, rhs = op.inputs
    out = op.outputs[0]
    groups = op.attr("feature_group_count")
    pixels = out.shape[0] * math.prod(out.shape[2:])
    k = rhs.shape[1] * math.prod(rhs.shape[2:])
    n = rhs.shape[0] // groups
    return model.matmul(groups, pixels, n, k, lhs.dtype, out.dtype, op.attr("precision"))


def FFT(model: CostModel, op: Op) -> CostRecord:  # noqa: N802
    """5 n log2(n) flops per transform (Cooley-Tukey's count), on the VPU."""
    n = max(op.inputs[0].type.numel, op.outputs[0].type.numel)
    size = math.prod(op.attr("fft_length"))
    return model.vpu(op.name, n, 5.0 * math.log2(max(size, 2)), _bytes_in(op), _bytes_out(op), False)


def linalg(flops: float) -> CostRule:
    """Factorizations run as blocked VPU loops: ~`flops` * n^3 per matrix (Golub & Van Loan's counts)."""

    def rule(model: CostModel, op: Op) -> CostRecord:
        x = op.inputs[0].type
        m, n = x.shape[-2:]
        batch = x.numel // max(m * n, 1)
        work = flops * max(m, n) * min(m, n) ** 2
        return model.vpu(op.name, batch, work, _bytes_in(op), _bytes_out(op), False)

    rule.__name__ = f"linalg({flops:.3g})"
    return rule


def TRIANGULAR_SOLVE(model: CostModel, op: Op) -> CostRecord:  # noqa: N802
    """n^2 flops per right-hand-side column."""
    x = op.inputs[0].type
    m, n = x.shape[-2:]
    batch = x.numel // max(m * n, 1)
    work = m * m * op.inputs[1].type.numel / max(batch, 1)
    return model.vpu(op.name, batch, work, _bytes_in(op), _bytes_out(op), False)


WHILE_TRIPS = 32  # the trips a `while` is charged: a shape-only rule cannot see the data-dependent count


def WHILE(model: CostModel, op: Op) -> CostRecord:  # noqa: N802
    """The condition and body regions' ops, per element, for min(limit, WHILE_TRIPS) trips, on the EUP (the
    loops are series and continued fractions of divides and transcendentals)."""
    per_trip = len(op.attr("cond").program.ops) + len(op.attr("body").program.ops)
    trips = min(op.attr("limit"), WHILE_TRIPS)
    return model.vpu(op.name, op.outputs[0].type.numel, float(per_trip * trips), _bytes_in(op), _bytes_out(op),
                     True)


def WHILE_ARRAY(model: CostModel, op: Op) -> CostRecord:  # noqa: N802
    """The condition's and body's ops priced by their own rules as one fused trip, times `limit` trips (an upper
    bound: a shape-only rule cannot see when a Jacobi loop converges; a Householder loop runs exactly `limit`);
    the state crosses HBM once in and once out."""
    from torchtpu.drivers.ir import OPS

    ops = [*op.attr("cond").program.ops, *op.attr("body").program.ops]
    trip = model.fuse([OPS[o.name].cost(model, o) for o in ops], 0, op=op.name)
    return model.fuse([trip] * op.attr("limit"), _bytes_in(op) + _bytes_out(op), op=op.name)
