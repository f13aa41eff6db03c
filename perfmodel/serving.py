"""Serving: prefill and decode latency and throughput of a transformer on TPU chips.

A replica is one model-parallel group of tp x ep chips holding the weights (bf16 by default) and the KV cache;
`n_chips / (tp x ep)` replicas serve independent requests. Per replica and step, the same per-layer op model as
training (`perfmodel.blocks`) runs forward only:
* prefill: batch x prompt tokens through every layer (matmuls with M = batch x prompt, causal flash attention);
* decode: one token per sequence (M = batch): the weights and the KV cache stream from HBM every step, so
  decode is HBM-bound until batch approaches the chip's critical intensity (v5e ~240 [SB-roof]); its tensor-
  parallel all-reduces are small and latency-bound (1 us per hop [SB-shard]).
Per layer, compute and ICI combine with the global overlap (`Calibration.overlap`); the calibrated op
efficiency applies as in training. Decode is costed at the mean context (prompt + generated / 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchtpu.perfmodel.blocks import Context, layer_plan
from torchtpu.perfmodel.calibration import DEFAULT, Calibration
from torchtpu.perfmodel.config import ModelConfig, load_config
from torchtpu.perfmodel.layout import Layout, assign_axes, default_slice_shape
from torchtpu.perfmodel.memory import MemoryReport, serving_memory
from torchtpu.perfmodel.ops import matmul_cost
from torchtpu.perfmodel.training import combine_resources
from torchtpu.sim.chips import ChipSpec, get_chip

__all__ = ["ServeReport", "serve"]


@dataclass
class ServeReport:
    """Prefill and decode predictions for one replica layout; throughputs are for all replicas."""

    model: str
    chip: str
    n_chips: int
    tp: int
    ep: int
    replicas: int
    batch: int
    prompt_len: int
    gen_len: int
    prefill_seconds: float
    decode_step_seconds: float
    memory: MemoryReport
    breakdown: dict[str, float] = field(default_factory=dict)

    @property
    def time_to_first_token(self) -> float:
        return self.prefill_seconds

    @property
    def prefill_tokens_per_second(self) -> float:
        return self.replicas * self.batch * self.prompt_len / self.prefill_seconds

    @property
    def decode_tokens_per_second(self) -> float:
        return self.replicas * self.batch / self.decode_step_seconds

    @property
    def request_seconds(self) -> float:
        """Latency of one request: prefill + gen_len decode steps."""
        return self.prefill_seconds + self.gen_len * self.decode_step_seconds

    @property
    def fits(self) -> bool:
        return self.memory.fits

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "chip": self.chip, "chips": self.n_chips, "tp": self.tp, "ep": self.ep,
            "replicas": self.replicas, "batch_per_replica": self.batch, "prompt_len": self.prompt_len,
            "gen_len": self.gen_len, "prefill_seconds": self.prefill_seconds,
            "time_to_first_token": self.time_to_first_token, "decode_step_seconds": self.decode_step_seconds,
            "prefill_tokens_per_second": self.prefill_tokens_per_second,
            "decode_tokens_per_second": self.decode_tokens_per_second, "request_seconds": self.request_seconds,
            "memory_per_chip_bytes": self.memory.total, "memory": self.memory.to_dict(), "fits": self.fits,
            "breakdown_seconds": dict(self.breakdown),
        }

    def summary(self) -> str:
        return (f"{self.model} on {self.n_chips}x {self.chip} ({self.replicas} replica(s) of tp={self.tp}"
                f"{f' ep={self.ep}' if self.ep > 1 else ''}), batch {self.batch}: TTFT {1e3 * self.prefill_seconds:.1f}"
                f" ms, decode {1e3 * self.decode_step_seconds:.2f} ms/token, {self.decode_tokens_per_second:.0f}"
                f" tok/s; memory {self.memory.total / 2**30:.1f} GiB{'' if self.fits else ' (DOES NOT FIT)'}")


def _forward_seconds(cfg: ModelConfig, chip: ChipSpec, layout: Layout, seqs: float, q_len: int, kv_len: int,
                     cal: Calibration, weight_bytes: int, block: int) -> tuple[float, dict[str, float]]:
    axes = assign_axes(chip, layout, default_slice_shape(chip, layout.ici_size))
    ctx = Context(chip=chip, cfg=cfg, layout=layout, axes=axes, seqs=seqs, seq_len=q_len, n_slices=1,
                  dcn_bw=chip.dcn_bw, calibration=cal, block_q=block, block_kv=block,
                  act_bytes=2, weight_bytes=weight_bytes, gather_bytes=weight_bytes, training=False,
                  kv_len=kv_len)
    total = 0.0
    parts = {"compute": 0.0, "exposed_communication": 0.0}
    counts: dict[str, int] = {}
    for kind in cfg.layer_kinds():
        counts[kind] = counts.get(kind, 0) + 1
    for kind, n in counts.items():
        plan = layer_plan(ctx, kind)
        compute = sum(c.seconds for c in plan.fwd.values()) / cal.efficiency
        ici = sum(c.seconds for c in plan.comms if c.network == "ici")
        t = combine_resources([compute, ici], cal.overlap)
        total += n * t
        parts["compute"] += n * compute
        parts["exposed_communication"] += n * (t - compute)
    logits = matmul_cost(chip, seqs, cfg.vocab_size / layout.tp, cfg.d_model, out_bytes=4).seconds / cal.efficiency
    parts["logits"] = logits
    return total + logits, parts


def serve(
    model: ModelConfig | str,
    chip: ChipSpec | str,
    n_chips: int,
    *,
    tp: int | None = None,
    ep: int = 1,
    batch: int = 1,
    prompt_len: int = 2048,
    gen_len: int = 256,
    weight_bytes: int = 2,
    kv_bytes: int = 2,
    block: int = 512,
    calibration: Calibration = DEFAULT,
) -> ServeReport:
    """Prefill and decode for `batch` concurrent sequences per replica of tp x ep chips.

    tp defaults to the smallest power of two whose replica holds the weights and KV cache.
    """
    cfg = load_config(model)
    c = get_chip(chip)
    if tp is None:
        tp = 1
        while tp * ep < n_chips and not serving_memory(cfg, c, Layout(tp=tp, ep=ep), batch,
                                                       prompt_len + gen_len, weight_bytes=weight_bytes,
                                                       kv_bytes=kv_bytes, calibration=calibration).fits:
            tp *= 2
    group = tp * ep
    if n_chips % group:
        raise ValueError(f"{n_chips} chips do not split into replicas of tp*ep = {group}")
    layout = Layout(tp=tp, ep=ep)
    mem = serving_memory(cfg, c, layout, batch, prompt_len + gen_len, weight_bytes=weight_bytes,
                         kv_bytes=kv_bytes, calibration=calibration)
    # with ep, each ep rank holds batch/ep of the replica's sequences for the dense parts
    seqs = batch / ep
    prefill, p_parts = _forward_seconds(cfg, c, layout, seqs, prompt_len, prompt_len, calibration, weight_bytes,
                                        block)
    ctx_len = prompt_len + gen_len // 2
    decode, d_parts = _forward_seconds(cfg, c, layout, seqs, 1, ctx_len, calibration, weight_bytes, block)
    breakdown = {f"prefill_{k}": v for k, v in p_parts.items()}
    breakdown.update({f"decode_{k}": v for k, v in d_parts.items()})
    return ServeReport(model=cfg.name, chip=c.name, n_chips=n_chips, tp=tp, ep=ep, replicas=n_chips // group,
                       batch=batch, prompt_len=prompt_len, gen_len=gen_len, prefill_seconds=prefill,
                       decode_step_seconds=decode, memory=mem, breakdown=breakdown)
