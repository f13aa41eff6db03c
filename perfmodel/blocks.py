"""One transformer layer on one chip: its forward/backward ops and its collectives, under a layout.

`layer_plan(ctx, kind)` returns a `LayerPlan`: for every forward op (norms, projections, attention, MLP or the
MoE block) its forward and backward `OpCost` on the chip's local shapes, and the collectives of the layer by
phase. Shapes per chip: t = tokens of the chip's data shard (sequences x seq_len / cp); projections split their
head / hidden dimension over tp; experts are split over ep (and their hidden dimension over tp); with
sequence-parallel activations the d_model-wide elementwise work is split over tp too.

MoE: routed tokens reach the experts through an all-to-all over ep; dropless experts run as grouped matmuls
(`perfmodel.kernels`: the kernel's tile shape, one visit per m tile and group in it, each visited tile costed by
the simulator with double-buffered weight tiles); with a capacity factor, dense per-expert matmuls costed by
the simulator at the padded load (`perfmodel.simcost`); the busiest chip of the ep group sets the pace
(expected maximum of the chip loads, or `router_imbalance`).

Attention variants: multi-head latent attention (MLA, [DSV2]) costs its down/up projections; in decode it runs
absorbed (queries projected into the latent space, one shared latent 'kv head' of kv_lora + rope), as
DeepSeek-V2 section 2.1.2 describes; sliding-window layers skip the key blocks outside their window
(`perfmodel.longctx` has the context-parallel volumes: all-gather of K/V, or a ring of K/V shards whose
steps overlap the attention blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from torchtpu.perfmodel import kernels, longctx, simcost
from torchtpu.perfmodel.calibration import Calibration
from torchtpu.perfmodel.collectives import Axis, collective_time, dcn_collective_terms
from torchtpu.perfmodel.config import ModelConfig
from torchtpu.perfmodel.flops import param_counts
from torchtpu.perfmodel.layout import Layout
from torchtpu.perfmodel.ops import OpCost, attention_cost, elementwise_cost, matmul_cost
from torchtpu.sim.chips import ChipSpec

__all__ = ["Comm", "Context", "LayerPlan", "expert_load_imbalance", "layer_plan"]



@dataclass(frozen=True)
class Context:
    """Everything a layer plan needs (built once per step estimate by perfmodel.training)."""

    chip: ChipSpec
    cfg: ModelConfig
    layout: Layout
    axes: dict[str, list[Axis]]
    seqs: float  # sequences per data shard
    seq_len: int
    n_slices: int
    dcn_bw: float | None
    calibration: Calibration
    attention: str = "flash"
    block_q: int = 512
    block_kv: int = 512
    act_bytes: int = 2
    weight_bytes: int = 2  # weights as read by the matmuls (serving may use int8: 1)
    gather_bytes: int = 2
    reduce_bytes: int = 2
    router_imbalance: float | None = None
    training: bool = True
    kv_len: int | None = None  # serving: keys attended per query (decode); None = seq_len
    recompute: frozenset[str] = frozenset()  # forward ops the backward recomputes (perfmodel.remat)
    mxu_dtype: str = "bfloat16"  # weight matmuls' MXU input dtype (serving w8a8: 'int8' / 'float8')
    kv_bytes: float = 2.0  # bytes per cached key/value element (serving)
    cp_mode: str = "all_gather"  # context parallelism: 'all_gather' (MaxText) or 'ring'
    window: int = 0  # sliding window of the layer being planned (0: global attention)
    absorb_mla: bool = False  # decode: MLA attention in the latent space (DeepSeek-V2 2.1.2)

    @property
    def tokens(self) -> float:
        return self.seqs * self.seq_len / self.layout.cp


@dataclass(frozen=True)
class Comm:
    """One collective of a layer: phase 'fwd' | 'bwd' | 'recompute'; network 'ici', 'dcn' (bandwidth term) or
    'dcn_sync' (the per-ring-step latency of a DCN collective, which the step model does not overlap)."""

    name: str
    kind: str
    axis: str
    phase: str
    nbytes: float
    seconds: float
    network: str = "ici"


@dataclass
class LayerPlan:
    """Forward ops with their backward costs, and the layer's collectives."""

    kind: str
    fwd: dict[str, OpCost] = field(default_factory=dict)
    bwd: dict[str, OpCost] = field(default_factory=dict)
    comms: list[Comm] = field(default_factory=list)
    weight_bytes_gathered: float = 0.0  # this chip's tp/ep shard of the layer weights, in gather dtype
    weight_tensors: int = 0


