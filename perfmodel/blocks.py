"""One transformer layer on one chip: its forward/backward ops and its collectives, under a layout.

`layer_plan(ctx, kind)` returns a `LayerPlan`: for every forward op (norms, projections, attention, MLP or the
MoE block) its forward and backward `OpCost` on the chip's local shapes, and the collectives of the layer by
phase. Shapes per chip: t = tokens of the chip's data shard (sequences x seq_len / cp); projections split their
head / hidden dimension over tp; experts are split over ep (and their hidden dimension over tp); with
sequence-parallel activations the d_model-wide elementwise work is split over tp too.

MoE: routed tokens reach the experts through an all-to-all over ep; the per-expert matmuls are costed by the
simulator (`perfmodel.simcost`) for a spread of expert loads around the mean (top-k routing is a multinomial;
eight normal quantiles of the per-expert load), so MXU padding of uneven expert tiles is counted, and the
busiest chip of the ep group sets the pace (expected maximum of the chip loads, or `router_imbalance`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from torchtpu.perfmodel import simcost
from torchtpu.perfmodel.calibration import Calibration
from torchtpu.perfmodel.collectives import Axis, collective_time, dcn_collective_terms
from torchtpu.perfmodel.config import ModelConfig
from torchtpu.perfmodel.flops import param_counts
from torchtpu.perfmodel.layout import Layout
from torchtpu.perfmodel.ops import OpCost, attention_cost, elementwise_cost, matmul_cost
from torchtpu.sim.chips import ChipSpec

__all__ = ["Comm", "Context", "LayerPlan", "expert_load_imbalance", "layer_plan"]

# Eight equal-probability quantiles of the standard normal (midpoints of octiles).
_Z8 = (-1.534, -0.887, -0.489, -0.157, 0.157, 0.489, 0.887, 1.534)


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


def _mm(ctx: Context, plan: LayerPlan, name: str, m: float, n: float, k: float) -> None:
    c = ctx.chip
    b = ctx.act_bytes
    plan.fwd[name] = matmul_cost(c, m, n, k, in_bytes=b, weight_bytes=ctx.weight_bytes, out_bytes=b, name=name)
    dx = matmul_cost(c, m, k, n, in_bytes=b, out_bytes=b, name=name + "_dx")
    dw = matmul_cost(c, k, n, m, in_bytes=b, weight_bytes=b, out_bytes=4, name=name + "_dw")
    plan.bwd[name] = _sum(name + "_bwd", "matmul", dx, dw)


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


def _attention(ctx: Context, plan: LayerPlan, heads: float, kv_heads: float) -> None:
    cfg = ctx.cfg
    s = ctx.seq_len
    kv_len = ctx.kv_len or s
    kw = dict(n_kv_heads=kv_heads, causal=cfg.causal, kind=ctx.attention, block_q=ctx.block_q,
              block_kv=ctx.block_kv, in_bytes=ctx.act_bytes, calibration=ctx.calibration)
    # context parallelism: balanced (zig-zag) split of the causal work over cp
    cp = ctx.layout.cp
    fwd = attention_cost(ctx.chip, ctx.seqs, heads, s, kv_len, cfg.head_dim, **kw).scaled(1 / cp, "attention")
    plan.fwd["attention"] = fwd
    if ctx.training:
        plan.bwd["attention"] = attention_cost(ctx.chip, ctx.seqs, heads, s, kv_len, cfg.head_dim, backward=True,
                                               **kw).scaled(1 / cp, "attention_bwd")


def _experts(ctx: Context, plan: LayerPlan, t: float) -> None:
    """Routed experts of one MoE layer on the busiest chip of the ep group."""
    cfg, lay, chip = ctx.cfg, ctx.layout, ctx.chip
    e_loc = cfg.n_experts / lay.ep
    fe = cfg.d_ff_expert / lay.tp
    d = cfg.d_model
    mean = lay.ep * t * cfg.top_k / cfg.n_experts  # tokens per expert (balanced)
    if cfg.capacity_factor:  # fixed capacity buffers: every expert computes cf * mean slots
        loads = [cfg.capacity_factor * mean]
        chip_factor = 1.0
    else:
        sd = math.sqrt(max(mean * (1 - 1 / cfg.n_experts), 0.0))
        loads = [max(0.0, mean + z * sd) for z in _Z8]
        chip_factor = ctx.router_imbalance or expert_load_imbalance(t * cfg.top_k, lay.ep)
    n_in = (cfg.mlp_matrices - 1) * fe
    b = ctx.act_bytes

    def grouped(name: str, shapes: list[tuple[str, int, int]], flops_per_token: float) -> OpCost:
        mxu = 0.0
        for role, n, k in shapes:
            vals = []
            for load in loads:
                if load <= 0:
                    continue
                if role == "m":  # activations [load, k] @ weights [k, n]
                    vals.append(simcost.mxu_seconds(chip, 1, math.ceil(load), n, k))
                else:  # weight gradient [k, load] @ [load, n]: contraction over the expert's tokens
                    vals.append(simcost.mxu_seconds(chip, 1, k, n, math.ceil(load)))
            mxu += sum(vals) / len(loads)
        mxu *= e_loc * chip_factor
        tokens = t * cfg.top_k * chip_factor
        hit = 1.0 - math.exp(-mean) if not cfg.capacity_factor else 1.0  # experts that got any token
        weights = e_loc * hit * sum(n * k for role, n, k in shapes if role == "m") * ctx.weight_bytes
        hbm = weights + tokens * sum(k + n for role, n, k in shapes if role == "m") * b
        return OpCost(name, "moe_matmul", flops_per_token * tokens, hbm, mxu, 0.0, hbm / chip.hbm_bw)

    plan.fwd["experts_in"] = grouped("experts_in", [("m", n_in, d)], 2 * d * n_in)
    plan.fwd["experts_act"] = elementwise_cost(chip, t * cfg.top_k * chip_factor * fe, n_inputs=cfg.mlp_matrices - 1,
                                               bytes_per_element=b, vpu_ops=4, name="experts_act")
    plan.fwd["experts_out"] = grouped("experts_out", [("m", d, fe)], 2 * d * fe)
    if ctx.training:
        plan.bwd["experts_in"] = grouped("experts_in_bwd", [("m", d, n_in), ("w", n_in, d)], 4 * d * n_in)
        plan.bwd["experts_act"] = plan.fwd["experts_act"].scaled(2.0, "experts_act_bwd")
        plan.bwd["experts_out"] = grouped("experts_out_bwd", [("m", fe, d), ("w", d, fe)], 4 * d * fe)


def layer_plan(ctx: Context, kind: str) -> LayerPlan:
    """Ops and collectives of one `kind` ('dense' | 'moe') layer on one chip."""
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
    _mm(ctx, plan, "qkv", t, q + 2 * kv, d)
    _ew(ctx, plan, "rope", t * (q + kv), 1, 1, ops=6)
    _attention(ctx, plan, heads, kv_heads)
    _mm(ctx, plan, "out", t, d, q)
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
    # Context parallelism: gather keys and values of the whole sequence; reduce-scatter their gradients.
    if lay.cp > 1:
        kv_w = max(cfg.n_kv_heads / lay.tp, 1.0) * cfg.head_dim
        kvb = 2 * ctx.seqs * ctx.seq_len * kv_w * b
        _ici(ctx, plan, "cp_ag_kv", "all_gather", "cp", "fwd", kvb)
        if ctx.training:
            _ici(ctx, plan, "cp_rs_dkv", "reduce_scatter", "cp", "bwd", kvb)
            if "attention" in ctx.recompute:
                _ici(ctx, plan, "cp_ag_kv", "all_gather", "cp", "recompute", kvb)

