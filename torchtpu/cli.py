"""The `torchtpu` console command: `demo`, `info`, `perf` (the performance model), `explain`, `advise` and
`topology` (torchtpu/topology_cli.py)."""

from __future__ import annotations

import argparse
import sys


def _info() -> int:
    import torch

    import torchtpu

    props = torch.tpu.get_device_properties()
    print(f"torchtpu {torchtpu.__version__} on torch {torch.__version__}")
    print(f"driver: {torchtpu.stats()['driver']}, devices: {torch.tpu.device_count()}, device 0: {props.name}, "
          f"HBM {props.total_memory / 1e9:.1f} GB")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="torchtpu")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="train a small transformer on the simulated TPU and report", add_help=False)
    sub.add_parser("info", help="show the device and driver")
    from torchtpu.topology_cli import add_topology_parser, run_topology

    add_topology_parser(sub)
    try:
        from torchtpu.cli_perf import add_perf_parser, run_perf
    except ImportError:
        add_perf_parser = run_perf = None
    if add_perf_parser is not None:
        add_perf_parser(sub)
    from torchtpu.profiler.cli import add_parsers, run

    add_parsers(sub)
    args, rest = parser.parse_known_args(argv)
    if args.command == "demo":
        from torchtpu.demo import main as demo_main

        return demo_main(rest)
    if args.command in ("explain", "advise"):
        return run(args, rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "info":
        return _info()
    if args.command == "topology":
        return run_topology(args)
    return run_perf(args)


if __name__ == "__main__":
    raise SystemExit(main())