def expert_load_imbalance(tokens_x_k: float, ep: int) -> float:
    """Expected busiest-chip load / mean load in an ep group under uniform top-k routing (normal approx.)."""
    if ep <= 1 or tokens_x_k <= 0:
        return 1.0
    sigma = math.sqrt(tokens_x_k * (1 - 1 / ep))
    return 1.0 + sigma * math.sqrt(2 * math.log(ep)) / tokens_x_k


def _mm(ctx: Context, plan: LayerPlan, name: str, m: float, n: float, k: float, batch: float = 1) -> None:
    _mms(ctx, plan, name, [(m, n, k, batch)])


def _mms(ctx: Context, plan: LayerPlan, name: str, shapes: list[tuple[float, float, float, float]]) -> None:
    """Weight matmuls [batch] x [m, k] @ [k, n] summed into one op (forward; backward dX and dW)."""
    c = ctx.chip
    b = ctx.act_bytes
    fwd, bwd = [], []
    for m, n, k, batch in shapes:
        fwd.append(matmul_cost(c, m, n, k, batch, in_bytes=b, weight_bytes=ctx.weight_bytes, out_bytes=b,
                               dtype=ctx.mxu_dtype, name=name))
        bwd.append(matmul_cost(c, m, k, n, batch, in_bytes=b, out_bytes=b, name=name + "_dx"))
        bwd.append(matmul_cost(c, k, n, m, batch, in_bytes=b, weight_bytes=b, out_bytes=4, name=name + "_dw"))
    plan.fwd[name] = fwd[0] if len(fwd) == 1 else _sum(name, "matmul", *fwd)
    plan.bwd[name] = _sum(name + "_bwd", "matmul", *bwd)


def _ew(ctx: Context, plan: LayerPlan, name: str, n: float, n_in: float = 1, n_out: float = 1, ops: float = 4) -> None:
    fwd = elementwise_cost(ctx.chip, n, n_inputs=n_in, n_outputs=n_out, bytes_per_element=ctx.act_bytes,
                           vpu_ops=ops, name=name)
    plan.fwd[name] = fwd
    # backward reads the saved inputs and the incoming gradient, writes input gradients: about twice the traffic
    plan.bwd[name] = fwd.scaled(2.0, name + "_bwd")


def _sum(name: str, kind: str, *costs: OpCost) -> OpCost:
    return OpCost(name, kind, sum(x.flops for x in costs), sum(x.hbm_bytes for x in costs),
                  sum(x.mxu_seconds for x in costs), sum(x.vpu_seconds for x in costs),
                  sum(x.hbm_seconds for x in costs))


def _attention(ctx: Context, plan: LayerPlan, heads: float, kv_heads: float, qk_dim: int | None = None,
               v_dim: int | None = None) -> None:
    cfg = ctx.cfg
    s = ctx.seq_len
    kv_len = ctx.kv_len or s
    qk = cfg.head_dim if qk_dim is None else qk_dim
    kw = dict(n_kv_heads=kv_heads, causal=cfg.causal, kind=ctx.attention, block_q=ctx.block_q,
              block_kv=ctx.block_kv, in_bytes=ctx.act_bytes, calibration=ctx.calibration,
              v_head_dim=cfg.v_head_dim if v_dim is None else v_dim, window=ctx.window,
              kv_bytes=ctx.act_bytes if ctx.training else ctx.kv_bytes)
    # context parallelism: balanced (zig-zag) split of the causal work over cp
    cp = ctx.layout.cp
    fwd = attention_cost(ctx.chip, ctx.seqs, heads, s, kv_len, qk, **kw).scaled(1 / cp, "attention")
    plan.fwd["attention"] = fwd
    if ctx.training:
        plan.bwd["attention"] = attention_cost(ctx.chip, ctx.seqs, heads, s, kv_len, qk, backward=True,
                                               **kw).scaled(1 / cp, "attention_bwd")


