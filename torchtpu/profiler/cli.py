"""`torchtpu explain script.py [args...]` and `torchtpu advise TARGET`: owns the two subcommands' parsers.

advise's TARGET is `path/to/file.py:factory` or `package.module:factory` (a function returning
`(model, example_inputs)`), or `zoo:NAME` for a model of torchtpu.validate_models.
"""

from __future__ import annotations

import argparse
import importlib
import runpy
from typing import Any


def add_parsers(sub: Any) -> None:
    ex = sub.add_parser("explain", help="run a script on the simulated TPU and explain graphs, breaks, "
                        "recompiles, flushes and time")
    ex.add_argument("script", help="the Python script to run (its arguments follow)")
    ad = sub.add_parser("advise", help="ranked advice with predicted simulated step times")
    ad.add_argument("target", help="file.py:factory, module:factory (returns (model, example_inputs)) or zoo:NAME")
    ad.add_argument("--chip", default=None, help="chip to predict on (default: the simulated one)")
    ad.add_argument("--inference", action="store_true", help="forward only (default: forward + backward)")
    ad.add_argument("--report", default=None, help="write an HTML report (with plots) to this path")
    ad.add_argument("--precision", default=None, help="run at DEFAULT / HIGH / HIGHEST")


def _target(spec: str) -> tuple[Any, Any]:
    if spec.startswith("zoo:"):
        from torchtpu.validate_models import MODELS, to_device

        name = spec[4:]
        if name not in MODELS:
            raise SystemExit(f"torchtpu advise: unknown zoo model {name!r}; valid: {', '.join(MODELS)}")
        model = MODELS[name].build().to("tpu")
        return model, to_device(MODELS[name].make_inputs(), "tpu")
    if ":" not in spec:
        raise SystemExit(f"torchtpu advise: TARGET {spec!r} must be file.py:factory, module:factory or zoo:NAME")
    where, func = spec.rsplit(":", 1)
    namespace = runpy.run_path(where) if where.endswith(".py") else vars(importlib.import_module(where))
    if func not in namespace:
        raise SystemExit(f"torchtpu advise: {where} defines no {func!r}")
    return namespace[func]()


def run(args: argparse.Namespace, rest: list[str]) -> int:
    import torch

    if args.command == "explain":
        from torchtpu.profiler.explain import explain_script

        print(explain_script(args.script, rest))
        return 0
    if rest:
        raise SystemExit(f"torchtpu advise: unrecognized arguments: {' '.join(rest)}")
    from torchtpu.profiler.advise import advise

    model, inputs = _target(args.target)
    if args.precision:
        torch.tpu.set_precision(args.precision)
    advice = advise(model, inputs, chip=args.chip, train=not args.inference, report=args.report)
    print(advice)
    if args.report:
        print(f"report: {args.report}")
    return 0
