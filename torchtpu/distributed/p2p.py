"""Point-to-point send/recv of tpu tensors for tpu_dist, deadlock-free under `batch_isend_irecv`.

A send posts two gloo sends on the user's tag: a 256-byte header (the tensor's dtype and shape, its byte count,
the sender's simulated clock) and the data (a host copy). A receive must not post its data buffer before it knows
the sender's byte count (gloo aborts the process on a size mismatch) and must not block the caller (an `irecv`
posted before the matching `isend` of the same batch would deadlock), so each receive runs on a daemon thread:
header, check, data into a host buffer. Receives on one (source, tag) channel run in order, as gloo matches them.
A receive from any source (`src=None`) takes the header through gloo's `recv_anysource`, then the data from the
rank that header came from; so that it never takes a header another receive of the same tag is waiting for
(and then that receive a data message), it starts after every earlier receive of its tag, and later receives of
the tag start after it. `wait()` writes the host buffer to the tpu tensor and charges the transfer on the waiting
thread; a mismatch (dtype or shape) raises ValueError there, after the thread drained the sender's bytes so that
the sender is not left blocked.

Clocks: a message costs `clock.p2p_seconds` (the route between the two ranks' chips: per-hop latency plus the
bytes at one link's one-way bandwidth, or a DCN step between slices). It runs on the comm stream and the ICI
engine like a collective (clock.py): the sender's from its own start (it does not wait for the receiver), the
receiver's from max(its start, the sender's start); the Work's `wait()` makes the current stream wait for its
end, as a collective's does (work.py).
"""

from __future__ import annotations

import threading
import time
from typing import Any

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

    __slots__ = ("done", "host", "sender_clock", "error", "transport", "source")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.host: torch.Tensor | None = None
        self.sender_clock = 0.0
        self.error: BaseException | None = None
        self.transport: BaseException | None = None
        self.source = -1


class PointToPoint:
    """send/recv over a tpu_dist group's inner gloo group."""

    def __init__(self, gloo: dist.ProcessGroup, rank: int, size: int, group: Any = None) -> None:
        self.gloo, self.rank, self.size, self.group = gloo, rank, size, group
        self._last: dict[tuple[int, int], threading.Event] = {}  # (src, tag) -> the channel's previous receive
        self._any: dict[int, threading.Event] = {}  # tag -> the previous receive from any source on it
        self._lock = threading.Lock()

    def _seconds(self, nbytes: float, device: int, a: int, b: int) -> float:
        if clock.timeline_of(device) is None:  # pjrt: real devices, no simulated clock
            return 0.0
        return clock.p2p_seconds(nbytes, self.size, clock.chip_of(device), self.group, a, b)

    def _after(self, src: int | None, tag: int, done: threading.Event) -> list[threading.Event]:
        """The receives this one must wait for (module docstring), and this one registered as the latest."""
        with self._lock:
            if src is None:
                before = [e for (_, t), e in self._last.items() if t == tag]
                before += [self._any[tag]] if tag in self._any else []
                self._any[tag] = done
            else:
                before = [e for e in (self._last.get((src, tag)), self._any.get(tag)) if e is not None]
                self._last[(src, tag)] = done
        return before

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
        seconds = self._seconds(nbytes, device, self.rank, dst)
        done = clock.charge(device, "send", own, seconds, nbytes, own, time.perf_counter() - t0)

        def finish() -> tuple[int, float] | None:
            try:
                for w in works:
                    w.wait()
            except RuntimeError as exc:
                raise peer_failure(what, self.rank, f"rank {dst} did not receive it (died, or is stuck before "
                                   "the matching recv)", exc) from exc
            _ = host  # the data must stay alive until gloo sent it
            return done

        return TpuWork([tensor], finish, device=device)

    def recv(self, tensor: torch.Tensor, src: int | None, tag: int, device: int) -> TpuWork:
        """Receive into `tensor` from group rank `src` (None: from any source)."""
        what = f"recv from {'any rank' if src is None else f'rank {src}'} (tag {tag})"
        if src is not None:
            self._check_peer(what, src)
        t0 = time.perf_counter()
        deferred.flush()
        own = clock.local_start(device)
        inbox = _Inbox()
        previous = self._after(src, tag, inbox.done)
        expected = describe(tensor)
        thread = threading.Thread(target=self._receive, name=f"tpu_dist-recv-{src}-{tag}", daemon=True,
                                  args=(previous, src, tag, expected, tuple(tensor.shape), tensor.dtype, inbox))
        thread.start()
        wall = time.perf_counter() - t0

        def finish() -> tuple[int, float] | None:
            inbox.done.wait()
            if inbox.transport is not None:
                who = "no rank" if src is None else f"rank {src}"
                raise peer_failure(what, self.rank, f"{who} did not send it (died, or is stuck before the "
                                   "matching send)", inbox.transport) from inbox.transport
            if inbox.error is not None:
                raise inbox.error
            t1 = time.perf_counter()
            deferred.flush()
            runtime.write_from_host(tensor, inbox.host)
            nbytes = tensor.numel() * tensor.element_size()
            seconds = self._seconds(nbytes, device, inbox.source, self.rank)
            return clock.charge(device, "recv", max(own, inbox.sender_clock), seconds, nbytes, own,
                                wall + time.perf_counter() - t1, latest=inbox.source)

        return TpuWork([tensor], finish, device=device, source=lambda: inbox.source)

    def _receive(self, previous: list[threading.Event], src: int | None, tag: int, expected: str,
                 shape: tuple[int, ...], dtype: torch.dtype, inbox: _Inbox) -> None:
        try:
            for event in previous:
                event.wait()
            header = torch.zeros(HEADER_BYTES, dtype=torch.uint8)
            if src is None:
                work = self.gloo.recv_anysource([header], tag)
                work.wait()
                src = int(work._source_rank())
            else:
                self.gloo.recv([header], src, tag).wait()
            inbox.source = src
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
