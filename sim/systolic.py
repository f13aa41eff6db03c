"""Systolic-array cycle counts: owns the SCALE-Sim v2 closed forms and the TPU MXU schedule built on them.

SCALE-Sim v2 (tpu-facts section 3, [SS2] scalesim/compute/systolic_compute_{ws,is,os}.py), array R x C:

| dataflow | Sr (rows) | Sc (cols) | T (streamed) | cycles per fold |
| ws       | K         | N         | M            | 2R + C + T - 2  |
| is       | K         | M         | N            | 2R + C + T - 2  |
| os       | M         | N         | K            | R + C + T - 2   |

folds = ceil(Sr/R) * ceil(Sc/C); a partial fold costs a full fold; no-stall runtime = folds x cycles per fold.
Pure functions of integers: no arrays of values, no chip table.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SystolicReport", "ceil_div", "mxu_schedule", "systolic_cycles", "systolic_report"]

DATAFLOWS = ("ws", "is", "os")


def ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _fold_cycles(rows: int, cols: int, t: int, dataflow: str) -> int:
    if dataflow in ("ws", "is"):
        return 2 * rows + cols + t - 2  # R weight load + (R-1) skew + T stream + (C-1) drain [SS2]
    if dataflow == "os":
        return rows + cols + t - 2  # T stream + (C-1) drain + (R-1) skew [SS2]
    raise ValueError(f"invalid dataflow {dataflow!r}; valid: {', '.join(DATAFLOWS)}")


def systolic_cycles(rows: int, cols: int, sr: int, sc: int, t: int, dataflow: str = "ws") -> int:
    """SCALE-Sim v2 no-stall compute cycles for an R x C array with operand dims (Sr, Sc, T) of `dataflow`."""
    folds = ceil_div(sr, rows) * ceil_div(sc, cols)
    return folds * _fold_cycles(rows, cols, t, dataflow)


@dataclass(frozen=True)
class SystolicReport:
    """SCALE-Sim v2 COMPUTE_REPORT fields, reproduced analytically."""

    total_cycles: int
    folds: int
    overall_util: float  # MACs / (total_cycles * R * C)
    mapping_eff: float  # mean over folds of used_rows * used_cols / (R * C)
    compute_util: float  # mean over folds of used MACs * T / (R * C * cycles_this_fold)


def systolic_report(rows: int, cols: int, sr: int, sc: int, t: int, dataflow: str = "ws") -> SystolicReport:
    """Cycles and utilisations as SCALE-Sim v2 reports them (no memory stalls).

    For WS/IS SCALE-Sim divides compute_util by (2R + C + T - 2) + C - 1 cycles per fold (a quirk of its
    code [SS2 single_layer_sim.py]); it is kept here so the golden numbers reproduce.
    """
    row_folds, col_folds = ceil_div(sr, rows), ceil_div(sc, cols)
    per_fold = _fold_cycles(rows, cols, t, dataflow)
    total = row_folds * col_folds * per_fold
    macs = sr * sc * t
    used_rows = [min(rows, sr - i * rows) for i in range(row_folds)]
    used_cols = [min(cols, sc - j * cols) for j in range(col_folds)]
    mapping = sum(r * c for r in used_rows for c in used_cols) / (row_folds * col_folds * rows * cols)
    util_cycles = per_fold + (cols - 1 if dataflow in ("ws", "is") else 0)
    compute = mapping * t / util_cycles
    return SystolicReport(total, row_folds * col_folds, macs / (total * rows * cols), mapping, compute)


@dataclass(frozen=True)
class MxuSchedule:
    """How one GEMM occupies a chip's MXUs under the weight-stationary model."""

    cycles: int  # cycles of one pass, on the busiest MXU
    folds: int  # weight tiles (batch x ceil(K/R) x ceil(N/C))
    rounds: int  # folds run one after another on the busiest MXU
    rows_streamed: int  # T per fold on that MXU
    padded_macs: int  # MACs the array performs incl. padding of K and N to the array


def mxu_schedule(batch: int, m: int, n: int, k: int, rows: int, cols: int, mxus: int,
                 double_buffered: bool = False) -> MxuSchedule:
    """Weight-stationary GEMM on `mxus` arrays of rows x cols: Sr = K, Sc = N, T = M ([SS2] WS table).

    Folds are dealt round-robin to the MXUs. When there are fewer folds than MXUs the M rows are split
    across the idle MXUs instead (as the [AYK] cycle counts suggest: +M/4 cycles per row on 4 MXUs).
    Each fold costs the SCALE-Sim WS time 2R + C + T - 2 (fill, stream, drain per fold).

    `double_buffered=True` models a kernel's steady state with the next weight tile shifted in while the
    current one streams (the TPU weight double-buffer that hides the R cycles of shifting a tile in, Jouppi et
    al., ISCA 2017, section 2; "an initial fill bubble, after which LHS/RHS streams pipeline without
    bubbles" [SB-tpus appendix B]): each fold takes max(T, R) cycles, plus one weight load (R) and one skew and
    drain (R + C - 2) per schedule. Opt-in: the default keeps the SCALE-Sim per-fold cost.
    """
    if min(batch, m, n, k) <= 0:
        return MxuSchedule(0, 0, 0, 0, 0)
    folds = batch * ceil_div(k, rows) * ceil_div(n, cols)
    if folds >= mxus:
        rounds, t = ceil_div(folds, mxus), m
    else:
        rounds, t = 1, ceil_div(m, max(1, mxus // folds))
    if double_buffered:
        cycles = rows + rounds * max(t, rows) + rows + cols - 2
    else:
        cycles = rounds * _fold_cycles(rows, cols, t, "ws")
    padded = batch * m * ceil_div(n, cols) * cols * ceil_div(k, rows) * rows
    return MxuSchedule(cycles, folds, rounds, t, padded)
