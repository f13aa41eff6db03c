"""The sim driver's cost rule for each IR op: shapes and dtypes in, a `torchtpu.sim.cost.CostRecord` out.

Rules never see values. Elementwise ops are VPU work; movement ops are HBM traffic; reductions read their input
once; dot_general and convolution are MXU work priced by the systolic model with the precision's passes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from torchtpu.drivers.ir import OPS, Op
from torchtpu.drivers.ir_ops import UNARY
from torchtpu.sim.cost import CostModel, CostRecord

CostRule = Callable[[CostModel, Op], CostRecord]
COSTS: dict[str, CostRule] = {}

TRANSCENDENTAL = frozenset({
    "exponential", "exponential_minus_one", "log", "log_plus_one", "sqrt", "rsqrt", "cbrt", "tanh", "logistic",
    "sine", "cosine", "tan", "erf", "erfinv", "lgamma", "digamma", "atan", "asin", "acos", "sinh", "cosh",
    "asinh", "acosh", "atanh", "reciprocal", "exp2", "log2", "log10", "power", "atan2", "rng", "divide", "erfc",
    "special_unary", "special_binary",
})


def _bytes_in(op: Op) -> int:
    return sum(v.type.nbytes for v in op.inputs)


def _bytes_out(op: Op) -> int:
    return sum(v.type.nbytes for v in op.outputs)


def _elementwise(model: CostModel, op: Op) -> CostRecord:
    out = op.outputs[0].type
    return model.vpu(op.name, out.numel, 1.0, _bytes_in(op), _bytes_out(op), op.name in TRANSCENDENTAL)


def _movement(model: CostModel, op: Op) -> CostRecord:
    return model.data_movement(op.name, _bytes_in(op), _bytes_out(op))


def _reduction(model: CostModel, op: Op) -> CostRecord:
    n = op.inputs[0].type.numel
    per = math.log2(max(op.inputs[0].shape[op.attr("dimension", 0)] if op.inputs[0].shape else 1, 2)) \
        if op.name == "sort" else 1.0
    return model.vpu(op.name, n, per, _bytes_in(op), _bytes_out(op), False)


def _dot_general(model: CostModel, op: Op) -> CostRecord:
    lhs, rhs = op.inputs
    lb, lc = op.attr("lhs_batch"), op.attr("lhs_contract")
    rb, rc = op.attr("rhs_batch"), op.attr("rhs_contract")
    batch = math.prod(lhs.shape[d] for d in lb)
    k = math.prod(lhs.shape[d] for d in lc)
    m = math.prod(d for i, d in enumerate(lhs.shape) if i not in lb and i not in lc)
    n = math.prod(d for i, d in enumerate(rhs.shape) if i not in rb and i not in rc)
    if lhs.dtype in ("int64", "int32", "int16", "uint8", "bool"):  # no integer MXU path wider than int8
        return model.vpu("dot_general_int", batch * m * n * k, 2.0, _bytes_in(op), _bytes_out(op), False)
    return model.matmul(batch, m, n, k, lhs.dtype, op.outputs[0].dtype, op.attr("precision"))


def _convolution(model: CostModel, op: Op) -> CostRecord:
    lhs, rhs = op.inputs
    out = op.outputs[0]
    groups = op.attr("feature_group_count")
    pixels = out.shape[0] * math.prod(out.shape[2:])
    k = rhs.shape[1] * math.prod(rhs.shape[2:])
    n = rhs.shape[0] // groups
    record = model.matmul(groups, pixels, n, k, lhs.dtype, out.dtype, op.attr("precision"))
    return record


for _name, _opdef in OPS.items():
    if _opdef.kind == "elementwise":
        COSTS[_name] = _elementwise
    elif _opdef.kind == "movement":
        COSTS[_name] = _movement
    elif _opdef.kind == "reduction":
        COSTS[_name] = _reduction
COSTS["sort"] = _reduction


def _fft(model: CostModel, op: Op) -> CostRecord:
    n = max(op.inputs[0].type.numel, op.outputs[0].type.numel)
    size = math.prod(op.attr("fft_length"))
    return model.vpu(op.name, n, 5.0 * math.log2(max(size, 2)), _bytes_in(op), _bytes_out(op), False)


COSTS["fft"] = _fft

LINALG_FLOPS = {"cholesky": 1 / 3, "triangular_solve": 1.0, "lu": 2 / 3, "qr": 4 / 3, "svd": 12.0, "eigh": 9.0,
                "eig": 25.0}


def _linalg(model: CostModel, op: Op) -> CostRecord:
    """Factorizations run as blocked VPU loops: ~c * n^3 flops per matrix (Golub & Van Loan's counts)."""
    x = op.inputs[0].type
    m, n = x.shape[-2:]
    batch = x.numel // max(m * n, 1)
    work = LINALG_FLOPS[op.name] * max(m, n) * min(m, n) ** 2
    if op.name == "triangular_solve":
        work = m * m * op.inputs[1].type.numel / max(batch, 1)
    return model.vpu(op.name, batch, work, _bytes_in(op), _bytes_out(op), False)


for _name in LINALG_FLOPS:
    COSTS[_name] = _linalg
COSTS["dot_general"] = _dot_general
COSTS["convolution"] = _convolution

assert all(name in COSTS for name in UNARY)
