"""The `__main__` of the torchrun worker scripts (pjrt_coll_workers.py, pjrt_mp_workers.py): run the scenario named
on the command line in this rank, save its result (or the crash) as rank<R>.pt in the given folder, and exit
without teardown (JAX's shutdown barrier must not hold a survivor of a dead peer).

Rank 0's process hosts JAX's coordination service, and the other ranks' JAX clients abort once it is gone: so
rank 0 leaves last, after every other rank has saved its result or exited (a rank that dies on purpose)."""

from __future__ import annotations

import os
import time
from typing import Any

_WAIT_S = 60.0


def _running(pid: int) -> bool:
    """Whether process `pid` runs (an exited child torchrun has not reaped yet is a zombie: not running)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False


def _wait_for_the_others(outdir: str, world: int) -> None:
    deadline = time.monotonic() + _WAIT_S
    waiting = set(range(1, world))
    while waiting and time.monotonic() < deadline:
        for k in list(waiting):
            if os.path.exists(os.path.join(outdir, f"rank{k}.pt")):
                waiting.discard(k)
                continue
            try:
                with open(os.path.join(outdir, f"pid{k}")) as f:
                    pid = int(f.read())
            except (FileNotFoundError, ValueError):
                continue  # not started yet
            if not _running(pid):
                waiting.discard(k)
        time.sleep(0.05)


def run(scenarios: dict[str, tuple[Any, str, int]]) -> None:
    import datetime
    import sys
    import traceback

    import torch
    import torch.distributed as dist

    name, outdir = sys.argv[1], sys.argv[2]
    fn, backend, timeout_s = scenarios[name]
    r, w = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    with open(os.path.join(outdir, f"pid{r}.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.path.join(outdir, f"pid{r}.tmp"), os.path.join(outdir, f"pid{r}"))
    try:
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
        result = fn(r, w)
    except BaseException:  # noqa: BLE001 - the test shows it
        result = {"crash": traceback.format_exc()}
    partial = os.path.join(outdir, f"rank{r}.pt.partial")  # renamed when whole: a reader never sees half a file
    torch.save(result, partial)
    os.replace(partial, os.path.join(outdir, f"rank{r}.pt"))
    sys.stdout.flush()
    if r == 0:
        _wait_for_the_others(outdir, w)
    os._exit(0)
