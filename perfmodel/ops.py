"""Analytic cost of single TPU operations: matmul, attention (flash-style and naive), elementwise.

Each function returns an `OpCost`: FLOPs, HBM bytes and the three unit times (MXU, VPU, HBM); the op's time is
its roofline time, max(MXU + VPU, HBM) [SB-roof] (MXU and VPU work of one kernel are counted in series; HBM
traffic is streamed by DMA concurrently). Calibration (achievable fraction of roofline) is applied by the
callers that compose ops into a step, never here.

* matmul: K and N are padded to the MXU width (128, 256 on v6e/v7x), M to the 8-row sublane tile [SB-tpus];
  float32 inputs cost 1/3/6 bf16 passes for DEFAULT/HIGH/HIGHEST [JAX-lax], [XLA-proto] plus the VPU work
  of splitting each input into bf16 components (tpu-facts section 5).
* attention (flash): blocked QK^T and PV matmuls whose MXU time comes from the simulator's cost model
  (`perfmodel.simcost`, so head_dim padding and tile fill/drain come from the same rules as the simulator),
  causal block skipping, and the online-softmax VPU work per score element.
* elementwise: HBM-bound streaming of inputs and outputs, or VPU-bound for many ops per element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torchtpu.perfmodel.calibration import DEFAULT, Calibration
from torchtpu.sim.chips import ChipSpec, get_chip

__all__ = [
    "PRECISION_PASSES",
    "OpCost",
    "attention_cost",
    "elementwise_cost",
    "matmul_cost",
    "precision_passes",
]

# MXU passes per precision for float32 operands: XLA ALG_DOT_BF16_BF16_F32, _X3, _X6 [XLA-proto], [JAX-lax].
PRECISION_PASSES = {"DEFAULT": 1, "HIGH": 3, "HIGHEST": 6}
# VPU ops per f32 element to split it into bf16 components (truncate, subtract, round; tpu-facts section 5).
_SPLIT_OPS_BY_PASSES = {1: 0, 3: 3, 6: 6}


def precision_passes(precision: str | int, in_bytes: int = 4) -> int:
    """bf16 MXU passes for a precision name (or an explicit pass count); bf16 operands always take 1."""
    if isinstance(precision, int):
        return precision
    key = str(precision).upper().split(".")[-1]
    if key not in PRECISION_PASSES:
        raise ValueError(f"unknown precision {precision!r}; valid: {', '.join(PRECISION_PASSES)}")
    return PRECISION_PASSES[key] if in_bytes >= 4 else 1


@dataclass(frozen=True)
class OpCost:
    """Cost of one op (or a batch of identical ops) on one chip, before calibration."""

    name: str
    kind: str
    flops: float
    hbm_bytes: float
    mxu_seconds: float = 0.0
    vpu_seconds: float = 0.0
    hbm_seconds: float = 0.0
    # True when the compute time is a published measurement of the kernel (`perfmodel.kernels`): it already is
    # what the kernel achieves, so the calibration's roofline efficiency does not apply to it again.
    measured: bool = False

    @property
    def compute_seconds(self) -> float:
        return self.mxu_seconds + self.vpu_seconds

    @property
    def seconds(self) -> float:
        """Roofline time: compute units in series, HBM streaming concurrently."""
        return max(self.compute_seconds, self.hbm_seconds)

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP per HBM byte."""
        return self.flops / self.hbm_bytes if self.hbm_bytes else math.inf

    @property
    def bound(self) -> str:
        """'compute' or 'memory', whichever sets `seconds`."""
        return "compute" if self.compute_seconds >= self.hbm_seconds else "memory"

    def scaled(self, factor: float, name: str | None = None) -> OpCost:
        """The same op `factor` times (e.g. per layer -> per model)."""
        return OpCost(
            name or self.name, self.kind, self.flops * factor, self.hbm_bytes * factor,
            self.mxu_seconds * factor, self.vpu_seconds * factor, self.hbm_seconds * factor, self.measured,
        )

    def calibrated_seconds(self, calibration: Calibration) -> float:
        """Time in a step: roofline time / `calibration.efficiency`, or the measured time as it is."""
        return self.seconds if self.measured else self.seconds / calibration.efficiency


def _pad(x: float, to: int) -> float:
    return math.ceil(x / to) * to if x > 0 else 0.0


