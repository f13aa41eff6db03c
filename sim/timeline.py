"""Simulated clocks: owns `Timeline`, the host and device clocks of one chip and its per-executable records.

The host issues work (`host_issue` advances the host clock, e.g. by the launch overhead) and `launch`es
executables; the device runs each one from max(host clock, device free time) for `record.seconds`, so host
and device overlap as with an asynchronous runtime. `synchronize` makes the host wait for the device. Op-by-op
runs of small ops are therefore host-bound (launch overhead > op time) and runs of large ops device-bound.
Times are simulated seconds, starting at 0; nothing here looks at values.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from typing import Any

from .chips import ChipSpec, get_chip
from .cost import CostRecord

__all__ = ["MAX_RECORDS", "Timeline", "TimelineRecord"]

# Per-executable records kept for traces: the most recent ones only, so that a long run's memory stays flat.
# Totals (time, FLOPs, bytes, launches, per-op breakdown) are running sums over every launch.
MAX_RECORDS = 100_000
# A kept record is four numbers in a flat deque (start, end, issued, id of its charge): a launch allocates no
# object the cyclic garbage collector tracks and keeps. A record tuple holding the charge (or its CostRecord and
# Program) stayed tracked and was promoted to the oldest generation, so filling the deque ran full collections of
# the whole heap: measured ~1.7 us per launch on an 8x8 mm loop (200,000 launches), more than the op's timeline
# cost. The charges the records name are kept by id in `_charges` (which keeps them alive, so an id is never
# reused while a record names it), pruned to those still named when it grows past twice the records kept.
_PRUNE_SLACK = 1024


@dataclass(frozen=True)
class TimelineRecord:
    """One executable on the device."""

    name: str
    op: str
    flops: float
    hbm_bytes: float
    cycles: float
    bound: str
    start: float
    end: float
    issued: float  # host clock when it was launched
    cost: CostRecord | None = None  # the executable's full cost (unit times, padded FLOPs, fused op list)
    source: Any = None  # what the driver launched (its Program), opaque here; profilers read it

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def mxu_seconds(self) -> float:
        return self.cost.mxu_seconds if self.cost is not None else 0.0


class Timeline:
    """Host and device clocks of one simulated chip."""

    def __init__(self, chip: ChipSpec | str | None = None) -> None:
        self.chip = get_chip(chip)
        self.reset()

    def reset(self) -> None:
        """Clocks back to 0, records cleared."""
        self._host = 0.0
        self._device_free = 0.0
        self._busy = 0.0
        self._launches = 0
        self._by_op: dict[str, list[float]] = {}  # op -> [count, seconds, flops, hbm_bytes]
        # start, end, issued, id(charge) of the last MAX_RECORDS launches, flat (TimelineRecords built by `records`)
        self._records: deque[float] = deque(maxlen=4 * MAX_RECORDS)
        # id(charge) -> (charge, its op's `_by_op` totals), for every charge a kept record names
        self._charges: dict[int, tuple] = {}

    def host_issue(self, seconds: float) -> None:
        """Advance the host clock by `seconds` of host work (launch overhead, Python, copies...)."""
        if seconds < 0:
            raise ValueError(f"host_issue needs seconds >= 0, got {seconds}")
        self._host += float(seconds)

    @staticmethod
    def charge(record: CostRecord, name: str = "", source: Any = None) -> tuple:
        """What a launch reads from `record`: (op, name, seconds, flops, hbm_bytes, cycles, bound, record,
        source), the numbers as floats; `source` (what is launched, e.g. the Program) is kept opaque in each
        TimelineRecord. A caller that launches the same record many times makes this once and calls `issue`."""
        return (record.op, name or record.op, float(record.seconds), float(record.flops), float(record.hbm_bytes),
                float(record.cycles), record.bound, record, source)

    def launch(self, record: CostRecord, name: str = "") -> None:
        """Queue one executable: it starts at max(host clock, device free time) and runs record.seconds."""
        self.issue(0.0, self.charge(record, name))

    def issue(self, host_seconds: float, charge: tuple) -> None:
        """`host_issue(host_seconds)` (>= 0, not checked) then the launch of `charge` (made by `Timeline.charge`)."""
        host = self._host = self._host + host_seconds
        free = self._device_free
        start = free if free > host else host  # max(host, device free)
        seconds = charge[2]
        end = self._device_free = start + seconds
        # `_account(charge, start, end)` inlined: one Python call fewer on every eager launch
        key = id(charge)
        known = self._charges.get(key)
        totals = known[1] if known is not None else self._first_use(charge, key)
        self._busy += seconds
        self._launches += 1
        totals[0] += 1
        totals[1] += seconds
        totals[2] += charge[3]
        totals[3] += charge[4]
        self._records.extend((start, end, host, key))  # (a tuple freed at once: nothing kept is tracked)

    def _account(self, charge: tuple, start: float, end: float) -> None:
        """Counts the launch of `charge` that ran on the device over [start, end] (busy time, per-op totals, record)."""
        key = id(charge)
        known = self._charges.get(key)
        totals = known[1] if known is not None else self._first_use(charge, key)
        seconds = charge[2]
        self._busy += seconds
        self._launches += 1
        totals[0] += 1
        totals[1] += seconds
        totals[2] += charge[3]
        totals[3] += charge[4]
        self._records.extend((start, end, self._host, key))

    def _first_use(self, charge: tuple, key: int) -> list:
        """Notes `charge` (id `key`) in the charge table with its op's running totals, which it returns."""
        charges = self._charges
        if len(charges) >= len(self._records) // 2 + _PRUNE_SLACK:
            charges = self._prune()
        totals = self._by_op.get(charge[0])
        if totals is None:
            totals = self._by_op[charge[0]] = [0, 0.0, 0.0, 0.0]  # count, seconds, flops, hbm_bytes
        charges[key] = (charge, totals)
        return totals

    def _prune(self) -> dict[int, tuple]:
        """Forgets the charges no kept record names; returns the new table."""
        named = set(itertools.islice(self._records, 3, None, 4))
        self._charges = {k: c for k, c in self._charges.items() if k in named}
        return self._charges

    def _kept(self, last: int | None = None) -> list[TimelineRecord]:
        """The kept records (the `last` ones only when given), oldest first."""
        flat = list(self._records) if last is None else list(self._records)[len(self._records) - 4 * last:]
        charges = self._charges
        out = []
        for i in range(0, len(flat), 4):
            op, name, _, flops, hbm_bytes, cycles, bound, cost, source = charges[flat[i + 3]][0]
            out.append(TimelineRecord(name, op, flops, hbm_bytes, cycles, bound, flat[i], flat[i + 1], flat[i + 2],
                                      cost, source))
        return out

    def synchronize(self) -> float:
        """Host waits until the device is idle; returns the (new) host clock."""
        if self._device_free > self._host:
            self._host = self._device_free
        return self._host

    @property
    def device_seconds(self) -> float:
        """Total time the device was busy."""
        return self._busy

    @property
    def host_seconds(self) -> float:
        return self._host

    @property
    def wall_seconds(self) -> float:
        """max(host clock, device finish time)."""
        return max(self._host, self._device_free)

    @property
    def records(self) -> list[TimelineRecord]:
        """The most recent launches (at most MAX_RECORDS), oldest first."""
        return self._kept()

    @property
    def launch_count(self) -> int:
        """Launches since the last reset (a profiler notes it at start to read only its window's records)."""
        return self._launches

    def records_since(self, launch_count: int) -> list[TimelineRecord]:
        """The records of launches after the `launch_count`-th one (those still kept), oldest first."""
        n = min(self._launches - launch_count, len(self._records) // 4)
        if n <= 0:
            return []
        return self._kept(n)

    def totals(self) -> dict[str, Any]:
        """device_seconds, flops, hbm_bytes, launches and a per-op-kind breakdown, over every launch."""
        by_op = {op: {"count": int(c), "seconds": sec, "flops": fl, "hbm_bytes": hb}
                 for op, (c, sec, fl, hb) in self._by_op.items()}
        return {
            "device_seconds": self._busy,
            "flops": sum(d["flops"] for d in by_op.values()),
            "hbm_bytes": sum(d["hbm_bytes"] for d in by_op.values()),
            "launches": self._launches,
            "by_op": by_op,
        }

    def to_chrome_trace(self, pid: int = 0) -> dict[str, Any]:
        """Chrome/Perfetto trace JSON: one complete ('X') event per executable, times in microseconds."""
        events: list[dict[str, Any]] = [
            {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": f"{self.chip.display_name}"}},
            {"ph": "M", "pid": pid, "tid": 0, "name": "thread_name", "args": {"name": "device"}},
            {"ph": "M", "pid": pid, "tid": 1, "name": "thread_name", "args": {"name": "host launches"}},
        ]
        for r in self.records:
            args = {k: getattr(r, k) for k in ("op", "flops", "hbm_bytes", "cycles", "bound", "issued")}
            events.append({"ph": "X", "pid": pid, "tid": 0, "name": r.name, "cat": r.op,
                           "ts": r.start * 1e6, "dur": r.seconds * 1e6, "args": args})
            events.append({"ph": "i", "pid": pid, "tid": 1, "name": f"launch {r.name}", "s": "t",
                           "ts": r.issued * 1e6})
        return {"traceEvents": events, "displayTimeUnit": "ns"}
