"""Kernel costs taken from the simulator's cost model (`torchtpu.sim.cost.CostModel`), shapes only.

The perfmodel asks the simulator for the kernels whose efficiency dense calibration data cannot pin down: the
block matmuls inside flash attention (head_dim against the MXU width, tile fill and drain) and the tiles of MoE
grouped matmuls (`perfmodel.kernels`; double-buffered weight tiles) or, with capacity buffers, per-expert
matmuls. Using the simulator's rules keeps one source of truth for MXU behaviour. Only the cost model is
imported (it never sees values); no numba value kernel is.

If `torchtpu.sim.cost` is not importable (or does not follow the contract), the perfmodel's own analytic
matmul cost (`perfmodel.ops.matmul_cost`: MXU padding and precision passes, no fill/drain) is used instead,
and `source()` says so.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from torchtpu.sim.chips import ChipSpec, get_chip

__all__ = ["matmul_seconds", "mxu_seconds", "source"]


@functools.cache
def _model(chip_name: str) -> Any | None:
    try:
        from torchtpu.sim.cost import CostModel
    except Exception:  # noqa: BLE001 - the simulator's cost model is optional for the perfmodel
        return None
    try:
        return CostModel(get_chip(chip_name))
    except Exception:  # noqa: BLE001
        return None


def source(chip: ChipSpec | str = "v5e") -> str:
    """Where kernel costs come from for this chip: 'torchtpu.sim.cost' or the analytic fallback."""
    return "torchtpu.sim.cost" if _model(get_chip(chip).name) is not None else "perfmodel.ops (fallback)"


@functools.lru_cache(maxsize=65536)
def _sim_matmul(chip_name: str, batch: int, m: int, n: int, k: int, in_dtype: str, out_dtype: str,
                precision: str, double_buffered: bool = False) -> tuple[float, float] | None:
    model = _model(chip_name)
    if model is None:
        return None
    try:
        rec = model.matmul(batch, int(m), int(n), int(k), in_dtype, out_dtype, precision,
                           double_buffered=double_buffered)
        seconds = float(rec.seconds)
        mxu = float(getattr(rec, "mxu_seconds", seconds))
        return mxu, seconds
    except Exception:  # noqa: BLE001 - contract mismatch: fall back to the analytic cost
        return None


def _fallback(chip: ChipSpec, batch: float, m: float, n: float, k: float, in_dtype: str, out_dtype: str,
              precision: str) -> tuple[float, float]:
    from torchtpu.perfmodel.ops import matmul_cost

    nbytes = {"float32": 4, "bfloat16": 2, "int8": 1}
    c = matmul_cost(chip, m, n, k, batch, in_bytes=nbytes.get(in_dtype, 2), out_bytes=nbytes.get(out_dtype, 2),
                    precision=precision, dtype=in_dtype)
    return c.compute_seconds, c.seconds


def _cost(chip: ChipSpec | str, batch: float, m: float, n: float, k: float, in_dtype: str, out_dtype: str,
          precision: str, double_buffered: bool = False) -> tuple[float, float]:
    chip = get_chip(chip)
    if batch <= 0 or m <= 0 or n <= 0 or k <= 0:
        return 0.0, 0.0
    # A large batch is asked for as one MXU-filling group (cached by shape) and scaled linearly: batched
    # kernels repeat the same tiles once every MXU is busy. Small batches are asked for exactly.
    group = chip.mxus if batch >= chip.mxus else max(1, math.ceil(batch))
    got = _sim_matmul(chip.name, group, max(1, int(round(m))), max(1, int(round(n))), max(1, int(round(k))),
                      in_dtype, out_dtype, precision, double_buffered)
    if got is None:
        return _fallback(chip, batch, m, n, k, in_dtype, out_dtype, precision)
    scale = batch / group
    return got[0] * scale, got[1] * scale


def mxu_seconds(chip: ChipSpec | str, batch: float, m: float, n: float, k: float, *, in_dtype: str = "bfloat16",
                out_dtype: str = "float32", precision: str = "DEFAULT", double_buffered: bool = False) -> float:
    """MXU-busy seconds of [batch] x [m,k]@[k,n] (operands already in VMEM: no HBM time); `double_buffered`:
    the steady state of a kernel that shifts the next weight tile in while the current one streams
    (`torchtpu.sim.systolic.mxu_schedule`)."""
    return _cost(chip, batch, m, n, k, in_dtype, out_dtype, precision, double_buffered)[0]


def matmul_seconds(chip: ChipSpec | str, batch: float, m: float, n: float, k: float, *,
                   in_dtype: str = "bfloat16", out_dtype: str = "bfloat16", precision: str = "DEFAULT") -> float:
    """Total seconds of [batch] x [m,k]@[k,n] with operands streamed from HBM."""
    return _cost(chip, batch, m, n, k, in_dtype, out_dtype, precision)[1]
