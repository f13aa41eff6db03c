"""Step time of an eager PyTorch training step (op by op, no compiler) of a dense decoder under DDP, FSDP2 or TP.

`perfmodel.training` predicts an XLA-compiled step (fused element-wise work, flash attention, overlap by a
calibrated fraction). An eager program is another program: every ATen op is one kernel that streams its operands
through HBM, and the collectives of PyTorch's DDP / FSDP2 / DTensor sit at fixed places in the kernel order. This
module costs that program and runs it through the rules of the device, so exposure comes from the schedule:

* kernels: matmuls priced by the simulator's own matmul rules (`perfmodel.simcost`); every other ATen kernel is
  HBM traffic at the chip's HBM bandwidth, with the bytes per element of its operands. Which kernels a module
  runs is PyTorch's eager decomposition, counted once from the op trace (`_NORM_FWD` ...): nn.RMSNorm upcasts to
  fp32 and runs pow, mean, add, rsqrt, mul, mul, downcast; F.silu(g) * u; softmax over materialised scores;
  cross-entropy on fp32 logits. These are counts of kernels and operand bytes, not fitted constants;
* the schedule (a TPU has one TensorCore): the host issues each launch after the chip's launch overhead; kernels
  run in issue order, one at a time; a collective runs on the ICI, in issue order, from when the work issued
  before it has finished (its inputs) and the ICI is free; a kernel that reads a collective's result waits for it.
  Priced by `torchtpu.sim.topology` (the simulator's torus formulas) on the default slice shape for N chips;
* DDP: PyTorch's Reducer buckets (reverse parameter order, 1 MiB first bucket, 25 MiB after); each gradient is
  copied into its bucket scaled by 1/world (`mul.out`), a full bucket's all-reduce is issued at once, and at the
  end of the backward every bucket is copied back once its all-reduce is done: the last bucket's all-reduce has
  only the earlier buckets' copy-back to hide behind;
* FSDP2 (`fully_shard` per block and the root, reshard after forward): a unit's all-gather = copy-in of its
  shards, the all-gather, copy-out; forward units gather when the program reaches them (the copy-in runs after
  the previous unit's kernels, so the all-gather cannot hide behind them); backward gathers the last block after
  the loss and prefetches block i-1 when block i starts; gradients are packed (`cat`) and reduce-scattered after
  each unit's backward; the optimizer waits for the last reduce-scatter;
* TP (q/k/v/gate/up column-, o/down row-parallel, row-parallel embedding, vocab-parallel loss, no sequence
  parallelism): each partial sum is copied and all-reduced before the next kernel can read it (exposed); norms,
  residuals and the embedding run on every rank's full batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from torchtpu.perfmodel.calibration import DEFAULT, Calibration
from torchtpu.perfmodel.config import ModelConfig
from torchtpu.perfmodel.flops import flops_per_token
from torchtpu.perfmodel.layout import default_slice_shape
from torchtpu.perfmodel.simcost import matmul_seconds
from torchtpu.sim.chips import ChipSpec, get_chip
from torchtpu.sim.topology import Topology

__all__ = ["LAYOUTS", "EagerStep", "predict_step", "predict_titan_step", "schedule", "titan_units"]

LAYOUTS = ("ddp", "fsdp", "tp")
DDP_FIRST_BUCKET = 1 << 20  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
DDP_BUCKET = 25 << 20  # DistributedDataParallel(bucket_cap_mb=25)

# HBM bytes per element of each eager kernel, in the order PyTorch launches them (0: a kernel on a per-token or
# per-feature vector, launched but negligible). E = tokens x hidden elements.
_NORM_FWD = (6, 8, 4, 0, 0, 8, 8, 6)  # upcast, pow, mean, +eps, rsqrt, x*r, *weight, downcast
_NORM_BWD = (6, 12, 8, 4, 0, 0, 12, 8, 4, 0, 0, 0, 8, 8, 8, 12, 12, 6)
_MASK = 6  # ones(s, s).tril(): fill, two aranges, sub, le, logical_and (s x s booleans: negligible)


@dataclass
class EagerStep:
    """Prediction of one eager step on one chip (seconds), and the schedule's figures."""

    layout: str
    n_chips: int
    step_seconds: float
    compute_seconds: float  # TensorCore busy
    comm_seconds: float  # ICI busy
    exposed_seconds: float  # ICI busy while the TensorCore is idle
    host_seconds: float  # launches x launch overhead
    launches: int
    model_flops: float  # per chip, causal attention halved (perfmodel.flops)
    mfu: float
    breakdown: dict[str, float] = field(default_factory=dict)