def _mla(ctx: Context, plan: LayerPlan, t: float, heads: float) -> None:
    """MLA projections and attention [DSV2]: q (via q_lora), joint kv latent, its up-projection, out."""
    cfg = ctx.cfg
    d, rope, lat = cfg.d_model, cfg.qk_rope_head_dim, cfg.kv_lora_rank
    nope = cfg.head_dim - rope
    q = heads * cfg.head_dim
    # the down-projections are small and not split over tp (every tp rank computes them)
    shapes = [(t, cfg.q_lora_rank, d, 1), (t, q, cfg.q_lora_rank, 1)] if cfg.q_lora_rank else [(t, q, d, 1)]
    shapes.append((t, lat + rope, d, 1))
    if ctx.absorb_mla:  # W_UK folded into the queries: per head [t, nope] @ [nope, lat]
        shapes.append((t, lat, nope, heads))
    else:
        shapes.append((t, heads * (nope + cfg.v_head_dim), lat, 1))
    _mms(ctx, plan, "qkv", shapes)
    _ew(ctx, plan, "rope", t * (heads + 1) * rope, 1, 1, ops=6)
    if ctx.absorb_mla:  # MQA over the latent: qk width lat + rope, values lat; then W_UV per head
        _attention(ctx, plan, heads, 1.0, lat + rope, lat)
        _mms(ctx, plan, "out", [(t, cfg.v_head_dim, lat, heads), (t, d, heads * cfg.v_head_dim, 1)])
    else:
        _attention(ctx, plan, heads, heads)
        _mm(ctx, plan, "out", t, d, heads * cfg.v_head_dim)


def _experts(ctx: Context, plan: LayerPlan, t: float) -> None:
    """Routed experts of one MoE layer on the busiest chip of the ep group."""
    cfg, lay, chip = ctx.cfg, ctx.layout, ctx.chip
    e_loc = cfg.n_experts / lay.ep
    fe = cfg.d_ff_expert / lay.tp
    d = cfg.d_model
    mean = lay.ep * t * cfg.top_k / cfg.n_experts  # tokens per expert (balanced)
    if cfg.capacity_factor:  # fixed capacity buffers: every expert computes cf * mean slots
        load = cfg.capacity_factor * mean
        chip_factor = 1.0
    else:
        load = 0.0  # dropless: ragged groups (`gmm` below)
        chip_factor = ctx.router_imbalance or expert_load_imbalance(t * cfg.top_k, lay.ep)
    n_in = (cfg.mlp_matrices - 1) * fe
    b = ctx.act_bytes
    hit = 1.0 - math.exp(-mean) if not cfg.capacity_factor else 1.0  # experts that got any token
    devices = kernels.devices_per_chip(chip)
    rows = t * cfg.top_k * chip_factor / devices  # sorted token copies one device's kernel sees

    def per_expert(role: str, n: float, k: float) -> float:
        """Capacity buffers: dense per-expert matmuls at the simulator's cost for the padded load."""
        if load <= 0:
            return 0.0
        if role == "m":  # [load, k] @ [k, n]
            return simcost.mxu_seconds(chip, 1, math.ceil(load), n, k) * e_loc
        return simcost.mxu_seconds(chip, 1, k, n, math.ceil(load)) * e_loc  # dW: [k, load] @ [load, n]

    def gmm(role: str, n: float, k: float) -> float:
        """Dropless routing: a grouped matmul over the device's sorted rows (`perfmodel.kernels`), every m tile
        visited once per group in it, each visit one full tile on the MXU (double-buffered weight tiles: the
        kernel streams tile after tile). role 'w': the weight gradient, m contracted ([k, tm] @ [tm, n])."""
        tm, tk, tn = kernels.gmm_chip_tiling(chip, rows, int(k), int(n), transposed=role == "w")
        visits = math.ceil(rows / tm) * kernels.gmm_visit_factor(rows, e_loc * hit, tm)
        tiles = devices * visits * math.ceil(k / tk) * math.ceil(n / tn)
        if role == "m":
            return simcost.mxu_seconds(chip, tiles, tm, tn, tk, double_buffered=True)
        return simcost.mxu_seconds(chip, tiles, tk, tn, tm, double_buffered=True)

    def grouped(name: str, shapes: list[tuple[str, float, float, int]], flops_per_token: float) -> OpCost:
        """shapes: (role, n, k, calls): `calls` matrices of [k, n] per expert, one kernel call each."""
        cost = per_expert if cfg.capacity_factor else gmm
        mxu = sum(calls * cost(role, n, k) for role, n, k, calls in shapes)
        tokens = t * cfg.top_k * chip_factor
        fwd_shapes = [(n, k, calls) for role, n, k, calls in shapes if role == "m"]
        weights = e_loc * hit * sum(n * k * calls for n, k, calls in fwd_shapes) * ctx.weight_bytes
        hbm = weights + tokens * sum((k + n) * calls for n, k, calls in fwd_shapes) * b
        return OpCost(name, "moe_matmul", flops_per_token * tokens, hbm, mxu, 0.0, hbm / chip.hbm_bw)

    # the gate and up matrices are separate kernel calls (MaxText moe.py without prefuse_moe_weights)
    gates = cfg.mlp_matrices - 1
    plan.fwd["experts_in"] = grouped("experts_in", [("m", fe, d, gates)], 2 * d * n_in)
    plan.fwd["experts_act"] = elementwise_cost(chip, t * cfg.top_k * chip_factor * fe, n_inputs=cfg.mlp_matrices - 1,
                                               bytes_per_element=b, vpu_ops=4, name="experts_act")
    plan.fwd["experts_out"] = grouped("experts_out", [("m", d, fe, 1)], 2 * d * fe)
    if ctx.training:
        plan.bwd["experts_in"] = grouped("experts_in_bwd", [("m", d, fe, gates), ("w", fe, d, gates)], 4 * d * n_in)
        plan.bwd["experts_act"] = plan.fwd["experts_act"].scaled(2.0, "experts_act_bwd")
        plan.bwd["experts_out"] = grouped("experts_out_bwd", [("m", fe, d, 1), ("w", d, fe, 1)], 4 * d * fe)


