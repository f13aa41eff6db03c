"""HBM needed per chip for training (weights, gradients, optimizer state, activations) and serving.

Training, per chip:
* weights, gradients, optimizer state: parameters / (fsdp x tp x dcn_fsdp) (routed experts also / ep), times
  bytes per parameter (float32 master weights 4, float32 gradients 4, Adam m and v 8; [SB-train] "max params
  for pure DP with Adam ~ HBM/10" uses the same 16-ish bytes/param);
* saved activations: per token and layer, the widths the remat policy keeps (`perfmodel.remat`), x tokens of
  the chip's data shard, d_model-wide ones / tp with sequence-parallel activations, head/hidden-wide ones / tp;
  in host memory instead when offloaded;
* working set: two layers of all-gathered weights (current + prefetched) under FSDP, the widest sublayer's
  intermediates of the layer being back-propagated, the logits (activation dtype), and with context
  parallelism the K/V the layer gathers (`perfmodel.longctx.cp_working_bytes`);
* pipeline parallelism: a chip holds the layers of its stage (layers / stages, plus the larger embedding
  table) and the saved activations of the microbatches in flight (`perfmodel.pipeline.inflight_fraction`).
Serving: weights (bf16 by default; int8/fp8: 1 byte) / tp (/ ep for experts) plus the KV cache (MLA latent,
sliding windows and paging in `perfmodel.longctx`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from torchtpu.perfmodel import longctx
from torchtpu.perfmodel.calibration import DEFAULT, Calibration
from torchtpu.perfmodel.config import ModelConfig
from torchtpu.perfmodel.flops import param_counts
from torchtpu.perfmodel.layout import Layout
from torchtpu.perfmodel.remat import saved_widths
from torchtpu.sim.chips import ChipSpec, get_chip

__all__ = ["MemoryReport", "kv_cache_bytes", "params_per_chip", "serving_memory", "training_memory"]


@dataclass(frozen=True)
class MemoryReport:
    """Bytes per chip by category; `total` is what must fit in HBM (`host` is offloaded to host memory)."""

    weights: float
    grads: float
    optimizer: float
    activations: float
    working: float
    kv_cache: float
    host: float
    capacity: float
    usable: float

    @property
    def total(self) -> float:
        return self.weights + self.grads + self.optimizer + self.activations + self.working + self.kv_cache

    @property
    def fits(self) -> bool:
        return self.total <= self.usable

    def to_dict(self) -> dict[str, float]:
        d = asdict(self)
        d.update(total=self.total, fits=self.fits)
        return d


def params_per_chip(cfg: ModelConfig, layout: Layout) -> float:
    """Parameters stored on one chip (dense weights / (fsdp*tp*dcn_fsdp), routed experts additionally / ep);
    with pipeline stages, the stage's share of the layers plus the larger of the two embedding tables."""
    p = param_counts(cfg)
    shard = layout.fsdp * layout.tp * layout.dcn_fsdp
    emb = p.embedding + p.unembedding
    if layout.stages > 1:
        emb = max(p.embedding, p.unembedding)
    layers = (p.total - p.embedding - p.unembedding - p.expert_params) / layout.stages
    experts = p.expert_params / layout.stages
    return (layers + emb) / shard + experts / (shard * layout.ep)


def _activation_widths(cfg: ModelConfig, layout: Layout, policy: str) -> tuple[float, float]:
    """Summed over layers: (d-wide, tp-sharded) saved widths per token."""
    tp = layout.tp
    kvw = max(cfg.n_kv_heads / tp, 1.0) * cfg.head_dim * tp
    wd = wh = 0.0
    for kind in cfg.layer_kinds():
        moe = kind == "moe"
        a, b = saved_widths(policy, d=cfg.d_model, q=cfg.q_width, kv=kvw, f_in=(cfg.mlp_matrices - 1) * cfg.d_ff,
                            f=cfg.d_ff, moe_in=cfg.top_k * (cfg.mlp_matrices - 1) * cfg.d_ff_expert,
                            moe_f=cfg.top_k * cfg.d_ff_expert, moe=moe)
        wd += a
        wh += b
    return wd, wh