class _Program:
    """Kernels and collectives in issue order: ('k', name, seconds) / ('c', name, seconds, token, blocking) /
    ('w', token): the next kernel waits for the collective `token`."""

    def __init__(self, chip: ChipSpec) -> None:
        self.chip, self.items = chip, []
        self.hbm = chip.hbm_bw
        self.tokens = 0

    def k(self, name: str, seconds: float) -> None:
        self.items.append(("k", name, seconds))

    def ew(self, name: str, nbytes: float) -> None:
        self.k(name, nbytes / self.hbm)

    def passes(self, name: str, per_element: Iterable[float], elements: float) -> None:
        for b in per_element:
            self.ew(name, b * elements)

    def mm(self, name: str, m: float, n: float, k: float, batch: float = 1) -> None:
        self.k(name, matmul_seconds(self.chip, batch, m, n, k, out_dtype="bfloat16"))

    def c(self, name: str, seconds: float, blocking: bool = False) -> int:
        self.tokens += 1
        self.items.append(("c", name, seconds, self.tokens, blocking))
        return self.tokens

    def w(self, token: int) -> None:
        self.items.append(("w", token))


def schedule(items: list[tuple], launch_s: float) -> dict[str, float]:
    """Run a program (`_Program.items`) on one TensorCore and the ICI (module docstring); step end and figures."""
    host = tc = ici = wait = 0.0
    done: dict[int, float] = {}
    busy: list[tuple[float, float]] = []
    comm: list[tuple[float, float]] = []
    by: dict[str, float] = {}
    launches = 0
    for it in items:
        if it[0] == "w":
            wait = max(wait, done[it[1]])
            continue
        host += launch_s
        launches += 1
        if it[0] == "k":
            start = max(host, tc, wait)
            tc = start + it[2]
            busy.append((start, tc))
            by[it[1]] = by.get(it[1], 0.0) + it[2]
        else:
            start = max(host, tc, ici)
            ici = start + it[2]
            done[it[3]] = ici
            comm.append((start, ici))
            by[f"ici:{it[1]}"] = by.get(f"ici:{it[1]}", 0.0) + it[2]
            if it[4]:
                wait = max(wait, ici)
    end = max(host, tc, ici)
    overlap = 0.0
    for a, b in comm:
        overlap += sum(max(0.0, min(b, d) - max(a, c)) for c, d in busy if d > a and c < b)
    ici_busy = sum(b - a for a, b in comm)
    return {"step": end, "compute": sum(b - a for a, b in busy), "ici": ici_busy, "exposed": ici_busy - overlap,
            "host": host, "launches": launches, "breakdown": by}


