"""`python -m torchtpu.fuzz [--minutes N | --calls K] [--ops PATTERN,...] [--seed S] [--json FILE] [-v]`:
fuzzes the registered overloads against CPU and prints the tally and the findings (new ones first)."""

from __future__ import annotations

import argparse
import faulthandler
import json
import signal
import sys

from torchtpu.fuzz.runner import DEFAULT_RATES, Report, run


def summary(report: Report, show_known: bool = True) -> str:
    lines = [f"stopped early: {report.interrupted}"] if report.interrupted else []
    lines += [f"{report.calls} calls of {len(report.ops)} overloads, {report.tpu_runs} tpu runs in "
             f"{report.seconds:.0f} s", "outcomes: " + ", ".join(f"{k} {v}" for k, v in report.classes.most_common())]
    by_class = report.ops_by_class()
    lines.append("ops with a mismatch, by class: " + ", ".join(f"{k} {len(v)}" for k, v in sorted(by_class.items())))
    new = sorted(report.new(), key=lambda f: (f.op, f.cls, f.mode))
    lines.append(f"new findings: {len(new)}")
    for f in new:
        lines.append(f"  NEW {f.op} {f.cls} [{f.mode}] x{f.count}: {f.message}\n      {f.call}\n      {f.repro()}")
    if show_known:
        for f in sorted((f for f in report.findings.values() if f.known), key=lambda f: (f.op, f.cls, f.mode)):
            lines.append(f"  known {f.op} {f.cls} [{f.mode}] x{f.count}: {f.message} -- {f.known}")
    return "\n".join(lines)


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m torchtpu.fuzz", description=__doc__)
    p.add_argument("--minutes", type=float, default=None, help="run rounds of one call per op until time is up")
    p.add_argument("--calls", type=int, default=1, help="calls per op (without --minutes)")
    p.add_argument("--start", type=int, default=0, help="first call index (a finding's repro names it)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ops", default="", help="comma-separated fnmatch patterns (aten.add.*)")
    p.add_argument("--modes", default="", help="mode=rate,... (default " +
                   ",".join(f"{k}={v}" for k, v in DEFAULT_RATES.items()) + ")")
    p.add_argument("--json", default="", help="write the full report here")
    p.add_argument("--timeout", type=float, default=20.0, help="per-call limit in seconds")
    p.add_argument("--update-known", action="store_true",
                   help="add the new findings to known.json with the cause known.categorize names")
    p.add_argument("-v", "--verbose", action="store_true", help="print every call and its outcome")
    a = p.parse_args(argv)
    rates = None
    if a.modes:
        rates = {}
        for item in a.modes.split(","):
            mode, _, rate = item.partition("=")
            if mode not in DEFAULT_RATES:
                p.error(f"unknown mode {mode!r}; valid: {', '.join(DEFAULT_RATES)}")
            rates[mode] = float(rate or 1.0)
    signal.signal(signal.SIGTERM, _stop)  # `timeout` and schedulers: stop and still report what was found
    faulthandler.enable()  # a CPU kernel that crashes the process (CPU_CRASHES' next entry) leaves its stack
    report = run(seed=a.seed, calls_per_op=a.calls, start=a.start, minutes=a.minutes,
                 patterns=[x for x in a.ops.split(",") if x] or None, rates=rates, verbose=a.verbose,
                 timeout=a.timeout)
    print(summary(report))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report.to_json(), f, indent=1, default=str)
    if a.update_known:
        from torchtpu.fuzz import known

        print(f"known.json: {known.add(report.new())} entries added")
        return 0
    return 1 if report.new() else 0


if __name__ == "__main__":
    sys.exit(main())
