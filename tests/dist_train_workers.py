"""Training rank programs for tests/test_distributed.py (launched by dist_workers.py): DDP on tpu_dist vs one chip."""

from __future__ import annotations

import copy
from typing import Any

TIMEOUT_S = 30
STEPS = 5


def _model() -> Any:
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))


def _data() -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(1)
    return torch.randn(16, 8, generator=g), torch.randn(16, 4, generator=g)


def _train(model: Any, x: Any, y: Any, lr: float = 0.1, steps: int = STEPS) -> list[float]:
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def ddp(rank: int, world: int) -> dict[str, Any]:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    import torchtpu

    torchtpu.set_precision("HIGHEST")
    x, y = _data()
    base = _model().to("tpu")
    single = copy.deepcopy(base)
    model = DistributedDataParallel(base)
    n = x.shape[0] // world
    shard = slice(rank * n, (rank + 1) * n)
    losses = _train(model, x[shard].to("tpu"), y[shard].to("tpu"))
    single_losses = _train(single, x.to("tpu"), y.to("tpu"))
    out = {"params": [p.detach().cpu() for p in model.module.parameters()],
           "single": [p.detach().cpu() for p in single.parameters()],
           "losses": losses, "single losses": single_losses, "dist stats": torchtpu.distributed.stats()}
    dist.destroy_process_group()
    return out


SCENARIOS = {"ddp": (ddp, None, TIMEOUT_S)}