class _Costs:
    """The decoder's kernels on one chip for `tokens` tokens (`seqs` sequences), weights split `tp` ways."""

    def __init__(self, cfg: ModelConfig, chip: ChipSpec, seqs: float, seq: int, tp: int,
                 collective: object) -> None:
        self.cfg, self.chip, self.tp, self.seq = cfg, chip, tp, seq
        self.t = seqs * seq
        self.seqs = seqs
        self.e = self.t * cfg.d_model  # full-width activations (norms, residuals: replicated under TP)
        self.eh = self.t * cfg.d_model / tp  # attention width of this rank
        self.f = self.t * cfg.d_ff / tp
        self.a = seqs * cfg.n_heads / tp * seq * seq
        self.v = cfg.vocab_size / tp
        self.collective = collective

    def tp_reduce(self, p: _Program, name: str) -> None:
        """A partial activation made whole: DTensor copies it, then all-reduces it; the next kernel waits."""
        if self.tp > 1:
            p.ew("tp_copy", 4 * self.e)
            p.c(name, self.collective("all_reduce", 2 * self.e), blocking=True)

    def block_fwd(self, p: _Program) -> None:
        d, hd, t = self.cfg.d_model, self.cfg.d_model / self.tp, self.t
        b, s, hdim = self.seqs * self.cfg.n_heads / self.tp, self.seq, self.cfg.head_dim
        p.passes("norm", _NORM_FWD, self.e)
        for _ in range(3):
            p.mm("qkv", t, hd, d)
        p.passes("mask", (0,) * _MASK, 0)
        p.passes("attn_copy", (4, 4), self.eh)
        p.mm("scores", s, s, hdim, b)
        p.ew("scale", 4 * self.a)
        p.ew("mask", 0)
        p.passes("softmax", (4, 4), self.a)
        p.ew("attn_copy", 4 * self.eh)
        p.mm("pv", s, hdim, s, b)
        p.ew("attn_copy", 4 * self.eh)
        p.mm("out", t, d, hd)
        self.tp_reduce(p, "tp_attn")
        p.ew("residual", 6 * self.e)
        p.passes("norm", _NORM_FWD, self.e)
        f = self.cfg.d_ff / self.tp
        p.mm("gate", t, f, d)
        p.ew("silu", 4 * self.f)
        p.mm("up", t, f, d)
        p.ew("mul", 6 * self.f)
        p.mm("down", t, d, f)
        self.tp_reduce(p, "tp_mlp")
        p.ew("residual", 6 * self.e)

    def block_bwd(self, p: _Program, grad_ready: object) -> None:
        """Backward of one block; `grad_ready(name)` is called when a weight's gradient has been written."""
        d, hd, t = self.cfg.d_model, self.cfg.d_model / self.tp, self.t
        b, s, hdim = self.seqs * self.cfg.n_heads / self.tp, self.seq, self.cfg.head_dim
        f = self.cfg.d_ff / self.tp
        p.mm("down_dx", t, f, d)
        p.mm("down_dw", d, f, t)
        grad_ready("down")
        p.passes("mul_bwd", (6, 6), self.f)
        p.mm("up_dx", t, d, f)
        p.mm("up_dw", f, d, t)
        grad_ready("up")
        self.tp_reduce(p, "tp_up_dx")
        p.passes("silu_bwd", (4, 4, 6, 6, 4, 6, 6), self.f)
        p.mm("gate_dx", t, d, f)
        p.mm("gate_dw", f, d, t)
        grad_ready("gate")
        self.tp_reduce(p, "tp_gate_dx")
        p.ew("grad_sum", 6 * self.e)
        p.passes("norm_bwd", _NORM_BWD, self.e)
        grad_ready("n2")
        p.ew("residual_bwd", 6 * self.e)
        p.mm("out_dx", t, hd, d)
        p.mm("out_dw", d, hd, t)
        grad_ready("o")
        p.ew("attn_copy", 4 * self.eh)
        p.mm("pv_bwd", s, s, hdim, b)
        p.mm("pv_bwd", s, hdim, s, b)
        p.passes("softmax_bwd", (6, 4, 4), self.a)
        p.mm("scores_bwd", s, hdim, s, b)
        p.mm("scores_bwd", s, hdim, s, b)
        for i, w in enumerate(("v", "k", "q")):
            p.ew("attn_copy", 4 * self.eh)
            p.mm("qkv_dx", t, d, hd)
            p.mm("qkv_dw", hd, d, t)
            grad_ready(w)
            self.tp_reduce(p, f"tp_{w}_dx")
            if i:
                p.ew("grad_sum", 6 * self.e)
        p.passes("norm_bwd", _NORM_BWD, self.e)
        grad_ready("n1")
        p.ew("residual_bwd", 6 * self.e)

    def embed_fwd(self, p: _Program) -> None:
        if self.tp == 1:
            p.ew("embedding", 10 * self.e)
            return
        p.passes("embedding", (4, 4), self.e)  # vocab-sharded rows: lookup, zero the foreign rows, sum
        self.tp_reduce(p, "tp_embedding")

    def loss(self, p: _Program) -> None:
        """Final norm, logits, fp32 cross-entropy forward and backward, logits backward."""
        d, t, lv = self.cfg.d_model, self.t, self.t * self.v
        p.passes("norm", _NORM_FWD, self.e)
        p.mm("logits", t, self.v, d)
        if self.tp == 1:
            p.passes("xent", (6, 0, 8, 4, 0, 8, 12, 6), lv)
        else:  # loss_parallel: max, sum and target logit all-reduced over the vocab shards
            p.passes("xent", (6, 4), lv)
            p.c("tp_loss", self.collective("all_reduce", 4 * t), blocking=True)
            p.passes("xent", (8, 8, 4), lv)
            p.c("tp_loss", self.collective("all_reduce", 4 * t), blocking=True)
            p.passes("xent", (8, 4), lv)
            p.c("tp_loss", self.collective("all_reduce", 4 * t), blocking=True)
            p.passes("xent_bwd", (8, 8, 8, 12, 8, 6), lv)

    def logits_bwd(self, p: _Program) -> None:
        d, t = self.cfg.d_model, self.t
        p.mm("logits_dx", t, d, self.v)
        p.mm("logits_dw", self.v, d, t)
        self.tp_reduce(p, "tp_logits_dx")

    def final_norm_bwd(self, p: _Program) -> None:
        p.passes("norm_bwd", _NORM_BWD, self.e)

    def embed_bwd(self, p: _Program) -> None:
        p.passes("embedding_bwd", (10,) if self.tp == 1 else (6, 4, 6), self.e)


