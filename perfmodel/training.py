"""Training step time, MFU and memory of a transformer on N TPU chips under a parallelism layout.

Step model (per chip; every layer of a kind is identical, so each kind is costed once):
* compute = sum over the layer's ops of roofline time / `efficiency` for the forward, the backward (two
  matmuls per weight matmul, the flash backward, 2x elementwise traffic) and the forward ops the remat policy
  recomputes;
* resources of a layer run concurrently: compute, ICI collectives, DCN collectives (bandwidth), host offload
  (PCIe). With overlap o, T_layer = max(resources) + (1 - o) * (sum of the others) (`Calibration.overlap`),
  plus the per-step latency of the layer's DCN collectives, which is not hidden (`Calibration.dcn_hop_latency_s`);
* step = sum over layers + embedding/logits (as one more "layer") + the optimizer update (HBM-bound, exposed;
  its bytes from param_bytes, grad_bytes and optimizer_bytes);
* layers differ by kind (dense / MoE) and attention (global / sliding window); each group is costed once;
* context parallelism in 'ring' mode exposes only what the ring steps do not hide behind the attention blocks
  (`perfmodel.longctx`), added in series like the DCN latency;
* pipeline parallelism (`perfmodel.pipeline`): a chip runs its stage's layers for all microbatches, stretched
  by the bubble (1 + (p - 1) / (v m)); the stage-boundary sends are one more concurrent resource (ICI, or DCN
  for dcn_pp, whose per-send latency is exposed).
MFU = model FLOPs per chip (`perfmodel.flops`, in the chosen causal convention) / (step x peak bf16 FLOP/s);
HFU uses the FLOPs actually executed (with recompute).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from torchtpu.perfmodel import pipeline
from torchtpu.perfmodel import remat as remat_mod
from torchtpu.perfmodel.blocks import Context, LayerPlan, layer_plan
from torchtpu.perfmodel.calibration import DEFAULT, Calibration
from torchtpu.perfmodel.collectives import collective_time, dcn_collective_terms
from torchtpu.perfmodel.config import ModelConfig, load_config
from torchtpu.perfmodel.flops import flops_per_token, param_counts
from torchtpu.perfmodel.layout import Layout, assign_axes, default_slice_shape
from torchtpu.perfmodel.memory import MemoryReport, params_per_chip, training_memory
from torchtpu.perfmodel.ops import OpCost, elementwise_cost, matmul_cost
from torchtpu.sim.chips import ChipSpec, get_chip

__all__ = ["StepReport", "System", "TrainSetup", "combine_resources", "layer_groups", "train_step"]


@dataclass(frozen=True)
class System:
    """Chips: `n_chips` of `chip` in `n_slices` ICI slices joined by DCN; `slice_shape` defaults by chip type."""

    chip: ChipSpec
    n_chips: int
    n_slices: int = 1
    slice_shape: tuple[int, ...] | None = None
    dcn_bw: float | None = None  # per chip; default: the chip table's

    @classmethod
    def make(cls, chip: ChipSpec | str, n_chips: int, n_slices: int | None = None,
             slice_shape: tuple[int, ...] | None = None, dcn_bw: float | None = None) -> System:
        chip = get_chip(chip)
        if n_slices is None:  # 2D-torus chips: a pod is the largest slice
            n_slices = max(1, n_chips // chip.pod_chips) if chip.ici_dims == 2 and n_chips > chip.pod_chips else 1
        if n_chips % n_slices:
            raise ValueError(f"{n_chips} chips do not split into {n_slices} equal slices")
        return cls(chip, n_chips, n_slices, slice_shape, dcn_bw)

    @property
    def chips_per_slice(self) -> int:
        return self.n_chips // self.n_slices

    @property
    def dcn(self) -> float | None:
        return self.dcn_bw if self.dcn_bw is not None else self.chip.dcn_bw

    def shape(self) -> tuple[int, ...]:
        return self.slice_shape or default_slice_shape(self.chip, self.chips_per_slice)


@dataclass(frozen=True)
class TrainSetup:
    """What is trained and how: batch, sequence, remat, precision of stored and communicated tensors."""

    seq_len: int = 2048
    global_batch: float | None = None  # sequences per step
    per_device_batch: float | None = None  # MaxText style: global = per_device_batch x chips
    remat: str = "full"
    offload: bool = False
    attention: str = "flash"
    causal_convention: str = "half"  # "half" (newer MaxText) or "full" (older MaxText recipes, PaLM)
    param_bytes: int = 4
    grad_bytes: int = 4
    optimizer_bytes: int = 8
    act_bytes: int = 2
    gather_bytes: int = 2
    reduce_bytes: int = 2
    block_q: int = 512
    block_kv: int = 512
    router_imbalance: float | None = None
    cp_mode: str = "all_gather"  # context parallelism: 'all_gather' (MaxText) or 'ring'
    microbatches: int | None = None  # pipeline microbatches per data shard; None: one sequence each
    schedule: str = "1f1b"  # pipeline schedule: 1f1b, interleaved, gpipe
    virtual_stages: int = 1  # interleaved: model chunks per chip

    def batch(self, n_chips: int) -> float:
        if self.global_batch is not None:
            return float(self.global_batch)
        return float(self.per_device_batch if self.per_device_batch is not None else 1) * n_chips


@dataclass
class StepReport:
    """Prediction for one training step; `to_dict()` is the JSON form."""

    model: str
    chip: str
    n_chips: int
    n_slices: int
    layout: Layout
    remat: str
    global_batch: float
    seq_len: int
    step_seconds: float
    mfu: float
    hfu: float
    model_flops_per_chip: float
    hardware_flops_per_chip: float
    tokens_per_second: float
    memory: MemoryReport
    breakdown: dict[str, float] = field(default_factory=dict)
    comm_seconds: dict[str, float] = field(default_factory=dict)
    ops: list[tuple[str, OpCost]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cp_mode: str = "all_gather"

    @property
    def tokens_per_second_per_chip(self) -> float:
        return self.tokens_per_second / self.n_chips

    @property
    def tflops_per_chip(self) -> float:
        return self.model_flops_per_chip / self.step_seconds / 1e12

    @property
    def fits(self) -> bool:
        return self.memory.fits

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "chip": self.chip, "chips": self.n_chips, "slices": self.n_slices,
            "layout": str(self.layout), "layout_axes": self.layout.to_dict(), "remat": self.remat,
            "global_batch": self.global_batch, "seq_len": self.seq_len, "step_seconds": self.step_seconds,
            "mfu": self.mfu, "hfu": self.hfu, "tflops_per_chip": self.tflops_per_chip,
            "tokens_per_second": self.tokens_per_second,
            "tokens_per_second_per_chip": self.tokens_per_second_per_chip,
            "memory_per_chip_bytes": self.memory.total, "memory": self.memory.to_dict(), "fits": self.fits,
            "breakdown_seconds": dict(self.breakdown), "comm_seconds": dict(self.comm_seconds),
            "notes": list(self.notes), "cp_mode": self.cp_mode,
        }

    def summary(self) -> str:
        gib = 2**30
        return (f"{self.model} on {self.n_chips}x {self.chip} ({self.n_slices} slice(s)), layout {self.layout}, "
                f"remat {self.remat}: step {self.step_seconds:.3f} s, MFU {100 * self.mfu:.1f}%, "
                f"{self.tokens_per_second_per_chip:.0f} tok/s/chip, memory {self.memory.total / gib:.1f} GiB"
                f" of {self.memory.capacity / gib:.1f} GiB{'' if self.fits else ' (DOES NOT FIT)'}")


def combine_resources(times: list[float], overlap: float) -> float:
    """Concurrent resources: the busiest sets the pace, the rest shows through by (1 - overlap)."""
    times = [t for t in times if t > 0]
    if not times:
        return 0.0
    top = max(times)
    return top + (1.0 - overlap) * (sum(times) - top)


def _context(cfg: ModelConfig, system: System, layout: Layout, setup: TrainSetup, cal: Calibration,
             seqs: float, recompute: frozenset[str]) -> Context:
    axes = assign_axes(system.chip, layout, system.shape())
    return Context(chip=system.chip, cfg=cfg, layout=layout, axes=axes, seqs=seqs, seq_len=setup.seq_len,
                   n_slices=system.n_slices, dcn_bw=system.dcn, calibration=cal, attention=setup.attention,
                   block_q=setup.block_q, block_kv=setup.block_kv, act_bytes=setup.act_bytes,
                   gather_bytes=setup.gather_bytes, reduce_bytes=setup.reduce_bytes,
                   router_imbalance=setup.router_imbalance, training=True, recompute=recompute,
                   cp_mode=setup.cp_mode)


def layer_groups(cfg: ModelConfig) -> dict[tuple[str, int], int]:
    """{(layer kind, attention window or 0): number of layers}: the distinct layers a step model costs."""
    out: dict[tuple[str, int], int] = defaultdict(int)
    for kind, attn in zip(cfg.layer_kinds(), cfg.layer_attention()):
        out[(kind, cfg.window(attn))] += 1
    return dict(out)


def _pipeline_terms(cfg: ModelConfig, system: System, layout: Layout, setup: TrainSetup, ctx: Context,
                    cal: Calibration) -> tuple[float, float, float, float]:
    """(bubble fraction, p2p seconds ICI, p2p seconds DCN bandwidth, exposed DCN send latency)."""
    stages = layout.stages
    if stages <= 1:
        return 0.0, 0.0, 0.0, 0.0
    m = setup.microbatches or max(1, round(ctx.seqs))
    pipeline.check(cfg.n_layers, stages, m, setup.schedule, setup.virtual_stages)
    if setup.microbatches and abs(ctx.seqs / m - round(ctx.seqs / m)) > 1e-9:
        raise ValueError(f"{ctx.seqs:g} sequences per data shard do not split into {m} microbatches")
    bubble = pipeline.bubble_fraction(stages, m, setup.schedule, setup.virtual_stages)
    nbytes = pipeline.p2p_bytes_per_chip(ctx.tokens, cfg.d_model, setup.act_bytes, layout.tp, layout.sp, stages,
                                         setup.schedule, setup.virtual_stages)
    ici = dcn = lat = 0.0
    if layout.pp > 1:  # one link, one direction per send
        ici = nbytes / (system.chip.ici_link_bw_bidi / 2.0)
    if layout.dcn_pp > 1:
        if not system.dcn:
            raise ValueError(f"{system.chip.name} has no DCN bandwidth in the chip table; pass dcn_bw=")
        share = (layout.dcn_pp - 1) / stages  # of the boundaries, those between slices
        dcn = nbytes * share / system.dcn
        v = setup.virtual_stages if setup.schedule == "interleaved" else 1
        lat = 2 * m * v * share * cal.dcn_hop_latency_s
    return bubble, ici, dcn, lat


def _embedding_plan(ctx: Context) -> tuple[list[tuple[str, OpCost]], float, float, float]:
    """Logits matmul + softmax cross-entropy (fwd+bwd) and the embedding tables' collectives."""
    cfg, lay, chip = ctx.cfg, ctx.layout, ctx.chip
    t, d, v = ctx.tokens, cfg.d_model, cfg.vocab_size / lay.tp
    b = ctx.act_bytes
    fwd = matmul_cost(chip, t, v, d, in_bytes=b, out_bytes=4, name="logits")
    bwd = [matmul_cost(chip, t, d, v, in_bytes=b, name="logits_dx"),
           matmul_cost(chip, d, v, t, in_bytes=b, out_bytes=4, name="logits_dw")]
    xent = elementwise_cost(chip, t * v, n_inputs=1, n_outputs=1, bytes_per_element=4, vpu_ops=6, name="xent")
    lookup = elementwise_cost(chip, t * d / (lay.tp if lay.sp else 1), n_inputs=1, n_outputs=1,
                              bytes_per_element=b, vpu_ops=0, name="embed_lookup")
    ops = [("fwd", fwd), ("bwd", bwd[0]), ("bwd", bwd[1]), ("fwd", xent), ("bwd", xent), ("fwd", lookup)]
    p = param_counts(cfg)
    tables = (p.embedding + p.unembedding) / lay.tp
    axes = ctx.axes
    cal = ctx.calibration
    ici = 0.0
    if lay.fsdp > 1:
        ici += 2 * collective_time("all_gather", tables * ctx.gather_bytes, axes["fsdp"], cal.ici_hop_latency_s)
        ici += collective_time("reduce_scatter", tables * ctx.reduce_bytes, axes["fsdp"], cal.ici_hop_latency_s)
    shard = tables * ctx.reduce_bytes / lay.fsdp
    ici += collective_time("all_reduce", shard, axes["dp"], cal.ici_hop_latency_s)
    ici += 2 * collective_time("all_reduce", t * d * b, axes["tp"], cal.ici_hop_latency_s) if lay.tp > 1 else 0.0
    dcn = sync = 0.0
    lat = cal.dcn_hop_latency_s
    if lay.dcn_dp > 1:  # two tables (or one, tied), each all-reduced across slices
        bw, sy = dcn_collective_terms("all_reduce", shard / lay.dcn_fsdp / 2, lay.dcn_dp, ctx.dcn_bw, lat, 2)
        dcn, sync = dcn + bw, sync + sy
    if lay.dcn_fsdp > 1:
        bw, sy = dcn_collective_terms("all_gather", shard / 2, lay.dcn_fsdp, ctx.dcn_bw, lat, 2)
        dcn, sync = dcn + 3 * bw, sync + 3 * sy
    return ops, ici, dcn, sync