def matmul_cost(
    chip: ChipSpec | str,
    m: float,
    n: float,
    k: float,
    batch: float = 1,
    *,
    in_bytes: int = 2,
    weight_bytes: int | None = None,
    out_bytes: int = 2,
    precision: str | int = "DEFAULT",
    dtype: str = "bfloat16",
    name: str = "matmul",
    weights_resident: bool = False,
) -> OpCost:
    """[batch] x [m, k] @ [k, n] on one chip: MXU time with padding and precision passes, HBM traffic.

    `weights_resident=True` leaves the [k, n] operand out of HBM traffic (it is already in VMEM, e.g. inside a
    fused kernel). `dtype` selects the peak ('int8' uses the int8 rate).
    """
    chip = get_chip(chip)
    w_bytes = in_bytes if weight_bytes is None else weight_bytes
    passes = precision_passes(precision, max(in_bytes, w_bytes))
    mxu = chip.mxu_cols
    flops = 2.0 * batch * m * n * k
    padded = 2.0 * batch * _pad(m, 8) * _pad(k, mxu) * _pad(n, mxu)
    mxu_s = padded * passes / chip.peak_flops(dtype)
    vpu_s = 0.0
    if passes > 1:  # split both f32 operands into bf16 components on the VPU
        vpu_s = batch * (m * k + k * n) * _SPLIT_OPS_BY_PASSES.get(passes, passes) / chip.vpu_flops
    hbm = batch * (m * k * in_bytes + (0 if weights_resident else k * n * w_bytes) + m * n * out_bytes)
    return OpCost(name, "matmul", flops, hbm, mxu_s, vpu_s, hbm / chip.hbm_bw)


def elementwise_cost(
    chip: ChipSpec | str,
    n_elements: float,
    *,
    n_inputs: float = 1,
    n_outputs: float = 1,
    bytes_per_element: float = 2,
    vpu_ops: float = 1,
    name: str = "elementwise",
) -> OpCost:
    """A fused elementwise op over `n_elements`: streams inputs and outputs through HBM, `vpu_ops` per element."""
    chip = get_chip(chip)
    hbm = n_elements * (n_inputs + n_outputs) * bytes_per_element
    flops = n_elements * vpu_ops
    return OpCost(name, "elementwise", flops, hbm, 0.0, flops / chip.vpu_flops, hbm / chip.hbm_bw)