def _params(cfg: ModelConfig, tp: int) -> dict[str, list[tuple[str, float]]]:
    """Parameters (name, elements on this rank) per FSDP unit, in registration order."""
    d, f, v = cfg.d_model, cfg.d_ff, cfg.vocab_size
    block = [("n1", d), ("n2", d), ("q", d * d / tp), ("k", d * d / tp), ("v", d * d / tp), ("o", d * d / tp),
             ("gate", d * f / tp), ("up", d * f / tp), ("down", d * f / tp)]
    units = {"root": [("emb", v * d / tp), ("norm", d), ("out", v * d / tp)]}
    for i in range(cfg.n_layers):
        units[f"block{i}"] = [(f"{i}.{n}", c) for n, c in block]
    return units


def _ddp_buckets(order: list[tuple[str, float]], nbytes: int) -> list[list[tuple[str, float]]]:
    """DDP's bucket assignment: parameters in reverse registration order, closed once they reach the cap."""
    buckets, cur, size = [], [], 0.0
    for name, n in reversed(order):
        cur.append((name, n))
        size += n * nbytes
        if size >= (DDP_FIRST_BUCKET if not buckets else DDP_BUCKET):
            buckets.append(cur)
            cur, size = [], 0.0
    if cur:
        buckets.append(cur)
    return buckets