def _inflight(layout: Layout, setup: TrainSetup, seqs: float) -> float:
    if layout.stages <= 1:
        return 1.0
    m = setup.microbatches or max(1, round(seqs))
    return pipeline.inflight_fraction(layout.stages, m, setup.schedule, setup.virtual_stages)


def train_step(
    model: ModelConfig | str,
    chip: ChipSpec | str,
    n_chips: int,
    layout: Layout | str | None = None,
    setup: TrainSetup | None = None,
    *,
    n_slices: int | None = None,
    slice_shape: tuple[int, ...] | None = None,
    dcn_bw: float | None = None,
    calibration: Calibration = DEFAULT,
    **setup_kw: Any,
) -> StepReport:
    """Predict one training step. `layout` defaults to FSDP over every chip of a slice, DP across slices.

    >>> r = train_step("maxtext-32b", "v5e", 256, "fsdp=256", per_device_batch=4, remat="full",
    ...                causal_convention="full")
    >>> 0.5 < r.mfu < 0.8
    True
    """
    cfg = load_config(model)
    setup = setup or TrainSetup()
    if setup_kw:
        setup = TrainSetup(**{**asdict(setup), **setup_kw})
    system = System.make(chip, n_chips, n_slices, slice_shape, dcn_bw)
    if layout is None:
        layout = Layout(fsdp=system.chips_per_slice, dcn_dp=system.n_slices)
    elif isinstance(layout, str):
        layout = Layout.parse(layout, n_chips, system.n_slices)
    if layout.size != n_chips or layout.dcn_size != system.n_slices:
        raise ValueError(f"layout {layout} does not match {n_chips} chips in {system.n_slices} slice(s)")
    policy = remat_mod.canonical(setup.remat)
    recompute = frozenset(remat_mod.recomputed_ops(policy))
    cal = calibration
    batch = setup.batch(n_chips)
    seqs = batch / layout.data_shards
    ctx = _context(cfg, system, layout, setup, cal, seqs, recompute)
    bubble, pp_ici, pp_dcn, pp_lat = _pipeline_terms(cfg, system, layout, setup, ctx, cal)
    notes: list[str] = []
    shape = system.shape()
    if system.chip.ici_dims == 3 and system.chips_per_slice >= 64 and shape[:-1] == (1,) * (len(shape) - 1):
        notes.append(f"{system.chips_per_slice} chips have no slice shape of 4x4x4 cubes: modelled as a line "
                     "without wraparound (pass slice_shape= or a multiple of 64 chips per slice)")
    if seqs * setup.seq_len / layout.cp < 1:
        notes.append("fewer than one token per data shard")

    breakdown: dict[str, float] = defaultdict(float)
    comm_totals: dict[str, float] = defaultdict(float)
    all_ops: list[tuple[str, OpCost]] = []
    total = 0.0
    hw_flops = 0.0
    mem = training_memory(cfg, system.chip, layout, seqs, setup.seq_len, remat=policy, offload=setup.offload,
                          param_bytes=setup.param_bytes, grad_bytes=setup.grad_bytes,
                          optimizer_bytes=setup.optimizer_bytes, act_bytes=setup.act_bytes,
                          gather_bytes=setup.gather_bytes, attention=setup.attention, calibration=cal,
                          cp_mode=setup.cp_mode, inflight=_inflight(layout, setup, seqs))
    offload_per_layer = mem.host * layout.stages / max(1, cfg.n_layers)
    for (kind, window), n_all in layer_groups(cfg).items():
        n = n_all / layout.stages  # the layers of one stage (all of them without pipelining)
        plan: LayerPlan = layer_plan(replace(ctx, window=window), kind)
        fwd = sum(c.calibrated_seconds(cal) for c in plan.fwd.values())
        bwd = sum(c.calibrated_seconds(cal) for c in plan.bwd.values())
        rec = sum(c.calibrated_seconds(cal) for name, c in plan.fwd.items() if name in recompute)
        ici = sum(c.seconds for c in plan.comms if c.network == "ici")
        dcn = sum(c.seconds for c in plan.comms if c.network == "dcn")
        sync = sum(c.seconds for c in plan.comms if c.network in ("dcn_sync", "exposed"))
        pcie = 2 * offload_per_layer / system.chip.pcie_bw if setup.offload else 0.0
        compute = fwd + bwd + rec
        t_layer = combine_resources([compute, ici, dcn, pcie], cal.overlap) + sync
        total += n * t_layer
        breakdown["compute_forward"] += n * fwd
        breakdown["compute_backward"] += n * bwd
        breakdown["compute_recompute"] += n * rec
        breakdown["exposed_communication"] += n * (t_layer - compute)
        for c in plan.comms:
            comm_totals[f"{c.network}:{c.name}"] += n * c.seconds
        if pcie:
            comm_totals["pcie:offload"] += n * pcie
        for name, c in plan.fwd.items():
            all_ops.append(("fwd", c.scaled(n)))
            hw_flops += n * c.flops * (2 if name in recompute else 1)
        for c in plan.bwd.values():
            all_ops.append(("bwd", c.scaled(n)))
            hw_flops += n * c.flops
    if layout.stages > 1:  # the stage's layers for all microbatches, stretched by the bubble; boundary sends
        layers_time = total
        compute_total = sum(v for k, v in breakdown.items() if k.startswith("compute"))
        piped = combine_resources([compute_total, pp_ici, pp_dcn], cal.overlap) - compute_total
        total = layers_time * (1.0 + bubble) + max(0.0, piped) + pp_lat
        breakdown["pipeline_bubble"] += layers_time * bubble
        breakdown["exposed_communication"] += max(0.0, piped) + pp_lat
        comm_totals["ici:pp_send"] += pp_ici
        if pp_dcn:
            comm_totals["dcn:pp_send"] += pp_dcn
    emb_ops, emb_ici, emb_dcn, emb_sync = _embedding_plan(ctx)
    emb_compute = sum(c.calibrated_seconds(cal) for _, c in emb_ops)
    t_emb = combine_resources([emb_compute, emb_ici, emb_dcn], cal.overlap) + emb_sync
    total += t_emb
    breakdown["compute_embedding_logits"] += emb_compute
    breakdown["exposed_communication"] += t_emb - emb_compute
    comm_totals["ici:embedding"] += emb_ici
    if emb_dcn:
        comm_totals["dcn:embedding"] += emb_dcn
        comm_totals["dcn_sync:embedding"] += emb_sync
    all_ops.extend(emb_ops)
    hw_flops += sum(c.flops for _, c in emb_ops if c.kind == "matmul")
    n_local = params_per_chip(cfg, layout)
    # the update streams the parameters in and out, the gradients in, the optimizer state in and out (fp32
    # AdamW by default: 2x4 + 4 + 2x8 = 28 bytes per parameter; bf16 SGD without momentum: 6)
    opt_bytes = 2 * setup.param_bytes + setup.grad_bytes + 2 * setup.optimizer_bytes
    opt = elementwise_cost(system.chip, n_local, n_inputs=1, n_outputs=0, bytes_per_element=opt_bytes,
                           vpu_ops=12, name="optimizer")
    total += opt.calibrated_seconds(cal)
    breakdown["optimizer"] += opt.calibrated_seconds(cal)
    all_ops.append(("step", opt))

    tokens = batch * setup.seq_len
    model_flops = flops_per_token(cfg, setup.seq_len, causal=setup.causal_convention) * tokens / n_chips
    peak = system.chip.bf16_flops
    if not mem.fits:
        notes.append(f"needs {mem.total / 2**30:.1f} GiB of {mem.usable / 2**30:.1f} GiB usable HBM")
    return StepReport(
        model=cfg.name, chip=system.chip.name, n_chips=n_chips, n_slices=system.n_slices, layout=layout,
        remat=policy + ("+offload" if setup.offload else ""), global_batch=batch, seq_len=setup.seq_len,
        step_seconds=total, mfu=model_flops / (total * peak), hfu=hw_flops / (total * peak),
        model_flops_per_chip=model_flops, hardware_flops_per_chip=hw_flops, tokens_per_second=tokens / total,
        memory=mem, breakdown=dict(breakdown), comm_seconds=dict(comm_totals), ops=all_ops, notes=notes,
        cp_mode=setup.cp_mode if layout.cp > 1 else "all_gather",
    )
