"""HBM needed per chip for training (weights, gradients, optimizer state, activations) and serving.

Training, per chip:
* weights, gradients, optimizer state: parameters / (fsdp x tp x dcn_fsdp) (routed experts also / ep), times
  bytes per parameter (float32 master weights 4, float32 gradients 4, Adam m and v 8; [SB-train] "max params
  for pure DP with Adam ~ HBM/10" uses the same 16-ish bytes/param);
* saved activations: per token and layer, the widths the remat policy keeps (`perfmodel.remat`), x tokens of
  the chip's data shard, d_model-wide ones / tp with sequence-parallel activations, head/hidden-wide ones / tp;
  in host memory instead when offloaded;
* working set: two layers of all-gathered weights (current + prefetched) under FSDP, the widest sublayer's
  intermediates of the layer being back-propagated, and the logits (activation dtype).
Serving: weights (bf16 by default) / tp (/ ep for experts) plus the KV cache.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

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
    """Parameters stored on one chip (dense weights / (fsdp*tp*dcn_fsdp), routed experts additionally / ep)."""
    p = param_counts(cfg)
    shard = layout.fsdp * layout.tp * layout.dcn_fsdp
    return (p.total - p.expert_params) / shard + p.expert_params / (shard * layout.ep)


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
) -> MemoryReport:
    """HBM per chip for one training step (see module docstring for what is counted)."""
    chip = get_chip(chip)
    n_params = params_per_chip(cfg, layout)
    tp = layout.tp
    sp_div = tp if layout.sp else 1
    tokens = seqs_per_shard * seq_len / layout.cp
    wd, wh = _activation_widths(cfg, layout, remat)
    saved = tokens * (wd / sp_div + wh / tp) * act_bytes
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
    host = saved if offload else 0.0
    activations = 2 * per_layer_saved if offload else saved
    return MemoryReport(
        weights=n_params * param_bytes,
        grads=n_params * grad_bytes,
        optimizer=n_params * optimizer_bytes,
        activations=activations,
        working=gathered + layer_full + logits + scores,
        kv_cache=0.0,
        host=host,
        capacity=chip.hbm_bytes,
        usable=chip.hbm_bytes * calibration.hbm_usable_fraction,
    )


def kv_cache_bytes(cfg: ModelConfig, batch: float, context: int, *, kv_bytes: float = 2, tp: int = 1) -> float:
    """KV cache of `batch` sequences of `context` tokens on one chip (kv heads split over tp, at least one)."""
    kv_w = max(cfg.n_kv_heads / tp, 1.0) * cfg.head_dim
    return 2.0 * batch * context * kv_w * cfg.n_layers * kv_bytes


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
) -> MemoryReport:
    """HBM per chip for serving: weights (bf16 default) sharded over tp (and ep), KV cache, logits."""
    chip = get_chip(chip)
    n_params = params_per_chip(cfg, Layout(tp=layout.tp, ep=layout.ep))
    kv = kv_cache_bytes(cfg, batch_per_replica, context, kv_bytes=kv_bytes, tp=layout.tp)
    working = batch_per_replica * cfg.vocab_size / layout.tp * 4
    return MemoryReport(
        weights=n_params * weight_bytes, grads=0.0, optimizer=0.0, activations=0.0, working=working,
        kv_cache=kv, host=0.0, capacity=chip.hbm_bytes, usable=chip.hbm_bytes * calibration.hbm_usable_fraction,
    )