def predict_step(cfg: ModelConfig, chip: ChipSpec | str, n_chips: int, layout: str, *, per_device_batch: int,
                 seq_len: int, param_bytes: int = 2, calibration: Calibration = DEFAULT) -> EagerStep:
    """Predict one eager SGD step (bf16 parameters and gradients) of `cfg` on `n_chips` under `layout`.

    >>> from torchtpu.perfmodel.config import ModelConfig
    >>> cfg = ModelConfig(name="d", d_model=256, n_layers=2, n_heads=4, head_dim=64, d_ff=640, vocab_size=1024,
    ...                   n_kv_heads=4, gated_mlp=True)
    >>> r = predict_step(cfg, "v5e", 2, "ddp", per_device_batch=4, seq_len=128)
    >>> r.step_seconds > r.compute_seconds > 0
    True
    """
    chip = get_chip(chip)
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; valid: {', '.join(LAYOUTS)}")
    if n_chips < 1:
        raise ValueError(f"n_chips must be >= 1, got {n_chips}")
    world = n_chips
    tp = world if layout == "tp" else 1
    topo = Topology.of(chip, default_slice_shape(chip, world)) if world > 1 else None

    def collective(kind: str, nbytes: float) -> float:
        if topo is None:
            return 0.0
        return topo.collective_seconds(kind, nbytes, range(world), calibration.ici_hop_latency_s,
                                       calibration.dcn_hop_latency_s)

    seqs = per_device_batch * (world if layout == "tp" else 1)
    costs = _Costs(cfg, chip, seqs, seq_len, tp, collective)
    units = _params(cfg, tp)
    p = _Program(chip)
    sizes = {n: c for u in units.values() for n, c in u}
    sharded = layout == "fsdp" and world > 1
    ddp = layout == "ddp" and world > 1

    # DDP: gradient -> bucket copies, bucket all-reduces as buckets fill
    root = units["root"]  # registration order: emb, the blocks, norm, out
    order = root[:1] + [pc for u, ps in units.items() if u != "root" for pc in ps] + root[1:]
    buckets = _ddp_buckets(order, param_bytes) if ddp else []
    owner = {n: i for i, b in enumerate(buckets) for n, _ in b}
    pending = [len(b) for b in buckets]
    tokens: dict[int, int] = {}

    def grad_ready(name: str) -> None:
        if not ddp:
            return
        p.ew("ddp_copy_in", 2 * param_bytes * sizes[name])
        i = owner[name]
        pending[i] -= 1
        if pending[i] == 0:
            tokens[i] = p.c("ddp_all_reduce", collective("all_reduce", param_bytes * sum(c for _, c in buckets[i])))

    def block_ready(i: int) -> object:
        return lambda w: grad_ready(f"{i}.{w}")

    # FSDP2 unshard / reduce-scatter of a unit
    gathers: dict[str, int] = {}

    def copy_in(unit: str) -> None:
        for _, c in units[unit]:
            p.ew("fsdp_copy_in", 2 * param_bytes * c / world)
        full = param_bytes * sum(c for _, c in units[unit])
        gathers[unit] = p.c("fsdp_all_gather", collective("all_gather", full))

    def copy_out(unit: str) -> None:
        p.w(gathers.pop(unit))
        for _, c in units[unit]:
            p.ew("fsdp_copy_out", 2 * param_bytes * c)

    rs: list[int] = []

    def reduce_scatter(unit: str) -> None:
        full = param_bytes * sum(c for _, c in units[unit])
        p.ew("fsdp_pack", 2 * full)
        rs.append(p.c("fsdp_reduce_scatter", collective("reduce_scatter", full)))

    layers = cfg.n_layers
    # ---- forward
    if sharded:
        copy_in("root")
        copy_out("root")
    costs.embed_fwd(p)
    for i in range(layers):
        if sharded:
            copy_in(f"block{i}")
            copy_out(f"block{i}")
        costs.block_fwd(p)
    costs.loss(p)
    # ---- backward
    if sharded:
        copy_in(f"block{layers - 1}")
    costs.logits_bwd(p)
    grad_ready("out")
    costs.final_norm_bwd(p)
    grad_ready("norm")
    for i in reversed(range(layers)):
        if sharded:
            copy_out(f"block{i}")
            if i > 0:
                copy_in(f"block{i - 1}")
        costs.block_bwd(p, block_ready(i))
        if sharded:
            reduce_scatter(f"block{i}")
    costs.embed_bwd(p)
    grad_ready("emb")
    if sharded:
        reduce_scatter("root")
        for tok in rs:
            p.w(tok)
    if ddp:  # finalize: each bucket copied back to the gradients once its all-reduce is done
        for i, b in enumerate(buckets):
            p.w(tokens[i])
            for _, c in b:
                p.ew("ddp_copy_out", 2 * param_bytes * c)
    n_local = sum(sizes.values()) / (world if sharded else 1)
    p.ew("sgd", 3 * param_bytes * n_local)

    out = schedule(p.items, chip.launch_overhead_s)
    model_flops = flops_per_token(cfg, seq_len, causal="half") * per_device_batch * seq_len
    return EagerStep(layout=layout, n_chips=world, step_seconds=out["step"], compute_seconds=out["compute"],
                     comm_seconds=out["ici"], exposed_seconds=out["exposed"], host_seconds=out["host"],
                     launches=int(out["launches"]), model_flops=model_flops,
                     mfu=model_flops / (out["step"] * chip.bf16_flops), breakdown=out["breakdown"])


