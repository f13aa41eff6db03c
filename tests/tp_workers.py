"""Rank programs for tests/test_tensor_parallel.py and tests/test_dcp.py ("tp_workers:NAME" for dist_workers.py).

A small transformer (2 layers, hidden 32, 4 heads) parallelized with PyTorch's `parallelize_module`
(ColwiseParallel / RowwiseParallel, and the sequence-parallel plan TorchTitan uses) on a "tpu" mesh over tpu_dist,
trained 10 SGD steps at HIGHEST against the same model on one chip; then DCP save / load of the sharded model and
optimizer state, loaded back sharded, replicated and sharded the other way.
"""

from __future__ import annotations

import math
from typing import Any

TIMEOUT_S = 60
STEPS = 10
VOCAB, HIDDEN, HEADS, SEQ, BATCH = 64, 32, 4, 8, 2


def _model() -> Any:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from torch import nn

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wq, self.wk, self.wv, self.wo = (nn.Linear(HIDDEN, HIDDEN, bias=False) for _ in range(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            d = HIDDEN // HEADS
            # -1 heads: each TP rank holds HEADS / tp of them after ColwiseParallel
            q, k, v = (w(x).view(b, s, -1, d).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
            mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
            att = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
            return self.wo((att @ v).transpose(1, 2).reshape(b, s, -1))

    class Mlp(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w1, self.w2 = nn.Linear(HIDDEN, 2 * HIDDEN), nn.Linear(2 * HIDDEN, HIDDEN)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.w2(F.gelu(self.w1(x)))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention_norm, self.ffn_norm = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
            self.attention, self.feed_forward = Attention(), Mlp()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + self.attention(self.attention_norm(x))
            return x + self.feed_forward(self.ffn_norm(x))

    class Transformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_embeddings = nn.Embedding(VOCAB, HIDDEN)
            self.layers = nn.ModuleList(Block() for _ in range(2))
            self.norm, self.output = nn.LayerNorm(HIDDEN), nn.Linear(HIDDEN, VOCAB, bias=False)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            h = self.tok_embeddings(tokens)
            for layer in self.layers:
                h = layer(h)
            return self.output(self.norm(h))

    torch.manual_seed(0)
    return Transformer()


def _plan(model: Any, mesh: Any, sequence_parallel: bool) -> Any:
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    if not sequence_parallel:
        block = {"attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(),
                 "attention.wv": ColwiseParallel(), "attention.wo": RowwiseParallel(),
                 "feed_forward.w1": ColwiseParallel(), "feed_forward.w2": RowwiseParallel()}
        top = {"output": ColwiseParallel(output_layouts=Replicate())}
    else:  # TorchTitan's plan: norms sequence-parallel, activations sharded on the sequence between blocks
        block = {"attention_norm": SequenceParallel(), "ffn_norm": SequenceParallel(),
                 "attention": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
                 "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
                 "attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(),
                 "attention.wv": ColwiseParallel(), "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
                 "feed_forward.w1": ColwiseParallel(), "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1))}
        top = {"tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
               "norm": SequenceParallel(),
               "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate())}
    parallelize_module(model, mesh, top)
    for layer in model.layers:
        parallelize_module(layer, mesh, block)
    return model


def _data() -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, VOCAB, (STEPS, BATCH, SEQ + 1), generator=g)
    return tokens[..., :-1], tokens[..., 1:]


def _train(model: Any, inputs: Any, targets: Any, step_fn: Any = None) -> list[float]:
    import torch

    # foreach=False: the plain TP plan leaves the norms' parameters plain tensors beside DTensors, which the
    # foreach kernels refuse to mix (a DTensor rule, the same on cuda)
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9, foreach=False)
    losses = []
    run = step_fn if step_fn is not None else model
    for i in range(STEPS):
        opt.zero_grad()
        logits = run(inputs[i].to("tpu"))
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets[i].to("tpu").reshape(-1))
        loss.backward()
        opt.step()
        losses.append(float(loss))
    model._opt = opt
    return losses


def _full(params: Any) -> list[Any]:
    from torch.distributed.tensor import DTensor

    return [(p.full_tensor() if isinstance(p, DTensor) else p).detach().cpu() for p in params]


def tp(rank: int, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    import torchtpu

    torchtpu.set_precision("HIGHEST")
    mesh = init_device_mesh("tpu", (world,), mesh_dim_names=("tp",))
    inputs, targets = _data()
    single = _model().to("tpu")
    out: dict[str, Any] = {"untrained": _full(single.parameters())}
    out["single losses"] = _train(single, inputs, targets)
    out["single"] = _full(single.parameters())
    for name, sp in (("tp", False), ("tp+sp", True)):
        model = _plan(_model().to("tpu"), mesh, sp)
        out[f"{name} placements"] = sorted({str(getattr(p, "placements", "plain")) for p in model.parameters()})
        out[f"{name} losses"] = _train(model, inputs, targets)
        out[f"{name} params"] = _full(model.parameters())
    out["dist stats"] = torchtpu.distributed.stats()
    try:
        out.update(_dcp(rank, mesh, model))
    except BaseException:  # noqa: BLE001 - DCP's CheckpointException is a BaseException; reported
        import traceback

        out["dcp error"] = traceback.format_exc()[-3000:]
    # torch.compile of the TP model: graphs and breaks (collectives between graphs run eagerly)
    import torch._dynamo
    from torch._dynamo.utils import counters

    from torchtpu.compile.backend import compile_stats, reset_compile_stats

    torch._dynamo.reset()
    counters.clear()
    reset_compile_stats()
    model = _plan(_model().to("tpu"), mesh, False)
    compiled = torch.compile(model, backend="tpu")
    try:
        out["compiled losses"] = _train(model, inputs, targets, compiled)
        out["compiled params"] = _full(model.parameters())
    except Exception as exc:  # noqa: BLE001 - reported by the test
        out["compiled error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
    out["graph breaks"] = {str(k): v for k, v in counters["graph_break"].items()}
    out["unique graphs"] = counters["stats"].get("unique_graphs", 0)
    out["compile stats"] = compile_stats()
    dist.destroy_process_group()
    return out


def _dcp(rank: int, mesh: Any, trained: Any) -> dict[str, Any]:
    """Save the trained TP+SP model and its optimizer with DCP; load into the same plan, into an unsharded model,
    and into DTensors sharded on the other dim; every tensor equal to the saved one, bit for bit."""
    import tempfile

    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

    out: dict[str, Any] = {}
    box = [tempfile.mkdtemp(prefix="tpu_dcp_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    path = box[0]
    # per_thread_copy_ahead=0: the default overlapping loader needs torch.tpu.current_stream (streams: not here)
    writer = dcp.FileSystemWriter(path, per_thread_copy_ahead=0)
    msd, osd = get_state_dict(trained, trained._opt)
    dcp.save({"model": msd, "optim": osd}, storage_writer=writer)
    saved = {k: (v.full_tensor() if isinstance(v, DTensor) else v).detach().cpu() for k, v in msd.items()}
    momenta = {k: (v["momentum_buffer"].full_tensor() if isinstance(v["momentum_buffer"], DTensor)
                   else v["momentum_buffer"]).cpu() for k, v in osd["state"].items()}
    out["dcp saved keys"] = sorted(saved)
    # 1. the same TP+SP plan, model and optimizer
    fresh = _plan(_model().to("tpu"), mesh, True)
    opt = torch.optim.SGD(fresh.parameters(), lr=0.5, momentum=0.9, foreach=False)
    fresh(torch.zeros(BATCH, SEQ, dtype=torch.long, device="tpu")).sum().backward()
    opt.step()  # creates the momentum state that the load fills
    fmsd, fosd = get_state_dict(fresh, opt)
    state = {"model": fmsd, "optim": fosd}
    dcp.load(state, checkpoint_id=path)
    set_state_dict(fresh, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    out["dcp same plan"] = [(k, torch.equal(v.detach().cpu() if not isinstance(v, DTensor) else
                                            v.full_tensor().cpu(), saved[k])) for k, v in fresh.state_dict().items()]
    _, fosd = get_state_dict(fresh, opt)
    out["dcp same plan momenta"] = [(k, torch.equal(
        (v["momentum_buffer"].full_tensor() if isinstance(v["momentum_buffer"], DTensor)
         else v["momentum_buffer"]).cpu(), momenta[k])) for k, v in fosd["state"].items()]
    # 2. an unsharded model on one chip per rank (replicated)
    plain = _model().to("tpu")
    psd = plain.state_dict()
    dcp.load({"model": psd}, checkpoint_id=path)
    out["dcp unsharded"] = [(k, torch.equal(v.cpu(), saved[k])) for k, v in psd.items()]
    # 3. DTensors sharded on the last dim (1-D: replicated), a layout no rank saved
    other = {k: distribute_tensor(torch.zeros_like(v).to("tpu"), mesh,
                                  [Shard(v.dim() - 1) if v.dim() > 1 else Replicate()]) for k, v in saved.items()}
    dcp.load({"model": other}, checkpoint_id=path)
    out["dcp resharded"] = [(k, str(v.placements), torch.equal(v.full_tensor().cpu(), saved[k]))
                            for k, v in other.items()]
    dist.barrier()
    if rank == 0:
        import shutil

        shutil.rmtree(path, ignore_errors=True)
    return out


SCENARIOS = {"tp": (tp, "cpu:gloo,tpu:tpu_dist", TIMEOUT_S)}