def layer_plan(ctx: Context, kind: str) -> LayerPlan:
    """Ops and collectives of one `kind` ('dense' | 'moe') layer on one chip (attention window: ctx.window)."""
    cfg, lay = ctx.cfg, ctx.layout
    plan = LayerPlan(kind)
    t = ctx.tokens
    d = cfg.d_model
    tp = lay.tp
    sp_div = tp if lay.sp else 1
    heads = cfg.n_heads / tp
    kv_heads = max(cfg.n_kv_heads / tp, 1.0)  # fewer kv heads than tp: replicated
    q, kv = heads * cfg.head_dim, kv_heads * cfg.head_dim
    # ---- attention sublayer
    _ew(ctx, plan, "norm1", t * d / sp_div, 1, 1, ops=5)
    if cfg.is_mla:
        _mla(ctx, plan, t, heads)
    else:
        _mm(ctx, plan, "qkv", t, q + kv + kv_heads * cfg.v_head_dim, d)
        _ew(ctx, plan, "rope", t * (q + kv), 1, 1, ops=6)
        _attention(ctx, plan, heads, kv_heads)
        _mm(ctx, plan, "out", t, d, heads * cfg.v_head_dim)
    _ew(ctx, plan, "residual1", t * d / sp_div, 2, 1, ops=1)
    _ew(ctx, plan, "norm2", t * d / sp_div, 1, 1, ops=5)
    # ---- MLP or MoE sublayer
    pc = param_counts(cfg)
    if kind == "moe":
        e = cfg.n_experts
        _mm(ctx, plan, "router", t, e, d)
        _ew(ctx, plan, "router_softmax", t * e, 1, 1, ops=12)
        _ew(ctx, plan, "dispatch", t * cfg.top_k * d, 1 / cfg.top_k, 1, ops=1)
        _experts(ctx, plan, t)
        _ew(ctx, plan, "combine", t * cfg.top_k * d, 1, 1 / cfg.top_k, ops=2)
        if cfg.d_ff_shared:
            fs = cfg.d_ff_shared / tp
            _mm(ctx, plan, "shared_in", t, (cfg.mlp_matrices - 1) * fs, d)
            _ew(ctx, plan, "shared_act", t * fs, cfg.mlp_matrices - 1, 1, ops=4)
            _mm(ctx, plan, "shared_out", t, d, fs)
        weights = (pc.attention_per_layer + pc.shared_per_layer + pc.router_per_layer) / tp \
            + pc.routed_per_layer / (tp * lay.ep)
        plan.weight_tensors = 4 + 1 + cfg.mlp_matrices * (1 + (1 if cfg.d_ff_shared else 0)) + 2
    else:
        f = cfg.d_ff / tp
        _mm(ctx, plan, "mlp_in", t, (cfg.mlp_matrices - 1) * f, d)
        _ew(ctx, plan, "act", t * f, cfg.mlp_matrices - 1, 1, ops=4)
        _mm(ctx, plan, "mlp_out", t, d, f)
        weights = (pc.attention_per_layer + pc.dense_mlp_per_layer) / tp
        plan.weight_tensors = 4 + cfg.mlp_matrices + 2
    _ew(ctx, plan, "residual2", t * d / sp_div, 2, 1, ops=1)
    plan.weight_bytes_gathered = weights * ctx.gather_bytes
    _layer_comms(ctx, plan, weights)
    return plan


