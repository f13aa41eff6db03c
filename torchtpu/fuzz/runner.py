"""The fuzz loop: for each registered overload, seeded random calls from its schema, run on CPU and on "tpu" in
the eager modes (and under torch.compile for a sample), classified and tallied; mismatches not in known.json
are new findings."""

from __future__ import annotations

import contextlib
import logging
import resource
import time
import warnings
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from torchtpu.fuzz import known as known_mod
from torchtpu.fuzz.args import Unsupported, make_call
from torchtpu.fuzz.outcome import CallTimeout, Outcome, _with_timeout, classify, run_cpu, run_tpu, too_large
from torchtpu.fuzz.overloads import cpu_crashes, registered, select

OK_CLASSES = ("ok", "both_raise", "cpu_unsupported")
DEFAULT_RATES = {"DEFER_NEVER": 1.0, "DEFER_AND_FUSE": 0.5, "LAUNCH_BLOCKING": 0.1, "compile": 0.02}


@dataclass
class Finding:
    op: str
    cls: str
    mode: str
    message: str
    call: str
    seed: int
    index: int
    count: int = 1
    known: str | None = None  # the reason, when known.json lists it

    def repro(self) -> str:
        return f"python -m torchtpu.fuzz --ops {self.op} --seed {self.seed} --start {self.index} --calls 1 -v"


@dataclass
class Report:
    calls: int = 0
    tpu_runs: int = 0
    ops: set[str] = field(default_factory=set)
    classes: Counter[str] = field(default_factory=Counter)
    unsupported: dict[str, str] = field(default_factory=dict)
    findings: dict[tuple[str, str, str], Finding] = field(default_factory=dict)
    seconds: float = 0.0
    interrupted: str = ""  # why the run stopped early (Ctrl-C, SIGTERM), with the call it was in

    def new(self) -> list[Finding]:
        return [f for f in self.findings.values() if f.known is None]

    def ops_by_class(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for f in self.findings.values():
            out.setdefault(f.cls, set()).add(f.op)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "tpu_runs": self.tpu_runs, "ops": len(self.ops), "seconds": self.seconds,
                "classes": dict(self.classes), "interrupted": self.interrupted, "unsupported": self.unsupported,
                "ops_by_class": {k: sorted(v) for k, v in self.ops_by_class().items()},
                "findings": [vars(f) | {"repro": f.repro()} for f in self.findings.values()]}


def call_rng(seed: int, op_name: str, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(op_name.encode()), index])


def fuzz_one(op: torch._ops.OpOverload, seed: int, index: int, report: Report, rates: dict[str, float],
             timeout: float = 20.0, verbose: bool = False) -> None:
    """One random call of `op` in the modes `rates` picks; adds its outcomes to `report`."""
    name = str(op)
    rng = call_rng(seed, name, index)
    try:
        call = make_call(op, rng, seed)
    except Unsupported as e:
        report.unsupported[name] = str(e)
        return
    mode_rng = np.random.default_rng([seed, zlib.crc32(name.encode()), index, 1])
    modes = [m for m, p in rates.items() if mode_rng.random() < p]
    if not modes:
        return
    if cpu_crashes(call):
        report.classes["cpu_crash_skipped"] += 1
        return
    report.calls += 1
    report.ops.add(name)
    try:
        cpu = _with_timeout(timeout, lambda: run_cpu(call))
    except CallTimeout:
        report.classes["cpu_timeout"] += 1
        return
    if too_large(cpu):
        report.classes["skipped_large"] += 1
        return
    reference_cache: list[Outcome] = []

    def reference() -> Outcome:
        if not reference_cache:
            reference_cache.append(run_cpu(call, upcast=True))
        return reference_cache[0]

    with torch.tpu.precision("HIGHEST"):
        for mode in modes:
            tpu = run_tpu(call, mode, timeout)
            report.tpu_runs += 1
            verdict = classify(call, cpu, tpu, reference)
            report.classes[verdict.cls] += 1
            if verbose:
                print(f"[{mode}] {call!r} -> {verdict.cls} {verdict.message}")
            if verdict.cls in OK_CLASSES:
                continue
            key = (name, verdict.cls, mode)
            if key in report.findings:
                report.findings[key].count += 1
                continue
            report.findings[key] = Finding(name, verdict.cls, mode, verdict.message, repr(call)[:400], seed, index,
                                           known=known_mod.reason(name, verdict.cls, mode))


MEMORY_CAP = 10 << 30  # address space while fuzzing: a huge allocation becomes MemoryError, not the OOM killer


@contextlib.contextmanager
def _memory_cap() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = MEMORY_CAP if hard == resource.RLIM_INFINITY else min(MEMORY_CAP, hard)
    lowered = soft == resource.RLIM_INFINITY or soft > cap
    if lowered:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        if lowered:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run(seed: int = 0, calls_per_op: int = 1, start: int = 0, patterns: list[str] | None = None,
        minutes: float | None = None, rates: dict[str, float] | None = None, stride: int = 1, offset: int = 0,
        verbose: bool = False, timeout: float = 20.0) -> Report:
    """Fuzzes the registered overloads matching `patterns` (every `stride`-th from `offset`): `calls_per_op`
    calls each starting at call index `start`, or, with `minutes`, rounds of one call per op until time is up."""
    rates = dict(DEFAULT_RATES if rates is None else rates)
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)
    logging.getLogger("torch._dynamo").setLevel(logging.CRITICAL)
    with warnings.catch_warnings(), _memory_cap():
        warnings.simplefilter("ignore")
        return _loop(seed, calls_per_op, start, patterns, minutes, rates, stride, offset, verbose, timeout)


def _loop(seed: int, calls_per_op: int, start: int, patterns: list[str] | None, minutes: float | None,
          rates: dict[str, float], stride: int, offset: int, verbose: bool, timeout: float) -> Report:
    ops = select(registered(), patterns)[offset::max(stride, 1)]
    report = Report()
    began = time.monotonic()
    index = start
    while True:
        for op in ops:
            try:
                fuzz_one(op, seed, index, report, rates, timeout, verbose)
            except KeyboardInterrupt:
                report.interrupted = f"interrupted in {op} call {index} (seed {seed})"
                report.seconds = time.monotonic() - began
                return report
            if minutes is not None and time.monotonic() - began > minutes * 60:
                report.seconds = time.monotonic() - began
                return report
        index += 1
        if minutes is None and index >= start + calls_per_op:
            break
    report.seconds = time.monotonic() - began
    return report
