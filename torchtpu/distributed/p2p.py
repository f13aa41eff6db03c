"""Point-to-point send/recv of tpu tensors for tpu_dist, deadlock-free under `batch_isend_irecv`.

A send posts two gloo sends on the user's tag: a 256-byte header (the tensor's dtype and shape, its byte count,
the sender's simulated clock) and the data (a host copy). A receive must not post its data buffer before it knows
the sender's byte count (gloo aborts the process on a size mismatch) and must not block the caller (an `irecv`
posted before the matching `isend` of the same batch would deadlock), so each receive runs on a daemon thread:
header, check, data into a host buffer. Receives on one (source, tag) channel run in order, as gloo matches them.
`wait()` writes the host buffer to the tpu tensor and charges the transfer on the waiting thread; a mismatch
(dtype or shape) raises ValueError there, after the thread drained the sender's bytes so that the sender is not
left blocked.

Clocks: the sender is charged from its own start (it does not wait for the receiver); the receiver from
max(its start, the sender's start) (clock.py).
"""

from __future__ import annotations

import threading
import time

import torch
import torch.distributed as dist

from torchtpu import runtime
from torchtpu.distributed import clock
from torchtpu.distributed.work import TpuWork, describe, peer_failure
from torchtpu.execution import deferred

HEADER_BYTES = 256


def _header(tensor: torch.Tensor, clock_s: float) -> torch.Tensor:
    raw = f"{describe(tensor)}|{tensor.numel() * tensor.element_size()}|{clock_s!r}".encode()
    if len(raw) > HEADER_BYTES:
        raise ValueError(f"tpu_dist send: tensor of {tensor.dim()} dimensions is too large to describe in the "
                         f"{HEADER_BYTES}-byte header")
    out = torch.zeros(HEADER_BYTES, dtype=torch.uint8)
    out[:len(raw)] = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    return out


def _parse(header: torch.Tensor) -> tuple[str, int, float]:
    desc, nbytes, clock_s = bytes(header.tolist()).rstrip(b"\0").decode().split("|")
    return desc, int(nbytes), float(clock_s)


def host_copy(t: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU copy of tpu tensor `t` (pending work flushed by the caller)."""
    out = torch.empty(t.shape, dtype=t.dtype)
    out.copy_(runtime.host_tensor(t))
    return out


class _Inbox:
    """One receive's result, filled by its thread."""

    __slots__ = ("done", "host", "sender_clock", "error", "transport")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.host: torch.Tensor | None = None
        self.sender_clock = 0.0
        self.error: BaseException | None = None
        self.transport: BaseException | None = None


class PointToPoint:
    """send/recv over a tpu_dist group's inner gloo group."""

    def __init__(self, gloo: dist.ProcessGroup, rank: int, size: int) -> None:
        self.gloo, self.rank, self.size = gloo, rank, size
        self._last: dict[tuple[int, int], threading.Event] = {}  # (src, tag) -> the channel's previous receive
        self._lock = threading.Lock()

    def _check_peer(self, what: str, peer: int) -> None:
        if not 0 <= peer < self.size or peer == self.rank:
            raise ValueError(f"tpu_dist {what}: peer rank {peer} is not another rank of this group (ranks "
                             f"0..{self.size - 1}, this one is {self.rank})")

    def send(self, tensor: torch.Tensor, dst: int, tag: int, device: int) -> TpuWork:
        what = f"send to rank {dst} (tag {tag})"
        self._check_peer(what, dst)
        t0 = time.perf_counter()
        deferred.flush()
        own = clock.local_start(device)
        header, host = _header(tensor, own), host_copy(tensor)
        try:
            works = [self.gloo.send([header], dst, tag), self.gloo.send([host], dst, tag)]
        except RuntimeError as exc:
            raise peer_failure(what, self.rank, f"rank {dst} cannot be reached", exc) from exc
        nbytes = host.numel() * host.element_size()
        seconds = clock.collective_seconds("send", nbytes, self.size, clock.chip_of(device))
        clock.charge(device, "send", own, seconds, nbytes, own, time.perf_counter() - t0)

        def finish() -> None:
            try:
                for w in works:
                    w.wait()
            except RuntimeError as exc:
                raise peer_failure(what, self.rank, f"rank {dst} did not receive it (died, or is stuck before "
                                   "the matching recv)", exc) from exc
            _ = host  # the data must stay alive until gloo sent it

        return TpuWork([tensor], finish)

    def recv(self, tensor: torch.Tensor, src: int, tag: int, device: int) -> TpuWork:
        what = f"recv from rank {src} (tag {tag})"
        self._check_peer(what, src)
        t0 = time.perf_counter()
        deferred.flush()
        own = clock.local_start(device)
        inbox = _Inbox()
        with self._lock:
            previous = self._last.get((src, tag))
            self._last[(src, tag)] = inbox.done
        expected = describe(tensor)
        thread = threading.Thread(target=self._receive, name=f"tpu_dist-recv-{src}-{tag}", daemon=True,
                                  args=(previous, src, tag, expected, tuple(tensor.shape), tensor.dtype, inbox))
        thread.start()
        wall = time.perf_counter() - t0

        def finish() -> None:
            inbox.done.wait()
            if inbox.transport is not None:
                raise peer_failure(what, self.rank, f"rank {src} did not send it (died, or is stuck before the "
                                   "matching send)", inbox.transport) from inbox.transport
            if inbox.error is not None:
                raise inbox.error
            t1 = time.perf_counter()
            deferred.flush()
            runtime.write_from_host(tensor, inbox.host)
            nbytes = tensor.numel() * tensor.element_size()
            seconds = clock.collective_seconds("recv", nbytes, self.size, clock.chip_of(device))
            clock.charge(device, "recv", max(own, inbox.sender_clock), seconds, nbytes, own,
                         wall + time.perf_counter() - t1)

        return TpuWork([tensor], finish)

    def _receive(self, previous: threading.Event | None, src: int, tag: int, expected: str,
                 shape: tuple[int, ...], dtype: torch.dtype, inbox: _Inbox) -> None:
        try:
            if previous is not None:
                previous.wait()
            header = torch.zeros(HEADER_BYTES, dtype=torch.uint8)
            self.gloo.recv([header], src, tag).wait()
            desc, nbytes, inbox.sender_clock = _parse(header)
            if desc != expected:
                self.gloo.recv([torch.empty(nbytes, dtype=torch.uint8)], src, tag).wait()  # drain the sender
                inbox.error = ValueError(f"tpu_dist recv from rank {src} (tag {tag}) on rank {self.rank}: the "
                                         f"sender sent {desc}, this rank's tensor is {expected}; dtype and shape "
                                         "must match")
                return
            host = torch.empty(shape, dtype=dtype)
            self.gloo.recv([host], src, tag).wait()
            inbox.host = host
        except RuntimeError as exc:
            inbox.transport = exc
        except BaseException as exc:  # noqa: BLE001 - reported on the waiting thread
            inbox.error = exc
        finally:
            inbox.done.set()