def _ici(ctx: Context, plan: LayerPlan, name: str, kind: str, axis: str, phase: str, nbytes: float,
         count: float = 1.0) -> None:
    axes = ctx.axes.get(axis, [])
    if not axes or nbytes <= 0 or count <= 0:
        return
    sec = collective_time(kind, nbytes, axes, ctx.calibration.ici_hop_latency_s) * count
    plan.comms.append(Comm(name, kind, axis, phase, nbytes * count, sec))


def _dcn(ctx: Context, plan: LayerPlan, name: str, kind: str, axis: str, phase: str, nbytes: float,
         n: int, count: int) -> None:
    if n <= 1 or nbytes <= 0:
        return
    bw, lat = dcn_collective_terms(kind, nbytes / count, n, ctx.dcn_bw, ctx.calibration.dcn_hop_latency_s, count)
    plan.comms.append(Comm(name, kind, axis, phase, nbytes, bw, "dcn"))
    plan.comms.append(Comm(name, kind, axis, phase, 0.0, lat, "dcn_sync"))


def _layer_comms(ctx: Context, plan: LayerPlan, weights: float) -> None:
    """FSDP / DP / TP / EP / CP collectives of one layer (and their DCN counterparts)."""
    cfg, lay = ctx.cfg, ctx.layout
    t, d, b = ctx.tokens, cfg.d_model, ctx.act_bytes
    w_gather = weights * ctx.gather_bytes
    w_reduce = weights * ctx.reduce_bytes
    # Weights: FSDP all-gathers them for the forward and again for the backward, reduce-scatters the grads.
    if ctx.training:
        _ici(ctx, plan, "fsdp_ag_w", "all_gather", "fsdp", "fwd", w_gather)
        _ici(ctx, plan, "fsdp_ag_w", "all_gather", "fsdp", "bwd", w_gather)
        _ici(ctx, plan, "fsdp_rs_g", "reduce_scatter", "fsdp", "bwd", w_reduce)
        shard = w_reduce / lay.fsdp
        _ici(ctx, plan, "dp_ar_g", "all_reduce", "dp", "bwd", shard)
        n = plan.weight_tensors
        _dcn(ctx, plan, "dcn_fsdp_ag_w", "all_gather", "dcn_fsdp", "fwd", w_gather / lay.fsdp, lay.dcn_fsdp, n)
        _dcn(ctx, plan, "dcn_fsdp_ag_w", "all_gather", "dcn_fsdp", "bwd", w_gather / lay.fsdp, lay.dcn_fsdp, n)
        _dcn(ctx, plan, "dcn_fsdp_rs_g", "reduce_scatter", "dcn_fsdp", "bwd", shard, lay.dcn_fsdp, n)
        _dcn(ctx, plan, "dcn_dp_ar_g", "all_reduce", "dcn_dp", "bwd", shard / lay.dcn_fsdp, lay.dcn_dp, n)
    else:
        # Inference with weights sharded over fsdp: the weight-gathered layout of Pope et al., "Efficiently
        # Scaling Transformer Inference" (MLSys 2023, arXiv:2211.05102) section 3.2.3: each layer's weights are
        # all-gathered over the fsdp chips while the batch stays split over them (no activation collectives).
        _ici(ctx, plan, "fsdp_ag_w", "all_gather", "fsdp", "fwd", w_gather)
    # Tensor parallelism: all-gather the sublayer input, reduce-scatter its output (Megatron-SP), per pass.
    act = t * d * b
    mlp_first, mlp_last = ("mlp_in", "mlp_out") if plan.kind == "dense" else ("router", "experts_out")
    for sub, first, last in (("attn", "qkv", "out"), ("mlp", mlp_first, mlp_last)):
        _ici(ctx, plan, f"tp_ag_{sub}", "all_gather", "tp", "fwd", act)
        _ici(ctx, plan, f"tp_rs_{sub}", "reduce_scatter", "tp", "fwd", act)
        if ctx.training:
            _ici(ctx, plan, f"tp_ag_{sub}", "all_gather", "tp", "bwd", act)
            _ici(ctx, plan, f"tp_rs_{sub}", "reduce_scatter", "tp", "bwd", act)
            # recomputing the first matmul needs its gathered input again, the last one its scattered output
            if first in ctx.recompute:
                _ici(ctx, plan, f"tp_ag_{sub}", "all_gather", "tp", "recompute", act)
            if last in ctx.recompute:
                _ici(ctx, plan, f"tp_rs_{sub}", "reduce_scatter", "tp", "recompute", act)
    # Expert parallelism: dispatch and combine all-to-alls (each chip holds t*k token copies of d).
    if plan.kind == "moe":
        a2a = lay.ep * t * cfg.top_k * d * b
        _ici(ctx, plan, "ep_a2a", "all_to_all", "ep", "fwd", a2a, count=2)
        if ctx.training:
            _ici(ctx, plan, "ep_a2a", "all_to_all", "ep", "bwd", a2a, count=2)
            if "a2a_dispatch" in ctx.recompute:
                _ici(ctx, plan, "ep_a2a", "all_to_all", "ep", "recompute", a2a)
    if lay.cp > 1:
        _cp_comms(ctx, plan)


