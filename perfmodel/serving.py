"""Serving: prefill and decode latency and throughput of a transformer on TPU chips.

A replica is one model-parallel group of tp x ep (x fsdp) chips holding the weights (bf16 by default) and the KV
cache; `n_chips / (tp x ep x fsdp)` replicas serve independent requests. `fsdp` > 1 is the weight-gathered layout
of Pope et al. (arXiv:2211.05102, section 3.2.3): weights sharded over fsdp chips and all-gathered layer by
layer, the replica's batch split over them; it pays when the batch in tokens is large (prefill). Per replica
and step, the same per-layer op model as training (`perfmodel.blocks`) runs forward only:
* prefill: batch x prompt tokens through every layer (matmuls with M = batch x prompt, causal flash attention);
* decode: one token per sequence (M = batch): the weights and the KV cache stream from HBM every step, so
  decode is HBM-bound until batch approaches the chip's critical intensity (v5e ~240 [SB-roof]); its tensor-
  parallel all-reduces are small and latency-bound (1 us per hop [SB-shard]).
Per layer, compute and ICI combine with the global overlap (`Calibration.overlap`); the calibrated op
efficiency applies as in training. Decode is costed at the mean context (prompt + generated / 2).

Long context and attention variants: sliding-window layers attend (and cache) at most their window; MLA
decodes in the latent space (`perfmodel.blocks`); a paged KV cache (`page_tokens`) allocates whole pages and
its attention kernel streams `pages_per_block` pages per kv block, whose MXU efficiency at that block size
comes from the simulator like every flash block.

Quantized weights (`quant`): 'int8' / 'fp8' weights with bf16 activations (1 byte per weight from HBM, bf16
MXU rate); 'int8_w8a8' / 'fp8_w8a8' also run the MXU at the chip table's int8 / fp8 rate. A chip without that
rate in the table is refused.

Speculative decoding (Leviathan, Kalman, Matias, "Fast Inference from Transformers via Speculative
Decoding", ICML 2023, arXiv:2211.17192, section 3.1 eq. 1): a draft model proposes `gamma` tokens, the
target verifies them in one forward of gamma + 1 query tokens; with acceptance rate alpha (a user parameter:
it depends on the draft, the target and the data) each round yields (1 - alpha^(gamma+1)) / (1 - alpha)
tokens, so the time per token is (gamma x T_draft + T_verify) / that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchtpu.perfmodel.blocks import Context, layer_plan
from torchtpu.perfmodel.calibration import DEFAULT, Calibration
from torchtpu.perfmodel.config import ModelConfig, load_config
from torchtpu.perfmodel.flops import param_counts
from torchtpu.perfmodel.layout import Layout, assign_axes, default_slice_shape
from torchtpu.perfmodel.memory import MemoryReport, kv_cache_bytes, serving_memory
from torchtpu.perfmodel.ops import matmul_cost
from torchtpu.perfmodel.training import combine_resources, layer_groups
from torchtpu.sim.chips import ChipSpec, get_chip

__all__ = ["QUANT", "ServeReport", "serve", "speculative_tokens_per_round"]

# quant name: (bytes per weight, MXU input dtype for the weight matmuls)
QUANT = {"bf16": (2, "bfloat16"), "int8": (1, "bfloat16"), "fp8": (1, "bfloat16"),
         "int8_w8a8": (1, "int8"), "fp8_w8a8": (1, "float8")}


def speculative_tokens_per_round(alpha: float, gamma: int) -> float:
    """Expected tokens per draft-and-verify round, (1 - alpha^(gamma+1)) / (1 - alpha) [Leviathan23 eq. 1].

    >>> speculative_tokens_per_round(0.8, 4)
    3.3616
    """
    if not 0.0 <= alpha <= 1.0 or gamma < 0:
        raise ValueError(f"acceptance rate must be in [0, 1] and gamma >= 0, got {alpha}, {gamma}")
    if alpha == 1.0:
        return gamma + 1.0
    return round((1 - alpha ** (gamma + 1)) / (1 - alpha), 12)


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
    quant: str = "bf16"
    tokens_per_round: float = 1.0  # speculative decoding: tokens per draft-and-verify round (1: off)

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
            "breakdown_seconds": dict(self.breakdown), "quant": self.quant,
            "tokens_per_round": self.tokens_per_round,
        }

    def summary(self) -> str:
        return (f"{self.model} on {self.n_chips}x {self.chip} ({self.replicas} replica(s) of tp={self.tp}"
                f"{f' ep={self.ep}' if self.ep > 1 else ''}), batch {self.batch}: TTFT {1e3 * self.prefill_seconds:.1f}"
                f" ms, decode {1e3 * self.decode_step_seconds:.2f} ms/token, {self.decode_tokens_per_second:.0f}"
                f" tok/s; memory {self.memory.total / 2**30:.1f} GiB{'' if self.fits else ' (DOES NOT FIT)'}")


def _forward_seconds(cfg: ModelConfig, chip: ChipSpec, layout: Layout, seqs: float, q_len: int, kv_len: int,
                     cal: Calibration, weight_bytes: int, block: int, *, mxu_dtype: str = "bfloat16",
                     kv_bytes: float = 2, block_kv: int | None = None) -> tuple[float, dict[str, float]]:
    axes = assign_axes(chip, layout, default_slice_shape(chip, layout.ici_size))
    decode = q_len * max(1, cfg.n_heads // max(1, cfg.n_kv_heads)) <= block or q_len <= 16
    ctx = Context(chip=chip, cfg=cfg, layout=layout, axes=axes, seqs=seqs, seq_len=q_len, n_slices=1,
                  dcn_bw=chip.dcn_bw, calibration=cal, block_q=block, block_kv=block_kv or block,
                  act_bytes=2, weight_bytes=weight_bytes, gather_bytes=weight_bytes, training=False,
                  kv_len=kv_len, mxu_dtype=mxu_dtype, kv_bytes=kv_bytes, absorb_mla=cfg.is_mla and decode)
    total = 0.0
    parts = {"compute": 0.0, "exposed_communication": 0.0}
    for (kind, window), n in layer_groups(cfg).items():
        lctx = ctx if not window else Context(**{**ctx.__dict__, "window": window,
                                                 "kv_len": min(kv_len, window + q_len)})
        plan = layer_plan(lctx, kind)
        compute = sum(c.calibrated_seconds(cal) for c in plan.fwd.values())
        ici = sum(c.seconds for c in plan.comms if c.network == "ici")
        t = combine_resources([compute, ici], cal.overlap)
        total += n * t
        parts["compute"] += n * compute
        parts["exposed_communication"] += n * (t - compute)
    logits = matmul_cost(chip, seqs * q_len if q_len <= 16 else seqs, cfg.vocab_size / layout.tp, cfg.d_model,
                         weight_bytes=weight_bytes, out_bytes=4).calibrated_seconds(cal)
    parts["logits"] = logits
    return total + logits, parts


def serve(
    model: ModelConfig | str,
    chip: ChipSpec | str,
    n_chips: int,
    *,
    tp: int | None = None,
    ep: int = 1,
    fsdp: int = 1,
    batch: int = 1,
    prompt_len: int = 2048,
    gen_len: int = 256,
    weight_bytes: int | None = None,
    kv_bytes: float = 2,
    block: int = 512,
    calibration: Calibration = DEFAULT,
    quant: str = "bf16",
    page_tokens: int | None = None,
    pages_per_block: int = 8,
    draft: ModelConfig | str | None = None,
    gamma: int = 4,
    acceptance: float | None = None,
) -> ServeReport:
    """Prefill and decode for `batch` concurrent sequences per replica of tp x ep chips.

    tp defaults to the smallest power of two whose replica holds the weights and KV cache; `fsdp` > 1 shards the
    weights over that many chips more and all-gathers them per layer (weight-gathered, module docstring).
    `quant` selects weight bytes and MXU rate (module docstring; `weight_bytes` overrides the bytes);
    `page_tokens` pages the KV cache; `draft` + `acceptance` (+ `gamma`) turn on speculative decoding.
    """
    cfg = load_config(model)
    c = get_chip(chip)
    if quant not in QUANT:
        raise ValueError(f"unknown quant {quant!r}; valid: {', '.join(QUANT)}")
    wb, mxu_dtype = QUANT[quant]
    weight_bytes = wb if weight_bytes is None else weight_bytes
    if mxu_dtype == "float8" and c.fp8_flops is None:
        raise ValueError(f"{c.name} has no fp8 MXU rate in the chip table; use quant='fp8' (w8a16) or 'int8_w8a8'")
    dcfg = load_config(draft) if draft is not None else None
    if dcfg is not None and acceptance is None:
        raise ValueError("speculative decoding needs the draft acceptance rate: pass acceptance= (0..1)")
    context = prompt_len + gen_len

    def extra(tp_: int) -> float:
        if dcfg is None:
            return 0.0
        return (param_counts(dcfg).total / tp_ * weight_bytes
                + kv_cache_bytes(dcfg, batch, context, kv_bytes=kv_bytes, tp=tp_, page_tokens=page_tokens))

    def mem_for(tp_: int) -> MemoryReport:
        return serving_memory(cfg, c, Layout(tp=tp_, ep=ep, fsdp=fsdp), batch, context, weight_bytes=weight_bytes,
                              kv_bytes=kv_bytes, calibration=calibration, page_tokens=page_tokens,
                              extra_weights=extra(tp_))

    if tp is None:
        tp = 1
        while tp * ep * fsdp < n_chips and not mem_for(tp).fits:
            tp *= 2
    group = tp * ep * fsdp
    if n_chips % group:
        raise ValueError(f"{n_chips} chips do not split into replicas of tp*ep*fsdp = {group}")
    layout = Layout(tp=tp, ep=ep, fsdp=fsdp)
    mem = mem_for(tp)
    # with ep, each ep rank holds batch/ep of the replica's sequences for the dense parts; fsdp splits the batch
    seqs = batch / ep / fsdp
    kw = dict(mxu_dtype=mxu_dtype, kv_bytes=kv_bytes)
    prefill, p_parts = _forward_seconds(cfg, c, layout, seqs, prompt_len, prompt_len, calibration, weight_bytes,
                                        block, **kw)
    ctx_len = prompt_len + gen_len // 2
    dec_block = page_tokens * pages_per_block if page_tokens else block
    decode, d_parts = _forward_seconds(cfg, c, layout, seqs, 1, ctx_len, calibration, weight_bytes, block,
                                       block_kv=dec_block, **kw)
    breakdown = {f"prefill_{k}": v for k, v in p_parts.items()}
    breakdown.update({f"decode_{k}": v for k, v in d_parts.items()})
    per_round = 1.0
    if dcfg is not None:
        draft_step, _ = _forward_seconds(dcfg, c, layout, seqs, 1, ctx_len, calibration, weight_bytes, block,
                                         block_kv=dec_block, **kw)
        verify, _ = _forward_seconds(cfg, c, layout, seqs, gamma + 1, ctx_len, calibration, weight_bytes, block,
                                     block_kv=dec_block, **kw)
        per_round = speculative_tokens_per_round(float(acceptance), gamma)
        breakdown.update(decode_plain_step=decode, decode_draft_step=draft_step, decode_verify=verify)
        decode = (gamma * draft_step + verify) / per_round
    return ServeReport(model=cfg.name, chip=c.name, n_chips=n_chips, tp=tp, ep=ep, replicas=n_chips // group,
                       batch=batch, prompt_len=prompt_len, gen_len=gen_len, prefill_seconds=prefill,
                       decode_step_seconds=decode, memory=mem, breakdown=breakdown, quant=quant,
                       tokens_per_round=per_round)