def _causal_blocks(q_len: int, kv_len: int, bq: int, bk: int, window: int = 0) -> float:
    """Number of (q block, kv block) pairs a causal flash kernel computes (queries aligned to the kv end).

    With a sliding `window`, a query at position p sees keys (p - window, p]: blocks wholly before the first
    query's window are skipped too.
    """
    nq = math.ceil(q_len / bq)
    nk = math.ceil(kv_len / bk)
    offset = kv_len - q_len
    if nq > 4096:  # very long sequences: the same count in closed form per block row (exact for aligned blocks)
        return _causal_blocks_fast(q_len, kv_len, bq, bk, window)
    total = 0
    for i in range(nq):
        last_q = min((i + 1) * bq, q_len) - 1 + offset
        hi = min(nk, last_q // bk + 1)
        lo = max(0, (i * bq + offset - window + 1) // bk) if window else 0
        total += max(0, hi - lo)
    return float(total)


def _causal_blocks_fast(q_len: int, kv_len: int, bq: int, bk: int, window: int) -> float:
    import numpy as np

    nq, nk = math.ceil(q_len / bq), math.ceil(kv_len / bk)
    i = np.arange(nq, dtype=np.int64)
    offset = kv_len - q_len
    hi = np.minimum(nk, (np.minimum((i + 1) * bq, q_len) - 1 + offset) // bk + 1)
    lo = np.maximum(0, (i * bq + offset - window + 1) // bk) if window else 0
    return float(np.maximum(0, hi - lo).sum())


def attention_cost(
    chip: ChipSpec | str,
    batch: float,
    n_heads: float,
    q_len: int,
    kv_len: int,
    head_dim: int,
    *,
    n_kv_heads: float | None = None,
    causal: bool = True,
    kind: str = "flash",
    block_q: int = 512,
    block_kv: int = 512,
    backward: bool = False,
    in_bytes: int = 2,
    calibration: Calibration = DEFAULT,
    name: str | None = None,
    v_head_dim: int | None = None,
    window: int = 0,
    kv_bytes: float | None = None,
) -> OpCost:
    """Self-attention core softmax(QK^T)V for `batch` sequences and `n_heads` query heads on one chip.

    kind='flash': blocked kernel, scores stay in VMEM; causal skips fully-masked blocks (and, with a sliding
    `window`, blocks before the window). backward=True costs the flash backward (recompute S and P, then dV,
    dP, dQ, dK: five block matmuls). kind='naive': scores written to and read from HBM in float32 (the unfused
    reference). `v_head_dim` (default head_dim) is the value width (MLA: 128 against a 192-wide qk head);
    `kv_bytes` the bytes per cached key/value element (int8 KV cache: 1).
    """
    from torchtpu.perfmodel import simcost

    chip = get_chip(chip)
    kvh = n_heads if n_kv_heads is None else n_kv_heads
    bq, bk = min(block_q, q_len), min(block_kv, kv_len)
    nq, nk = math.ceil(q_len / bq), math.ceil(kv_len / bk)
    if window and not causal:
        raise ValueError("a sliding window needs causal attention")
    pairs = _causal_blocks(q_len, kv_len, bq, bk, window) if causal else float(nq * nk)
    bh = batch * n_heads
    hd = head_dim
    vd = head_dim if v_head_dim is None else v_head_dim
    kvb = in_bytes if kv_bytes is None else kv_bytes
    if kind == "naive":  # whole score matrix in one block, written to HBM in float32
        bq, bk, nq, nk, pairs = q_len, kv_len, 1, 1, 1.0
    elif kind != "flash":
        raise ValueError(f"unknown attention kind {kind!r}; valid: flash, naive")
    score_elems = bh * pairs * bq * bk
    # Short query blocks (decode) stack the query heads that share a kv head along M, so one K/V tile in the
    # MXU serves the whole group (as TPU decode kernels do); long ones tile queries per head.
    group = max(1, int(n_heads // kvh)) if kind == "flash" and q_len * n_heads / kvh <= block_q else 1
    rows = bq * group
    # (m, n, k) per block; the contraction dims: S = Q K^T over hd, O += P V over the keys (output vd)
    shapes = [(rows, bk, hd), (rows, vd, bk)]
    if backward:  # recompute S, then dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q
        shapes = [(rows, bk, hd), (bk, vd, rows), (rows, bk, vd), (rows, hd, bk), (bk, hd, rows)]
    mxu_s = sum(simcost.mxu_seconds(chip, bh / group * pairs, m, n, k) for m, n, k in shapes)
    ops = calibration.softmax_vpu_ops_bwd if backward else calibration.softmax_vpu_ops_fwd
    vpu_s = score_elems * ops / chip.vpu_flops
    # per score element: 2*hd (S) + 2*vd (PV); backward 2*(3 hd + 2 vd) (S, dQ, dK over hd; dV, dP over vd)
    flops = 2.0 * score_elems * ((3 * hd + 2 * vd) if backward else (hd + vd))
    # Q, O (and dO, dQ) once; K, V re-read once per q block row, shared by the query heads of a kv head.
    qo = bh * q_len * (hd + vd) * in_bytes * (2 if backward else 1)
    passes = 2 if backward else 1
    if window:  # block-granular: each computed (q, kv) block pair streams its kv block
        kv = batch * kvh * pairs * bk * (hd + vd) * kvb * passes
    else:
        kv = batch * kvh * kv_len * (hd + vd) * kvb * passes * max(1.0, pairs / nk)
    hbm = qo + kv
    if kind == "naive":
        hbm += score_elems * 4 * (6 if backward else 3)
    label = name or ("attention" if kind == "flash" else "attention_naive") + ("_bwd" if backward else "")
    measured = _measured_splash_seconds(chip, kind, causal, window, q_len, kv_len, hd, vd, bh, in_bytes, backward)
    if measured is not None:  # a published measurement of the kernel replaces the block model
        return OpCost(label, "attention", flops, hbm, measured, 0.0, hbm / chip.hbm_bw, measured=True)
    return OpCost(label, "attention", flops, hbm, mxu_s, vpu_s, hbm / chip.hbm_bw)


def _measured_splash_seconds(chip: ChipSpec, kind: str, causal: bool, window: int, q_len: int, kv_len: int,
                             hd: int, vd: int, bh: float, in_bytes: float, backward: bool) -> float | None:
    """Causal self-attention over a whole sequence in bf16 on a chip whose splash kernel is measured
    (`perfmodel.kernels.splash_mfu`): the table's useful FLOPs at the measured fraction of peak."""
    from torchtpu.perfmodel import kernels

    if kind != "flash" or not causal or window or q_len != kv_len or in_bytes != 2:
        return None
    mfu = kernels.splash_mfu(chip, q_len, hd, vd, backward)
    if mfu is None:
        return None
    useful = 0.5 * bh * q_len * kv_len * (2 * hd + 2 * vd) * (kernels.SPLASH_BWD_FLOPS_RATIO if backward else 1.0)
    return useful / (chip.bf16_flops * mfu)
