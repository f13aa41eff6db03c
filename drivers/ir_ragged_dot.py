"""IR op `ragged_dot`: grouped matmul over runtime group boundaries (MoE experts; `torch._grouped_mm` with
`offs`), what it computes, its checks, its cost and its expansion.

Operands: `lhs` [M, K], `rhs`, and `ends` [G] int32, the cumulative group ends (group g covers positions
ends[g-1] <= i < ends[g], with ends[-1] = 0). Two modes, as jax.lax.ragged_dot_general names them:
- "rows" (ragged rows): `rhs` [G, K, N]; row i of the result [M, N] is lhs[i] @ rhs[g] for its group g, and rows
  past the last end are zero.
- "contract" (ragged contraction): `rhs` [K, N]; result [G, M, N], slice g the product over group g's K
  positions only (zero for an empty group).

The group sizes are runtime data (the router's choice), so the cost rule charges the kernel's work with the rows
(or contraction) split evenly over the groups: every row streams through the MXU once against its own group's
weights, every group's weights are loaded once, and each group's last partial tile is padded as the MXU schedule
pads it (a grouped kernel visits tiles_m + groups - 1 row tiles at most: perfmodel/kernels.py `gmm_visit_factor`,
whose tiling the pod model uses). Where uneven groups put more boundaries inside tiles the padding differs; the
FLOPs and bytes do not.

`expand` writes the same result over primitive IR ops (each group's product over every row, masked): what the
pjrt driver emits (a real chip's grouped kernel, megablox's, would replace it). The sim's value rule,
drivers/sim/kernels_ragged_dot.py, computes each group's rows only, as that kernel does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torchtpu.drivers.ir_ragged_attention import _const, _one  # the expansions' emit helpers, written once

if TYPE_CHECKING:
    from torchtpu.drivers.ir import Builder, Op, TensorType, Value
    from torchtpu.sim.cost import CostModel, CostRecord

NAME = "ragged_dot"
MODES = ("rows", "contract")
DTYPES = ("float32", "bfloat16", "float16")


def result_shape(lhs: TensorType, rhs: TensorType, ends: TensorType, mode: str) -> tuple[int, ...]:
    """The result's shape; raises naming what is wrong with the operands or the mode and what is valid."""
    if mode not in MODES:
        raise ValueError(f"{NAME}: mode {mode!r}; valid: {MODES}")
    if lhs.dtype not in DTYPES or rhs.dtype != lhs.dtype:
        raise TypeError(f"{NAME}: lhs and rhs must share one dtype of {DTYPES}, got {lhs.dtype} and {rhs.dtype}")
    if len(ends.shape) != 1 or ends.dtype != "int32":
        raise TypeError(f"{NAME}: ends must be a 1-D int32 tensor of cumulative group ends, got {ends}")
    groups = ends.shape[0]
    if mode == "rows":
        if len(lhs.shape) != 2 or len(rhs.shape) != 3 or rhs.shape[0] != groups or rhs.shape[1] != lhs.shape[1]:
            raise TypeError(f"{NAME} (rows): needs lhs [M, K], rhs [G, K, N] and ends [G]; got {lhs}, {rhs}, {ends}")
        return (lhs.shape[0], rhs.shape[2])
    if len(lhs.shape) != 2 or len(rhs.shape) != 2 or rhs.shape[0] != lhs.shape[1]:
        raise TypeError(f"{NAME} (contract): needs lhs [M, K], rhs [K, N] and ends [G]; got {lhs}, {rhs}, {ends}")
    return (groups, lhs.shape[0], rhs.shape[1])


def cost(model: CostModel, op: Op) -> CostRecord:
    """The grouped kernel's MXU work and HBM traffic, with the groups' sizes taken as even (module docstring)."""
    lhs, rhs, ends = (v.type for v in op.inputs)
    out = op.outputs[0].type
    groups = max(ends.shape[0], 1)
    m, k = lhs.shape
    if op.attr("mode") == "rows":
        n = rhs.shape[2]
        record = model.matmul(groups, -(-m // groups), n, k, lhs.dtype, out.dtype, op.attr("precision"), op=NAME)
    else:
        n = rhs.shape[1]
        record = model.matmul(groups, m, n, -(-k // groups), lhs.dtype, out.dtype, op.attr("precision"), op=NAME)
    return model.fuse([record], sum(t.nbytes for t in (lhs, rhs, ends, out)), op=NAME)


# ------------------------------------------------------------------------------------------- the expansion

def expand(b: Builder, lhs: Value, rhs: Value, ends: Value, attrs: dict[str, Any]) -> Value:
    """The op over primitive IR ops: a group mask from `ends`, every group's product, the mask applied (to the
    products' rows in "rows" mode, to the contraction's positions in "contract" mode). Same values as the sim's
    rule: each kept element is one group's product, the others exact zeros."""
    groups = ends.shape[0]
    m, k = lhs.shape
    precision, out_dtype = attrs["precision"], attrs["out_dtype"]
    if attrs["mode"] == "rows":
        n = rhs.shape[2]
        wide = _one(b, "broadcast_in_dim", lhs, shape=(groups, m, k), broadcast_dimensions=(1, 2))
        products = _dot(b, wide, rhs, precision)  # [G, M, N] float32
        mask = _one(b, "broadcast_in_dim", _group_mask(b, ends, m), shape=(groups, m, n),
                    broadcast_dimensions=(0, 1))
        kept = _one(b, "select", mask, products, _const(b, 0.0, (groups, m, n), "float32"))
        result = _one(b, "reduce", kept, kind="sum", dimensions=(0,))
    else:
        n = rhs.shape[1]
        mask = _one(b, "broadcast_in_dim", _group_mask(b, ends, k), shape=(groups, m, k),
                    broadcast_dimensions=(0, 2))
        wide = _one(b, "broadcast_in_dim", lhs, shape=(groups, m, k), broadcast_dimensions=(1, 2))
        wide = _one(b, "select", mask, wide, _const(b, 0.0, (groups, m, k), lhs.dtype))
        right = _one(b, "broadcast_in_dim", rhs, shape=(groups, k, n), broadcast_dimensions=(1, 2))
        result = _dot(b, wide, right, precision)
    return result if out_dtype == "float32" else _one(b, "convert", result, dtype=out_dtype)


def _group_mask(b: Builder, ends: Value, length: int) -> Value:
    """[G, length] bool: position i is in group g when ends[g-1] <= i < ends[g] (ends[-1] = 0)."""
    groups = ends.shape[0]
    stop = _one(b, "reshape", _one(b, "convert", ends, dtype="int64"), shape=(groups, 1))
    start = _one(b, "concatenate", _const(b, 0, (1, 1), "int64"),
                 _one(b, "slice", stop, start=(0, 0), limit=(groups - 1, 1), strides=(1, 1)), dimension=0)
    position = _one(b, "iota", shape=(groups, length), dtype="int64", dimension=1)
    wide = {"shape": (groups, length), "broadcast_dimensions": (0, 1)}
    after_start = _one(b, "compare", position, _one(b, "broadcast_in_dim", start, **wide), direction="GE")
    before_stop = _one(b, "compare", position, _one(b, "broadcast_in_dim", stop, **wide), direction="LT")
    return _one(b, "and", after_start, before_stop)


def _dot(b: Builder, lhs: Value, rhs: Value, precision: str) -> Value:
    return _one(b, "dot_general", lhs, rhs, lhs_batch=(0,), rhs_batch=(0,), lhs_contract=(2,), rhs_contract=(1,),
                precision=precision, out_dtype="float32")