# ---- TorchTitan's llama3 debug model (torchtitan 0.3.0 `_debugmodel`, `compute_ffn_hidden_dim(256,
# multiple_of=256)` = 768), as `torchtpu.titan_spec.llama3_debugmodel_sdpa` trains it: FSDP2 mixed precision (bf16
# parameters, fp32 reduce) on every layout, fused AdamW, grad-norm clipping, sequence-parallel TP plan.
TITAN_DEBUG = {"dim": 256, "layers": 6, "ffn": 768, "vocab": 2048}
# Its eager step's launches, counted from the simulator's op trace (`--sim_times_path` ops, rank 0, a step after the
# first): 1318 on one chip (FSDP2 of one rank: parameter casts included), and the kernels that sharding adds
# per FSDP unit (copy-in, copy-out, the fp32 gradient pack / cast) and per TP layer (DTensor redistributions'
# copies and cats) beside the collectives. Launches of an eager step do not depend on batch or sequence length.
TITAN_LAUNCHES_ONE_CHIP = 1318
# With several FSDP ranks (2-chip trace: 1432 launches): 83 more kernels (88 copies: copy-in / copy-out of each
# unit's gather, forward and again in backward; 8 fewer divisions, 3 more norm kernels), whatever the degree.
TITAN_FSDP_KERNELS = 83
TITAN_DP_ALL_REDUCES = 5  # loss / token-count / grad-norm reductions over the data-parallel ranks (same trace)
# With TP (2x2 FSDP2 x TP trace: 1995 launches, 121 collectives): 473 more kernels than FSDP2 alone (DTensor's
# redistribution copies and cats), 26 all-gather / reduce-scatter pairs (sequence parallel: 2 per layer each way,
# 1 around the embedding and 1 around the output, modelled in the forward) and 38 all-reduces (vocab-parallel
# loss, grad norm of the DTensor parameters).
TITAN_TP_KERNELS = 473
TITAN_TP_ALL_REDUCES = 38
# Device time of the one-chip step, by what it scales with (the same trace at seq 64 x batch 2): parameter-sized
# kernels (fused AdamW 210.5 us, casts and gradient adds/zeroing/clip ~683 us) and token-sized ones (matmuls,
# attention, norms, loss: the remaining 376.9 us of 1270.4 us busy).
TITAN_PARAM_DEVICE_S = 893.5e-6
TITAN_TOKEN_DEVICE_S = 376.9e-6
TITAN_TOKENS = 128
TITAN_BWD_SHARE = 2 / 3  # of the model's launches after the forward (backward ~ 2x forward's kernels)
TITAN_OPT_LAUNCHES = 30  # clip (foreach norm, mul) and fused AdamW, after the last reduce


def _split(total: int, parts: int) -> list[int]:
    q, r = divmod(int(total), parts)
    return [q + (i < r) for i in range(parts)]


