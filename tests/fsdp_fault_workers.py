"""Rank programs for the FSDP2 fault test of tests/test_faults.py (dist_workers.py runs them as
"fsdp_fault_workers:SCENARIO", spawned ranks, one simulated chip each, tpu_dist on 127.0.0.1).

"killed": 3 ranks train a small model under `fully_shard` (every Linear and the root: an all-gather per module in
forward and backward, a reduce-scatter per module in backward). Rank 2 SIGKILLs itself in the backward pass of
step 1, from a gradient hook on the first Tanh's output (after the later Linears' backward, before the first
Linear's), writing the wall time to OUTDIR/killed first. The survivors record the error the step
raised, when, and whether they then still get a clean error (not a hang) from the next collective.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

TIMEOUT_S = 20  # the group's timeout: start-up skew on a loaded machine; a dead rank is seen within ~5 s
KILL_STEP = 1


def killed(rank: int, world: int) -> dict[str, Any]:
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    outdir = os.environ["TORCHTPU_TEST_OUTDIR"]
    mesh = init_device_mesh("tpu", (world,))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.Tanh(),
                                torch.nn.Linear(16, 4)).to("tpu")
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    losses = []
    for step in range(3):
        x, y = torch.randn(4, 8, generator=g).to("tpu"), torch.randn(4, 4, generator=g).to("tpu")
        opt.zero_grad()
        if step == KILL_STEP and rank == world - 1:
            def die(grad: Any) -> Any:
                with open(os.path.join(outdir, "killed"), "w") as f:
                    f.write(repr(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)
                return grad

            # on the gradient of the first Tanh's output: after the last two Linears' backward, before the first's
            def arm(_module: Any, _inputs: Any, out: Any) -> None:
                out.register_hook(die)

            model[1].register_forward_hook(arm)
        loss = torch.nn.functional.mse_loss(model(x), y)
        try:
            loss.backward()
            opt.step()
        except Exception as exc:  # noqa: BLE001 - recorded for the test
            at = time.time()
            after = _next_collective()
            return {"error": (type(exc).__name__, str(exc)), "at": at, "step": step, "losses": losses,
                    "next collective": after}
        losses.append(float(loss.detach()))
    return {"error": None, "losses": losses}


def _next_collective() -> tuple[str, str, float]:
    """A survivor's next collective on the group after the failure: an error again, bounded in time."""
    import torch
    import torch.distributed as dist

    t0 = time.monotonic()
    try:
        dist.all_reduce(torch.ones(2, device="tpu"))
        return ("no error", "", time.monotonic() - t0)
    except Exception as exc:  # noqa: BLE001 - recorded for the test
        return (type(exc).__name__, str(exc), time.monotonic() - t0)


SCENARIOS = {"killed": (killed, "tpu_dist", TIMEOUT_S)}
