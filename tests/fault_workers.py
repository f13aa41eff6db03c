"""Rank programs for tests/test_faults.py: a straggler (run by dist_workers.py as "fault_workers:straggler") and a
training job for real torchrun that a killed rank interrupts and a restart resumes from its DCP checkpoint.

Training job: `torchrun ... tests/fault_workers.py OUTDIR KILL_STEP TAG`. A small DDP model on "tpu" (tpu_dist)
trains STEPS steps of SGD with momentum on data fixed by the step number, saving model and optimizer state with
torch.distributed.checkpoint to OUTDIR/ckpt/step{k} after every step (OUTDIR/ckpt/latest names the last complete
one). A run that finds a checkpoint resumes after it. On torchrun's first attempt (TORCHELASTIC_RESTART_COUNT 0)
with KILL_STEP >= 0, rank 1 SIGKILLs itself during the backward pass of step KILL_STEP, before its gradients
are all-reduced (writing the time to OUTDIR/killed_TAG first); a survivor writes the error it got to
OUTDIR/error_TAG_rank{r}.pt and exits with it. A run that completes also trains the same model from scratch
without checkpoints (the uninterrupted reference) and writes both to OUTDIR/final_TAG_rank{r}.pt.
"""

from __future__ import annotations

import datetime
import os
import signal
import sys
import time
from typing import Any

STEPS = 5
PG_TIMEOUT_S = 60  # bounds the start-up skew of the ranks on a loaded machine; a dead rank is seen in ~5 s
ERROR_BOUND_S = 10  # the survivor's error comes this soon after the kill (tpu_dist's report wait is 5 s)
TIMEOUT_S = 20


# ---------------------------------------------------------------------- straggler (dist_workers.py harness)
def straggler(rank: int, world: int) -> dict[str, Any]:
    """Four phases after the clocks are aligned by an all-reduce: rank 1 does 3 extra matmuls before the next
    all-reduce; rank 0 sleeps 1 s of host time (no extra device work); neither does anything extra; rank 1 does 3
    extra matmuls before it sends to rank 0 (a point-to-point message instead of the all-reduce)."""
    import torch
    import torch.distributed as dist

    import torchtpu
    from torchtpu.distributed import clock

    x = torch.ones(256, device="tpu")
    a = torch.randn(1024, 1024, device="tpu") / 1024  # ~31 us a matmul: device-bound, not launch-bound
    out: dict[str, Any] = {}
    for phase in ("extra work", "host sleep", "plain", "late send"):
        dist.all_reduce(x)  # aligns every rank's clock at this collective's end
        torch.tpu.synchronize()
        torchtpu.distributed.reset_stats()
        tl = clock.timeline_of(0)
        t0 = tl.wall_seconds
        n0 = len(torchtpu.timeline_records(0))
        b = a @ a
        if phase in ("extra work", "late send") and rank == 1:
            for _ in range(3):
                b = b @ a
        if phase == "host sleep" and rank == 0:
            time.sleep(1.0)
        if phase == "late send":
            dist.send(x, dst=0) if rank == 1 else dist.recv(x, src=1)
        else:
            dist.all_reduce(x)
        torch.tpu.synchronize()
        recs = torchtpu.timeline_records(0)[n0:]
        out[phase] = {"records": recs, "t0": t0, "t1": tl.wall_seconds, "waits": torchtpu.distributed.waits(),
                      "stats": torchtpu.distributed.stats()}
    dist.destroy_process_group()
    return out


SCENARIOS = {"straggler": (straggler, None, TIMEOUT_S)}


# ---------------------------------------------------------------------- the torchrun training job
def _model() -> Any:
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))


def _batch(step: int, rank: int) -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(100 * step + rank)
    return torch.randn(4, 8, generator=g).to("tpu"), torch.randn(4, 4, generator=g).to("tpu")


def _train(outdir: str, rank: int, kill_step: int, checkpoint: bool,
           tag: str = "") -> tuple[Any, dict[int, float], int]:
    """Train to STEPS (resuming from the last checkpoint when `checkpoint`); (model, losses by step, first step)."""
    import torch
    import torch.distributed.checkpoint as dcp
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(_model().to("tpu"))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ckpt = os.path.join(outdir, "ckpt")
    latest = os.path.join(ckpt, "latest")
    first = 0
    if checkpoint and os.path.exists(latest):
        with open(latest) as f:
            done = int(f.read())
        # the optimizer's momentum buffers exist only after a step: make them (zeros) so DCP can load into them
        for p in model.parameters():
            opt.state[p]["momentum_buffer"] = torch.zeros_like(p)
        state = {"model": model.state_dict(), "optim": opt.state_dict()}
        dcp.load(state, checkpoint_id=os.path.join(ckpt, f"step{done}"))  # in place, into the parameters too
        opt.load_state_dict(state["optim"])
        first = done + 1
    losses: dict[int, float] = {}
    for step in range(first, STEPS):
        x, y = _batch(step, rank)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        if step == kill_step and rank == 1:
            def die(grad: Any) -> Any:
                with open(os.path.join(outdir, f"killed_{tag}"), "w") as f:
                    f.write(repr(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)
                return grad

            model.module[0].weight.register_hook(die)  # mid-backward, before the gradient all-reduce
        loss.backward()
        opt.step()
        losses[step] = float(loss.detach())
        if checkpoint:
            dcp.save({"model": model.state_dict(), "optim": opt.state_dict()},
                     checkpoint_id=os.path.join(ckpt, f"step{step}"))
            if rank == 0:
                with open(latest + ".tmp", "w") as f:
                    f.write(str(step))
                os.replace(latest + ".tmp", latest)
    return model, losses, first


def main(outdir: str, kill_step: int, tag: str) -> None:
    import torch
    import torch.distributed as dist

    import torchtpu

    torchtpu.set_precision("HIGHEST")
    rank = int(os.environ["RANK"])
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    dist.init_process_group(timeout=datetime.timedelta(seconds=PG_TIMEOUT_S))
    try:
        model, losses, first = _train(outdir, rank, kill_step if attempt == 0 else -1, checkpoint=True,
                                       tag=tag)
    except Exception as exc:
        torch.save({"error": (type(exc).__name__, str(exc)), "at": time.time(), "attempt": attempt},
                   os.path.join(outdir, f"error_{tag}_rank{rank}.pt"))
        raise
    reference, ref_losses, _ = _train(outdir, rank, -1, checkpoint=False)
    torch.save({"params": [p.detach().cpu() for p in model.parameters()], "losses": losses, "first": first,
                "ref params": [p.detach().cpu() for p in reference.parameters()], "ref losses": ref_losses,
                "attempt": attempt}, os.path.join(outdir, f"final_{tag}_rank{rank}.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
