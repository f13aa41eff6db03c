"""Time model: owns `CostRecord` and `CostModel`. Sees only shapes, dtypes and byte counts, never values.

Equations (docs/sim.md has the derivations):
* MXU: `systolic.mxu_schedule` (weight-stationary SCALE-Sim folds over all MXUs of the chip) gives cycles per
  pass; mxu_seconds = cycles x passes x (bf16 rate / dtype rate) / clock. passes = 1/3/6 for float32 inputs at
  DEFAULT/HIGH/HIGHEST, 1 for bf16/int8/fp8 inputs [JAX-lax], [XLA-rw].
* VPU: vpu_seconds = max(elements x flops_per_element / vpu_flops, transcendentals / eup_rate), where the EUP
  takes one (8 x 128) vreg per 2 cycles per core (derived: [AYK] issue interval 2, [SB-tpus] vreg shape).
* HBM: hbm_seconds = bytes / hbm_bw; every operand is read once and every result written once (operands are
  assumed to be tiled through VMEM with full reuse).
* An op's device time is max(mxu, vpu, hbm) (units overlap [SB-roof]); `bound` names the largest term, or
  "launch" when even that is below the host launch overhead of one executable (the op is launch-bound when
  run op by op). Fused regions add unit times and charge only their external bytes to HBM.
* ICI collectives: `torchtpu.sim.ici.collective_time` ([SB-shard]: bidirectional ring over W = ici_link_bw_bidi,
  exact (N-1)/N ring factor, 1 us per hop latency floor, a no-wraparound axis at half the bandwidth).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .chips import ChipSpec, get_chip
from .ici import COLLECTIVES, Axis, collective_time, ring_hops
from .systolic import mxu_schedule, systolic_cycles, systolic_report

__all__ = ["COLLECTIVES", "CostModel", "CostRecord", "dtype_bytes", "systolic_cycles", "systolic_report"]

PASSES = {"DEFAULT": 1, "HIGH": 3, "HIGHEST": 6}  # bf16 MXU passes for float32 operands [JAX-lax]
# VPU ops per element for the bf16 splits, counted from XLA's rewriter [XLA-rw] (derived):
# DEFAULT: 1 convert; X3: bitcast-and (truncate), subtract, 2 converts = 4; X6: 2 truncates, 2 subtracts,
# 3 converts = 7.
SPLIT_OPS = {"DEFAULT": 1, "HIGH": 4, "HIGHEST": 7}
# VPU ops per output element to combine the passes [XLA-rw] (derived): X3: 2 adds + abs, compare, select = 5;
# X6: 5 adds + 3 (NaN guard) = 8.
COMBINE_OPS = {"DEFAULT": 0, "HIGH": 5, "HIGHEST": 8}
HOP_LATENCY_S = 1e-6  # T_min per ICI hop [SB-shard]
EUP_ELEMS_PER_CYCLE_PER_CORE = 8 * 128 / 2  # derived: one 8x128 vreg every 2 cycles ([AYK] EUP interval 2)

_DTYPE_BYTES = {
    "float64": 8, "f64": 8, "int64": 8, "s64": 8, "uint64": 8, "complex64": 8, "complex128": 16, "complex32": 4,
    "float32": 4, "f32": 4, "int32": 4, "s32": 4, "uint32": 4, "u32": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "f16": 2, "int16": 2, "uint16": 2,
    "int8": 1, "s8": 1, "uint8": 1, "u8": 1, "bool": 1, "pred": 1,
    "int4": 0.5, "s4": 0.5, "uint4": 0.5,
}  # IEEE / StableHLO element sizes


def dtype_bytes(dtype: object) -> float:
    """Bytes per element of a dtype given by name (or anything whose str() is a name)."""
    name = str(dtype).lower().replace("torch.", "").replace("<class 'numpy.", "").rstrip("'>")
    if name in _DTYPE_BYTES:
        return _DTYPE_BYTES[name]
    if name.startswith("float8") or name.startswith("f8"):
        return 1
    raise ValueError(f"unknown dtype {dtype!r} for the cost model")


def _is_float32(dtype: object) -> bool:
    return str(dtype).lower().replace("torch.", "") in ("float32", "f32", "float", "<class 'numpy.float32'>")


@dataclass
class CostRecord:
    """Cost of one op (or fused region) on one chip. Seconds are device time; bytes are HBM traffic."""

    op: str
    flops: float
    hbm_bytes: float
    seconds: float
    mxu_seconds: float
    vpu_seconds: float
    hbm_seconds: float
    bound: str  # "mxu" | "vpu" | "hbm" | "launch" | "ici"
    cycles: float
    transcendentals: float = 0
    padded_flops: float = 0
    ici_seconds: float = 0.0
    ici_bytes: float = 0.0
    detail: dict = field(default_factory=dict)


class CostModel:
    """Per-chip cost rules. Every method takes shapes/dtypes/byte counts and returns a CostRecord."""

    def __init__(self, chip: ChipSpec | str | None = None) -> None:
        self.chip = get_chip(chip)

    # ---------------------------------------------------------------- helpers
    def launch_seconds(self) -> float:
        """Host overhead to launch one executable (ChipSpec.launch_overhead_s, an assumption)."""
        return self.chip.launch_overhead_s

    def eup_rate(self) -> float:
        """Transcendental results per second for the chip (derived, see EUP_ELEMS_PER_CYCLE_PER_CORE)."""
        return EUP_ELEMS_PER_CYCLE_PER_CORE * self.chip.tensorcores * self.chip.clock_hz

    def _finish(self, op: str, flops: float, hbm_bytes: float, mxu_s: float, vpu_s: float, hbm_s: float,
                transcendentals: float = 0, padded_flops: float = 0, ici_s: float = 0.0,
                ici_bytes: float = 0.0, detail: dict | None = None) -> CostRecord:
        terms = {"mxu": mxu_s, "vpu": vpu_s, "hbm": hbm_s, "ici": ici_s}
        seconds = max(terms.values())
        bound = max(terms, key=terms.get)  # type: ignore[arg-type]
        if seconds < self.launch_seconds():
            bound = "launch"
        return CostRecord(op=op, flops=float(flops), hbm_bytes=float(hbm_bytes), seconds=seconds,
                          mxu_seconds=mxu_s, vpu_seconds=vpu_s, hbm_seconds=hbm_s, bound=bound,
                          cycles=seconds * self.chip.clock_hz, transcendentals=float(transcendentals),
                          padded_flops=float(padded_flops), ici_seconds=ici_s, ici_bytes=float(ici_bytes),
                          detail=detail or {})

    # ---------------------------------------------------------------- MXU ops
    def matmul(self, batch: int, m: int, n: int, k: int, in_dtype: str = "bfloat16",
               out_dtype: str = "float32", precision: str = "DEFAULT", op: str = "matmul",
               double_buffered: bool = False) -> CostRecord:
        """batch x (M, K) @ (K, N). HBM: both operands read once, the result written once.

        `double_buffered`: the MXU schedule of a kernel that shifts the next weight tile in while the current
        one streams (`systolic.mxu_schedule`); default off (every fold pays its fill and drain)."""
        prec = str(precision).upper()
        if prec not in PASSES:
            raise ValueError(f"invalid precision {precision!r}; valid: {', '.join(PASSES)}")
        c = self.chip
        f32 = _is_float32(in_dtype)
        passes = PASSES[prec] if f32 else 1
        rate = c.bf16_flops / c.peak_flops(str(in_dtype))  # int8/fp8 may stream faster than bf16
        sched = mxu_schedule(batch, m, n, k, c.mxu_rows, c.mxu_cols, c.mxus, double_buffered)
        mxu_cycles = sched.cycles * passes * rate
        mxu_s = mxu_cycles / c.clock_hz
        ib, ob = dtype_bytes(in_dtype), dtype_bytes(out_dtype)
        hbm = batch * (m * k + k * n) * ib + batch * m * n * ob
        vpu_ops = 0.0
        if f32:
            vpu_ops = batch * (m * k + k * n) * SPLIT_OPS[prec] + batch * m * n * COMBINE_OPS[prec]
        vpu_s = vpu_ops / c.vpu_flops
        detail = {"passes": passes, "folds": sched.folds, "rounds": sched.rounds,
                  "rows_streamed": sched.rows_streamed, "mxu_cycles": mxu_cycles, "vpu_ops": vpu_ops}
        return self._finish(op, 2.0 * batch * m * n * k, hbm, mxu_s, vpu_s, hbm / c.hbm_bw,
                            padded_flops=2.0 * sched.padded_macs * passes, detail=detail)

    def conv(self, n: int, c_in: int, c_out: int, out_spatial: Sequence[int], kernel_spatial: Sequence[int],
             in_spatial: Sequence[int] | None = None, groups: int = 1, in_dtype: str = "bfloat16",
             out_dtype: str = "float32", precision: str = "DEFAULT") -> CostRecord:
        """Convolution through its GEMM view: per group M = n * prod(out), K = c_in/groups * prod(kernel),
        N = c_out/groups. HBM bytes are the real input, weight and output tensors (no im2col copy)."""
        out_px = _prod(out_spatial)
        win = _prod(kernel_spatial)
        in_px = _prod(in_spatial) if in_spatial is not None else out_px
        rec = self.matmul(groups, n * out_px, c_out // groups, (c_in // groups) * win, in_dtype, out_dtype,
                          precision, op="conv")
        ib, ob = dtype_bytes(in_dtype), dtype_bytes(out_dtype)
        hbm = n * c_in * in_px * ib + c_out * (c_in // groups) * win * ib + n * c_out * out_px * ob
        return self._finish("conv", rec.flops, hbm, rec.mxu_seconds, rec.vpu_seconds, hbm / self.chip.hbm_bw,
                            padded_flops=rec.padded_flops, detail=rec.detail)

    # ---------------------------------------------------------------- VPU / memory ops
    def vpu(self, op: str, elements: int, flops_per_element: float, bytes_read: int, bytes_written: int,
            transcendental: bool = False) -> CostRecord:
        """Elementwise/reduction work on the VPU (float32 ALUs) plus its HBM traffic."""
        c = self.chip
        flops = elements * flops_per_element
        trans = float(elements) if transcendental else 0.0
        vpu_s = max(flops / c.vpu_flops, trans / self.eup_rate())
        hbm = bytes_read + bytes_written
        return self._finish(op, flops, hbm, 0.0, vpu_s, hbm / c.hbm_bw, transcendentals=trans)

    def data_movement(self, op: str, bytes_read: int, bytes_written: int) -> CostRecord:
        """Copies, transposes, gathers, pads: HBM-bound by construction."""
        hbm = bytes_read + bytes_written
        return self._finish(op, 0.0, hbm, 0.0, 0.0, hbm / self.chip.hbm_bw)

    def fuse(self, records: Sequence[CostRecord], external_bytes: int, op: str = "fusion") -> CostRecord:
        """One fused region: unit times add up per unit, only `external_bytes` reach HBM."""
        mxu_s = sum(r.mxu_seconds for r in records)
        vpu_s = sum(r.vpu_seconds for r in records)
        ici_s = sum(r.ici_seconds for r in records)
        return self._finish(op, sum(r.flops for r in records), external_bytes, mxu_s, vpu_s,
                            external_bytes / self.chip.hbm_bw,
                            transcendentals=sum(r.transcendentals for r in records),
                            padded_flops=sum(r.padded_flops for r in records), ici_s=ici_s,
                            ici_bytes=sum(r.ici_bytes for r in records),
                            detail={"ops": [r.op for r in records]})

    # ---------------------------------------------------------------- ICI
    def collective(self, kind: str, nbytes: int, axis_sizes: tuple[int, ...],
                   wraparound: bool | None = None) -> CostRecord:
        """Collective over torus axes `axis_sizes` of this chip; `nbytes` = V, the full (gathered) array.

        The time is `torchtpu.sim.ici.collective_time` ([SB-shard], exact (n-1)/n ring factor kept): one
        formula, shared with the perfmodel and tpu_dist. Each axis runs at the chip's bidirectional link
        bandwidth when it wraps and at half of it when it is a line; wraparound None asks the chip
        (ChipSpec.has_wraparound) per axis.
        """
        if kind not in COLLECTIVES:
            raise ValueError(f"invalid collective {kind!r}; valid: {', '.join(COLLECTIVES)}")
        c = self.chip
        sizes = [int(a) for a in axis_sizes if int(a) > 1]
        if not sizes:
            return self._finish(kind, 0.0, 0.0, 0.0, 0.0, 0.0, detail={"axes": ()})
        wraps = [c.has_wraparound(a) if wraparound is None else bool(wraparound) for a in sizes]
        axes = [Axis(a, w, c.ici_link_bw_bidi) for a, w in zip(sizes, wraps)]
        t = collective_time(kind, nbytes, axes, HOP_LATENCY_S)
        scale = {"all_reduce": 2.0, "all_to_all": 0.25}.get(kind, 1.0)
        return self._finish(kind, 0.0, 0.0, 0.0, 0.0, 0.0, ici_s=t, ici_bytes=nbytes * scale,
                            detail={"axes": tuple(sizes), "wraparound": tuple(wraps),
                                    "hops": sum(ring_hops(a) for a in axes)})


def _prod(xs: Sequence[int]) -> int:
    p = 1
    for x in xs:
        p *= int(x)
    return p