def training_memory(
    cfg: ModelConfig,
    chip: ChipSpec | str,
    layout: Layout,
    seqs_per_shard: float,
    seq_len: int,
    *,
    remat: str = "full",
    offload: bool = False,
    param_bytes: float = 4,
    grad_bytes: float = 4,
    optimizer_bytes: float = 8,
    act_bytes: float = 2,
    gather_bytes: float = 2,
    attention: str = "flash",
    calibration: Calibration = DEFAULT,
    cp_mode: str = "all_gather",
    inflight: float = 1.0,
) -> MemoryReport:
    """HBM per chip for one training step (see module docstring for what is counted); `inflight` is the
    fraction of the shard's sequences whose saved activations a pipeline stage holds at once."""
    chip = get_chip(chip)
    n_params = params_per_chip(cfg, layout)
    tp = layout.tp
    sp_div = tp if layout.sp else 1
    tokens = seqs_per_shard * seq_len / layout.cp
    wd, wh = _activation_widths(cfg, layout, remat)
    saved = tokens * (wd / sp_div + wh / tp) * act_bytes * inflight / layout.stages
    per_layer_saved = saved / max(1, cfg.n_layers)
    # the layer being back-propagated: its widest sublayer's intermediates (values; gradients reuse buffers)
    kvw = max(cfg.n_kv_heads / tp, 1.0) * cfg.head_dim
    mlp_w = max((cfg.mlp_matrices * cfg.d_ff) if cfg.n_dense_layers else 0,
                cfg.top_k * cfg.mlp_matrices * cfg.d_ff_expert + cfg.mlp_matrices * cfg.d_ff_shared)
    layer_full = tokens * max(mlp_w, 2 * cfg.q_width + 2 * kvw * tp) / tp * act_bytes
    p = param_counts(cfg)
    layer_weights = max(p.per_layer_dense if cfg.n_dense_layers else 0,
                        p.per_layer_moe - p.routed_per_layer * (1 - 1 / layout.ep) if cfg.n_moe_layers else 0)
    gathered = 2 * layer_weights / tp * gather_bytes if layout.fsdp * layout.dcn_fsdp > 1 else 0.0
    logits = tokens * cfg.vocab_size / tp * act_bytes  # logits (their gradient reuses the buffer)
    scores = 0.0
    if attention == "naive":
        scores = seqs_per_shard * cfg.n_heads / tp * seq_len * seq_len / layout.cp * 4
    windows = {cfg.window(a) for a in cfg.layer_attention()}
    kv_cp = max(longctx.cp_working_bytes(cfg, seqs_per_shard, seq_len, layout.cp, tp, act_bytes, cp_mode, w)
                for w in windows)
    host = saved if offload else 0.0
    activations = 2 * per_layer_saved * layout.stages if offload else saved
    return MemoryReport(
        weights=n_params * param_bytes,
        grads=n_params * grad_bytes,
        optimizer=n_params * optimizer_bytes,
        activations=activations,
        working=gathered + layer_full + logits + scores + kv_cp,
        kv_cache=0.0,
        host=host,
        capacity=chip.hbm_bytes,
        usable=chip.hbm_bytes * calibration.hbm_usable_fraction,
    )


def kv_cache_bytes(cfg: ModelConfig, batch: float, context: int, *, kv_bytes: float = 2, tp: int = 1,
                   page_tokens: int | None = None) -> float:
    """KV cache of `batch` sequences of `context` tokens on one chip: per layer `longctx.kv_cache_per_token`
    elements for each cached token (a sliding-window layer caches at most its window), in whole pages when
    `page_tokens` is given."""
    per_token = longctx.kv_cache_per_token(cfg, tp)
    total = 0.0
    for a in cfg.layer_attention():
        w = cfg.window(a)
        total += longctx.paged_tokens(min(context, w) if w else context, page_tokens)
    return batch * total * per_token * kv_bytes


def serving_memory(
    cfg: ModelConfig,
    chip: ChipSpec | str,
    layout: Layout,
    batch_per_replica: float,
    context: int,
    *,
    weight_bytes: float = 2,
    kv_bytes: float = 2,
    calibration: Calibration = DEFAULT,
    page_tokens: int | None = None,
    extra_weights: float = 0.0,
) -> MemoryReport:
    """HBM per chip for serving: weights (bf16 default) sharded over tp (and ep, and fsdp: weight-gathered), KV
    cache and logits of this chip's sequences (the replica's batch split over fsdp); `extra_weights` adds bytes
    per chip (e.g. a speculative-decoding draft model)."""
    chip = get_chip(chip)
    n_params = params_per_chip(cfg, Layout(tp=layout.tp, ep=layout.ep, fsdp=layout.fsdp))
    seqs = batch_per_replica / layout.fsdp
    kv = kv_cache_bytes(cfg, seqs, context, kv_bytes=kv_bytes, tp=layout.tp, page_tokens=page_tokens)
    working = seqs * cfg.vocab_size / layout.tp * 4
    return MemoryReport(
        weights=n_params * weight_bytes + extra_weights, grads=0.0, optimizer=0.0, activations=0.0, working=working,
        kv_cache=kv, host=0.0, capacity=chip.hbm_bytes, usable=chip.hbm_bytes * calibration.hbm_usable_fraction,
    )