def titan_units(tp: int = 1) -> list[tuple[str, float]]:
    """TorchTitan's FSDP units of the debug model in forward order (the root, tok_embeddings, each layer, [norm,
    lm_head]; `apply_fsdp_to_decoder`: 9 all-gathers forward, 9 reduce-scatters in the 2-chip trace) and their
    parameters on a TP rank (the root holds none of its own)."""
    d, f, v = TITAN_DEBUG["dim"], TITAN_DEBUG["ffn"], TITAN_DEBUG["vocab"]
    layer = (4 * d * d + 3 * d * f) / tp + 2 * d
    return ([("root", 0.0), ("emb", v * d / tp)] + [(f"layer{i}", layer) for i in range(TITAN_DEBUG["layers"])]
            + [("head", d + v * d / tp)])


def predict_titan_step(chip: ChipSpec | str, *, replicate: int = 1, shard: int = 1, tp: int = 1,
                       topology: str = "", hosts: int = 1, per_device_batch: int = 2, seq_len: int = 64,
                       calibration: Calibration = DEFAULT) -> EagerStep:
    """Predict one step of TorchTitan's llama3 debug model on `replicate x shard x tp` chips (TorchTitan's mesh
    order: rank = (r * shard + s) * tp + t) of `hosts` slices of shape `topology` (e.g. "2x2"; "" = the default
    slice for the chips of one host).

    The program: the census's launches (TITAN_LAUNCHES_*) issued at the chip's launch overhead; forward, backward
    and optimizer kernels in that order, their device time split evenly; FSDP2's collectives at their places: each
    unit's all-gather (bf16) before its forward and, resharded after forward, again before its backward (the
    [norm, lm_head] unit is kept), each unit's fp32 reduce-scatter after its backward, then under HSDP the
    all-reduce of the shard over the replicate group (across slices: DCN); TP's sequence-parallel all-gather /
    reduce-scatter pairs (4 per layer each way) block the next kernel; the optimizer waits for every reduction.
    Collectives are priced by the simulator's topology (`sim.topology`), as the simulator charges them.

    >>> r = predict_titan_step("v5e", shard=2, topology="1x2")
    >>> r.step_seconds > r.host_seconds * 0.9 and r.comm_seconds > 0
    True
    """
    chip = get_chip(chip)
    for name, val in (("replicate", replicate), ("shard", shard), ("tp", tp), ("hosts", hosts)):
        if val < 1:
            raise ValueError(f"{name} must be >= 1, got {val}")
    world = replicate * shard * tp
    per_host = world // hosts
    if world % hosts:
        raise ValueError(f"{world} chips do not split into {hosts} hosts")
    shape = tuple(int(a) for a in topology.split("x")) if topology else default_slice_shape(chip, per_host)
    topo = Topology.of(chip, shape, hosts if hosts > 1 else None) if world > 1 else None

    def ranks(r: int = 0, s: int | None = None, t: int | None = None) -> list[int]:
        return [(rr * shard + ss) * tp + tt for rr in ([r] if r is not None else range(replicate))
                for ss in ([s] if s is not None else range(shard)) for tt in ([t] if t is not None else range(tp))]

    def coll(kind: str, nbytes: float, group: list[int]) -> float:
        if topo is None or len(group) < 2:
            return 0.0
        return topo.collective_seconds(kind, nbytes, group, calibration.ici_hop_latency_s,
                                       calibration.dcn_hop_latency_s)

    fsdp_group, rep_group, tp_group = ranks(0, None, 0), ranks(None, 0, 0), ranks(0, 0, None)
    units = titan_units(tp)
    params = sum(c for _, c in units)
    kernels_n = (TITAN_LAUNCHES_ONE_CHIP + (TITAN_FSDP_KERNELS if shard > 1 else 0)
                 + (TITAN_TP_KERNELS if tp > 1 else 0))
    tokens = per_device_batch * seq_len
    device = (TITAN_PARAM_DEVICE_S * params / sum(c for _, c in titan_units()) / shard
              + TITAN_TOKEN_DEVICE_S * tokens / TITAN_TOKENS / tp)
    per_kernel = device / kernels_n
    model_n = kernels_n - TITAN_OPT_LAUNCHES
    n_fwd = round(model_n * (1 - TITAN_BWD_SHARE))
    fwd, bwd = _split(n_fwd, len(units) - 1), _split(model_n - n_fwd, len(units) - 1)
    p = _Program(chip)
    tp_bytes = 2 * tokens * TITAN_DEBUG["dim"]  # bf16 activations of the TP group's batch
    tp_reduces = [TITAN_TP_ALL_REDUCES if tp > 1 else 0]

    def kernels(name: str, n: int, tp_pairs: int) -> None:
        marks = {int(n * (i + 1) / (tp_pairs + 1)) for i in range(tp_pairs)} if tp > 1 else set()
        for i in range(n):
            if i in marks:
                p.c("tp_all_gather", coll("all_gather", tp_bytes, tp_group), blocking=True)
                p.c("tp_reduce_scatter", coll("reduce_scatter", tp_bytes, tp_group), blocking=True)
            p.k(name, per_kernel)

    def small_reduce(name: str, group: list[int]) -> None:
        p.c(name, coll("all_reduce", 4.0, group), blocking=True)

    pairs = {u: (2 if u.startswith("layer") else 1 if u in ("emb", "head") else 0) for u, _ in units}
    for u, c in units:  # forward
        if shard > 1:
            p.w(p.c("fsdp_all_gather", coll("all_gather", 2 * c, fsdp_group)))
        if u != "root":
            kernels("fwd", fwd.pop(), pairs[u])
    for _ in range(tp_reduces[0] // 2):  # vocab-parallel loss
        small_reduce("tp_all_reduce", tp_group)
    reduced = []
    for u, c in reversed(units):  # backward; [norm, lm_head] is not resharded after forward
        if shard > 1 and u != "head":
            p.w(p.c("fsdp_all_gather", coll("all_gather", 2 * c, fsdp_group)))
        if u != "root":
            kernels("bwd", bwd.pop(), pairs[u] if u.startswith("layer") else 0)
        if shard > 1:
            reduced.append(p.c("fsdp_reduce_scatter", coll("reduce_scatter", 4 * c, fsdp_group)))
        if replicate > 1:
            reduced.append(p.c("hsdp_all_reduce", coll("all_reduce", 4 * c / shard, rep_group)))
    for tok in reduced:
        p.w(tok)
    if world > 1:  # token count, grad norm, loss over the data-parallel ranks
        for _ in range(TITAN_DP_ALL_REDUCES):
            small_reduce("dp_all_reduce", ranks(None, None, 0))
    for _ in range(tp_reduces[0] - tp_reduces[0] // 2):  # grad norm of the DTensor parameters
        small_reduce("tp_all_reduce", tp_group)
    kernels("optimizer", TITAN_OPT_LAUNCHES, 0)
    out = schedule(p.items, chip.launch_overhead_s)
    cfg = ModelConfig(name="titan-debug", d_model=TITAN_DEBUG["dim"], n_layers=TITAN_DEBUG["layers"], n_heads=16,
                      head_dim=16, d_ff=TITAN_DEBUG["ffn"], vocab_size=TITAN_DEBUG["vocab"], n_kv_heads=16,
                      gated_mlp=True)
    model_flops = flops_per_token(cfg, seq_len, causal="half") * tokens / tp
    layout = f"{replicate}x{shard}x{tp}"
    return EagerStep(layout=layout, n_chips=world, step_seconds=out["step"], compute_seconds=out["compute"],
                     comm_seconds=out["ici"], exposed_seconds=out["exposed"], host_seconds=out["host"],
                     launches=int(out["launches"]), model_flops=model_flops,
                     mfu=model_flops / (out["step"] * chip.bf16_flops), breakdown=out["breakdown"])
