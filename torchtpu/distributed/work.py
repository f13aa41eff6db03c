"""The `Work` objects tpu_dist returns, and the errors it raises when a peer fails.

A collective's data movement finishes inside the call (the host moves it through gloo), so its Work is complete
when returned; `wait()` returns True and `get_future()` holds the output tensors (what DDP's reducer reads).
On the simulated timeline the collective runs on the device's comm stream until `done` = (device, end)
(clock.py): `wait()` makes the calling thread's current stream wait until then, and the future is a device
future (`torch.futures.Future(devices=...)`) completed on the comm stream, whose `wait()` makes the waiter's
current stream wait the same way (c10's CUDA-style future events, through the tpu device guard).
Point-to-point Works finish in `wait()` (p2p.py): a send waits for gloo, a receive's data lands in a host
buffer on a helper thread and is written to the tpu tensor on the waiting thread; `finish()` then returns the
transfer's (device, end) on the comm stream, and the Work waits and completes its device future as a collective's
does; `get_future()` finishes it first (on the calling thread). A receive from any source also answers
`_source_rank()` (the group rank it came from).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from torchtpu.distributed import clock

# How long a failing rank waits for the other ranks to report the same failure before naming the missing ones.
REPORT_WAIT_S = 5.0


class TpuWork(dist.Work):
    """A tpu_dist work item: done at creation (`finish` None) or finished by `finish()` on the first wait, which
    may return the transfer's (device, end) on the simulated timeline (point-to-point). `device`: the tpu device
    of a Work whose `done` is known only after `finish` (its future is then a device future too)."""

    def __init__(self, result: list[torch.Tensor], finish: Callable[[], tuple[int, float] | None] | None = None,
                 done: tuple[int, float] | None = None, device: int | None = None,
                 source: Callable[[], int] | None = None) -> None:
        super().__init__()
        self._result = result
        self._finish = finish
        self._done = done
        self._source = source
        self._exc: BaseException | None = None
        device = done[0] if done is not None else device
        if device is None:
            self._future: torch.futures.Future = torch.futures.Future()
            if finish is None:
                self._future.set_result(result)
        else:
            self._future = torch.futures.Future(devices=[torch.device("tpu", device)])
            if finish is None:
                _complete_on_comm(self._future, result, device)
        self._device = device

    def wait(self, timeout: timedelta | None = None) -> bool:
        self._complete()
        clock.wait_current(self._done)
        return True

    def _complete(self) -> None:
        """Runs `finish` once and completes the future (raises what it raised, then and on every later call)."""
        if self._finish is not None:
            finish, self._finish = self._finish, None
            try:
                done = finish()
            except BaseException as exc:
                self._exc = exc
                self._future.set_exception(exc)
                raise
            if done is not None:
                self._done = done
            if self._device is None:
                self._future.set_result(self._result)
            else:
                _complete_on_comm(self._future, self._result, self._device)
        if self._exc is not None:
            raise self._exc

    def _source_rank(self) -> int:
        """The group rank a receive from any source came from (after `wait()`), as gloo's Work answers."""
        if self._source is None:
            raise ValueError("_source_rank() is only defined for a recv from any source (src=None)")
        self._complete()
        return self._source()

    def get_future(self) -> torch.futures.Future:
        """The Work's future; for a point-to-point Work this first finishes the transfer (as `wait()` does, on
        the calling thread, where the data is written), so the future is complete when returned."""
        self._complete()
        return self._future

    def is_completed(self) -> bool:
        return self._finish is None

    def is_success(self) -> bool:
        return self._finish is None and self._exc is None

    def exception(self) -> BaseException | None:
        return self._exc

    def result(self) -> list[torch.Tensor]:
        return self._result

    def synchronize(self) -> None:
        self.wait()


def _complete_on_comm(future: torch.futures.Future, result: list[torch.Tensor], device: int) -> None:
    """Completes a device future of tpu:`device` on its comm stream (the event c10 records there reads the
    collective's end, where the comm stream's clock stands)."""
    from torchtpu import streams

    kind = streams.current_stream(device).device_type
    comm = streams.Stream(stream_id=streams.comm_stream(device), device_index=device, device_type=kind)
    with streams.stream(comm):
        future.set_result(result)


def missing_ranks(store: dist.Store, key: str, rank: int, size: int, timeout_s: float) -> list[int] | str:
    """After a failed collective: this rank reports `key` in the store and waits up to `timeout_s` for the other
    ranks to report the same; returns the ranks that did not (dead, or stuck elsewhere), or a sentence saying why
    the store could not be asked (its host is gone)."""
    try:
        store.set(f"{key}/{rank}", "1")
        deadline = time.monotonic() + timeout_s
        others = [r for r in range(size) if r != rank]
        while True:
            missing = [r for r in others if not store.check([f"{key}/{r}"])]
            if not missing or time.monotonic() >= deadline:
                return missing
            time.sleep(0.05)
    except Exception as exc:  # noqa: BLE001 - the diagnosis must not hide the failure it explains
        return (f"the rendezvous store cannot be reached to find the missing ranks ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}); its host (MASTER_ADDR, rank 0) is probably down")


def peer_failure(what: str, rank: int, missing: list[int] | str, cause: BaseException) -> dist.DistBackendError:
    """The error a rank raises when `what` (e.g. "all_reduce #7") failed in the transport."""
    if isinstance(missing, str):
        who = missing
    elif missing:
        who = (f"rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} did not reach it (died, or "
               "stuck before it)")
    else:
        who = "every rank reached it; the transport itself failed"
    first = str(cause).strip().splitlines()
    return dist.DistBackendError(f"tpu_dist {what} failed on rank {rank}: {who}. Transport error: "
                                 f"{type(cause).__name__}: {first[0] if first else ''}")


def describe(tensors: Any) -> str:
    """Dtype and shapes of a tensor or a (nested) list of tensors, for signatures and error messages."""
    if isinstance(tensors, torch.Tensor):
        return f"{str(tensors.dtype).replace('torch.', '')}{list(tensors.shape)}"
    return "[" + ", ".join(describe(t) for t in tensors) + "]"