def _cp_comms(ctx: Context, plan: LayerPlan) -> None:
    """Context parallelism (`perfmodel.longctx`): all-gather K/V and reduce-scatter dK/dV (overlapped like any
    collective), or a ring of K/V shards whose steps hide behind the attention blocks (only the excess is
    exposed, network 'exposed'); a sliding-window layer only needs its neighbour's last `window` keys."""
    lay, b = ctx.layout, ctx.act_bytes
    vol = longctx.cp_volumes(ctx.cfg, ctx.seqs, ctx.seq_len, lay.cp, lay.tp, b, ctx.window)
    passes = [("fwd", "fwd")]
    if ctx.training:
        passes.append(("bwd", "bwd"))
        if "attention" in ctx.recompute:
            passes.append(("recompute", "fwd"))
    axes = ctx.axes.get("cp", [])
    lat = ctx.calibration.ici_hop_latency_s
    if ctx.window and vol.halo_bytes:  # the previous shard's last `window` keys, one neighbour exchange
        for phase, _ in passes:
            sec = collective_time("permute", vol.halo_bytes * lay.cp, axes, lat) * (2 if phase == "bwd" else 1)
            plan.comms.append(Comm("cp_halo_kv", "permute", "cp", phase, vol.halo_bytes, sec))
        return
    if ctx.cp_mode == "ring":
        for phase, src in passes:
            attn = (plan.fwd if src == "fwd" else plan.bwd)["attention"].calibrated_seconds(ctx.calibration)
            step = collective_time("permute", vol.shard_bytes * lay.cp, axes, lat)
            mult = 2.0 if phase == "bwd" else 1.0  # backward passes K/V and their gradient accumulators
            exposed = longctx.ring_exposed_seconds(attn, mult * step, lay.cp)
            plan.comms.append(Comm("cp_ring_kv", "permute", "cp", phase, mult * vol.shard_bytes * (lay.cp - 1),
                                   exposed, "exposed"))
        return
    if ctx.cp_mode != "all_gather":
        raise ValueError(f"unknown context-parallel mode {ctx.cp_mode!r}; valid: all_gather, ring")
    for phase, _ in passes:
        kind, name = ("reduce_scatter", "cp_rs_dkv") if phase == "bwd" else ("all_gather", "cp_ag_kv")
        _ici(ctx, plan, name, kind, "cp", phase, vol.gathered_bytes)

