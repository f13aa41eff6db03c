"""`python -m torchtpu.conformance`: run OpInfo entries on CPU and tpu, write docs/op-coverage.{json,md}.

Examples:
    python -m torchtpu.conformance                                # full float32/bfloat16/int64/bool sweep
    python -m torchtpu.conformance --ops 'nn.functional.conv*' --dtypes float32 --merge
    python -m torchtpu.conformance --every 10 --max-samples 3 --no-write
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchtpu.conformance", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtypes", default="float32,bfloat16,int64,bool",
                        help="comma-separated subset of float32,bfloat16,int64,bool")
    parser.add_argument("--ops", default="", help="comma-separated fnmatch patterns of entry names (name.variant)")
    parser.add_argument("--every", type=int, default=1, help="run every N-th selected entry (sampling)")
    parser.add_argument("--max-samples", type=int, default=None, help="at most N samples per entry and dtype")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per entry and dtype")
    parser.add_argument("--no-grad", action="store_true", help="compare outputs only")
    parser.add_argument("--json", type=Path, default=DOCS / "op-coverage.json")
    parser.add_argument("--md", type=Path, default=DOCS / "op-coverage.md")
    parser.add_argument("--merge", action="store_true", help="merge results into the existing JSON")
    parser.add_argument("--no-write", action="store_true", help="print only; write no files")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (each entry runs in a worker, so a "
                        "crash costs one entry)")
    parser.add_argument("--in-process", action="store_true", help="run in this process (for debugging)")
    parser.add_argument("--show", default="fail,fallback", help="statuses to list at the end")
    args = parser.parse_args(argv)

    import torch  # noqa: F401  (autoloads torchtpu)

    from torchtpu.conformance import harness, report

    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in harness.DTYPES]
    if bad:
        parser.error(f"unknown dtype(s) {bad}; valid: {', '.join(harness.DTYPES)}")
    patterns = [p.strip() for p in args.ops.split(",") if p.strip()]
    ops = harness.select(harness.load_op_db(), patterns, args.every)
    if patterns and not ops:
        parser.error(f"no OpInfo entry matches {patterns}")
    tasks = harness.tasks_for(ops, dtypes)
    start = time.perf_counter()
    if args.in_process:
        results = harness.run_many(tasks, max_samples=args.max_samples, timeout=args.timeout,
                                   check_grad=not args.no_grad, progress=not args.quiet)
    else:
        from torchtpu.conformance import workers

        index = {id(op): i for i, op in enumerate(harness.load_op_db())}
        names = {i: harness.entry_name(op) for op, i in ((o, index[id(o)]) for o in ops)}
        options = {"max_samples": args.max_samples, "timeout": args.timeout, "check_grad": not args.no_grad}
        results = workers.run_isolated([(index[id(op)], d) for op, d in tasks], names, options, jobs=args.jobs,
                                       progress=not args.quiet)
    minutes = round((time.perf_counter() - start) / 60, 1)
    show = set(args.show.split(","))
    for r in results:
        if r.status in show:
            extra = ", ".join(r.fallback_ops) if r.status == "fallback" else r.reason
            print(f"{r.status:8s} {r.dtype:8s} {r.name}: {extra}")
    summary = report.summarize(results)
    print(f"\n{len(tasks)} (entry, dtype) runs in {minutes} min")
    for d, s in summary.items():
        print(f"  {d:9s} entries {s['entries']:4d}  native {s['native']:4d}  fallback {s['fallback']:3d}  "
              f"fail {s['fail']:3d}  skip {s['skip']:3d}")
    if not args.no_write:
        merged = report.merge(report.load(args.json), results) if args.merge else report.merge([], results)
        command = " ".join(["python -m torchtpu.conformance", *(argv if argv is not None else sys.argv[1:])])
        meta = {"command": command if not args.merge else _previous(args.json, "command", command),
                "minutes": minutes if not args.merge else _previous(args.json, "minutes", minutes),
                "json": _relative(args.json)}
        report.write_json(args.json, merged, meta)
        report.write_markdown(args.md, merged, meta)
        print(f"wrote {args.json} and {args.md}")
    return 0


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(DOCS.parent))
    except ValueError:
        return str(path)


def _previous(path: Path, key: str, default: object) -> object:
    """A merged run keeps the full sweep's command and duration."""
    import json

    try:
        return json.loads(path.read_text()).get(key, default)
    except (OSError, ValueError):
        return default


if __name__ == "__main__":
    raise SystemExit(main())
