"""lu_unpack's pivots as CPU's unpack_pivots kernel reads them (its lowering: ops/linalg.py)."""

from __future__ import annotations

import torch

from torchtpu.ops import prims as P
from torchtpu.ops.tracing import Sym


def checked(lu: Sym, pivots: Sym) -> Sym:
    """lu_unpack's pivots as CPU's unpack_pivots kernel reads them: the first min(m, n) of each of LU's batch
    entries (pivots with other batch dims, or fewer per entry, CPU reads past their end or across batches
    unchecked: refused), each in 1..m, which the kernel checks (asserted where the program runs; fuzz seed 62: tpu
    computed pivots of 0 and failed in a reshape for others)."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    if pivots.ndim == 0 or tuple(pivots.shape[:-1]) != tuple(lu.shape[:-2]) or pivots.shape[-1] < k:
        raise RuntimeError(f"lu_unpack: LU_pivots of shape {list(pivots.shape)} with LU_data of shape "
                           f"{list(lu.shape)} is not supported on tpu: expected pivots of shape "
                           f"{list((*lu.shape[:-2], k))} (LU_data's batch dims and min(m, n), as "
                           "torch.linalg.lu_factor returns them)")
    pivots = P.slice_dim(pivots, pivots.ndim - 1, 0, k)
    if pivots.numel():
        flat = P.reshape(P.convert(pivots, torch.int64) - 1, (pivots.numel(),))
        P.check_index(flat, m, "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you "
                      "properly pass the result of lu_factor?", error="RuntimeError")
    return pivots
