"""Before a tpu_dist collective moves data, its ranks agree on what it is and when it starts.

Every rank contributes a fixed-size int64 header through one gloo all-gather: the group's collective sequence
number, a CRC of the collective's signature (kind, reduce op, root, dtype, shapes: whatever must match across
ranks), whether this rank found its own arguments invalid, its simulated clock (float64 bits) and up to
2 x world ints of per-rank data (all-to-all split sizes). The header has the same size for every collective, so a
rank calling another collective cannot make gloo see mismatched buffers (gloo aborts the process on those).

When signatures, sequence numbers or local checks disagree, every rank sees it in the same all-gather, so all of
them raise the same ValueError (each rank's own description, exchanged in a second all-gather) instead of one
raising and the others hanging. A transport failure (a dead rank, a timeout) raises DistBackendError naming the
collective and the ranks that did not report the failure in the store (work.py).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

import torch
import torch._C._distributed_c10d as c10d
import torch.distributed as dist

from torchtpu.distributed.work import REPORT_WAIT_S, missing_ranks, peer_failure

TEXT_BYTES = 2048  # per-rank description exchanged when ranks disagree
_FIXED = 4  # seq, signature crc, local error flag, clock bits


class Agreement:
    """What the ranks agreed on: the collective's common start (the latest rank's clock), the rank whose clock
    that was (the straggler, the lowest such rank on a tie) and each rank's extras."""

    __slots__ = ("start", "latest", "extras")

    def __init__(self, start: float, extras: list[list[int]], latest: int = 0) -> None:
        self.start, self.extras, self.latest = start, extras, latest


def _clock_bits(clock: float) -> int:
    return int(torch.tensor([clock], dtype=torch.float64).view(torch.int64).item())


def _clock(bits: int) -> float:
    return float(torch.tensor([bits], dtype=torch.int64).view(torch.float64).item())


class Agreer:
    """The header exchange of one tpu_dist process group (its inner gloo group and store)."""

    def __init__(self, gloo: dist.ProcessGroup, store: dist.Store, rank: int, size: int, timeout_s: float) -> None:
        self.gloo, self.store, self.rank, self.size = gloo, store, rank, size
        self.report_wait_s = min(REPORT_WAIT_S, timeout_s)
        self.seq = 0
        self.group_name: Callable[[], str] = lambda: ""  # the c10d group name (set after construction)

    def header_len(self) -> int:
        return _FIXED + 2 * self.size + 1  # + the pjrt XLA-path flag (process_group.py)

    def gloo_wait(self, what: str, work: dist.Work) -> None:
        """Wait for a gloo work item; a transport failure raises the error naming `what` and the missing ranks."""
        try:
            work.wait()
        except RuntimeError as exc:
            raise self.failure(what, exc) from exc

    def failure(self, what: str, exc: BaseException) -> dist.DistBackendError:
        key = f"failed/{what.replace(' ', '_')}"
        missing = missing_ranks(self.store, key, self.rank, self.size, self.report_wait_s)
        name = self.group_name()
        group = f"group {name!r}" if name else "a tpu_dist group"
        return peer_failure(f"{what} of {group} ({self.size} ranks)", self.rank, missing, exc)

    def agree(self, kind: str, signature: str, local_error: str, clock: float, extras: Sequence[int] = (),
              check: Callable[[list[list[int]]], str] | None = None) -> Agreement:
        """Exchange headers for the next collective of `kind`; raise ValueError on every rank when they disagree
        or `check(extras of every rank)` returns an error sentence."""
        self.seq += 1
        seq = self.seq
        what = f"{kind} #{seq}"
        n = self.header_len()
        if len(extras) > n - _FIXED:
            raise AssertionError(f"{len(extras)} header extras for {n - _FIXED} slots")
        header = torch.zeros(n, dtype=torch.int64)
        header[:_FIXED] = torch.tensor([seq, zlib.crc32(f"{kind}|{signature}".encode()), int(bool(local_error)),
                                        _clock_bits(clock)], dtype=torch.int64)
        header[_FIXED:_FIXED + len(extras)] = torch.tensor(list(extras), dtype=torch.int64)
        everyone = torch.empty(n * self.size, dtype=torch.int64)
        self.gloo_wait(what, self.gloo.all_gather_single(everyone, header, c10d.AllgatherOptions()))
        rows = everyone.view(self.size, n).tolist()
        agreed = all(r[0] == rows[0][0] and r[1] == rows[0][1] for r in rows) and not any(r[2] for r in rows)
        if not agreed:
            self._raise_disagreement(what, kind, signature, local_error, rows)
        all_extras = [r[_FIXED:_FIXED + len(extras)] for r in rows]
        if check is not None:
            problem = check(all_extras)
            if problem:
                raise ValueError(f"tpu_dist {what}: {problem}")
        clocks = [_clock(r[3]) for r in rows]
        start = max(clocks)
        return Agreement(start, all_extras, clocks.index(start))

    def _raise_disagreement(self, what: str, kind: str, signature: str, local_error: str,
                            rows: list[list[int]]) -> None:
        mine = f"collective #{rows[self.rank][0]} {kind}({signature})" + (f": {local_error}" if local_error else "")
        raw = mine.encode()[:TEXT_BYTES]
        text = torch.zeros(TEXT_BYTES, dtype=torch.uint8)
        text[:len(raw)] = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
        texts = torch.empty(TEXT_BYTES * self.size, dtype=torch.uint8)
        self.gloo_wait(what, self.gloo.all_gather_single(texts, text, c10d.AllgatherOptions()))
        views = [bytes(row).rstrip(b"\0").decode(errors="replace")
                 for row in texts.view(self.size, TEXT_BYTES).tolist()]
        errors = [f"rank {r}: {v}" for r, v in enumerate(views) if rows[r][2]]
        if errors:
            head = "invalid arguments"
        else:
            head = "the ranks called different collectives or passed tensors that do not match across ranks"
        lines = errors if errors else [f"rank {r}: {v}" for r, v in enumerate(views)]
        raise ValueError(f"tpu_dist {what}: {head}:\n  " + "\n  ".join(lines))
