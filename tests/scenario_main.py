"""The `__main__` of the torchrun worker scripts (pjrt_coll_workers.py, pjrt_mp_workers.py): run the scenario named
on the command line in this rank, save its result (or the crash) as rank<R>.pt in the given folder, and exit
without teardown (JAX's shutdown barrier must not hold a survivor of a dead peer)."""

from __future__ import annotations

from typing import Any


def run(scenarios: dict[str, tuple[Any, str, int]]) -> None:
    import datetime
    import os
    import sys
    import traceback

    import torch
    import torch.distributed as dist

    name, outdir = sys.argv[1], sys.argv[2]
    fn, backend, timeout_s = scenarios[name]
    r, w = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    try:
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
        result = fn(r, w)
    except BaseException:  # noqa: BLE001 - the test shows it
        result = {"crash": traceback.format_exc()}
    torch.save(result, os.path.join(outdir, f"rank{r}.pt"))
    sys.stdout.flush()
    os._exit(0)
