"""ABBA in one process: medium compiled Llama/GPT-2 steps with one of fusion.py's plan-time flags off or on.

Run: `.venv/bin/python benchmarks/short_fusion_abba.py FLAG [repeats]`, FLAG one of SHORT_EXP (2-op groups holding
exp/logistic fuse) or FUSE_INT64 (int64 compares and selects fuse). Sides: CPU eager, compiled with the flag off,
compiled with it on. Each side has its own executable cache in the sim driver (swapped in around each call, with
the flag), so each runs the plans compiled under its flag. Prints process CPU ms per call (median) and the ratios
to CPU eager.
"""

from __future__ import annotations

import collections
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile as cb  # noqa: E402 - benchmarks/compile.py

FLAGS = ("SHORT_EXP", "FUSE_INT64")


def main() -> None:
    from torchtpu.drivers.sim import fusion

    from torchtpu.runtime import driver

    if len(sys.argv) < 2 or sys.argv[1] not in FLAGS:
        raise SystemExit(f"usage: short_fusion_abba.py FLAG [repeats], FLAG one of {', '.join(FLAGS)}")
    flag = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    drv = driver()
    caches = {True: drv._cache, False: type(drv._cache)()}  # the executable cache, one per side
    assert getattr(fusion, flag) is True, f"fusion.{flag} is off: nothing to compare"

    def flagged(fn, on: bool):
        def run():
            setattr(fusion, flag, on)
            drv._cache = caches[on]
            try:
                fn()
            finally:
                setattr(fusion, flag, True)
                drv._cache = caches[True]

        return run

    torch.set_num_threads(1)
    cb.toggled(repeats, flagged, (f"{flag} off", f"{flag} on"))
    both = caches[True].keys() & caches[False].keys()  # the plans both sides compiled (and still hold)
    groups = {on: _groups(fusion, [caches[on][k] for k in both]) for on in (False, True)}
    print(f"{len(both)} plans on both sides; fused groups (ops in order: count) only with {flag} on:")
    for key in sorted(groups[True] - groups[False]):
        print(f"  {(groups[True] - groups[False])[key]:3d} x {' '.join(key)}")
    print(f"only with {flag} off:")
    for key in sorted(groups[False] - groups[True]):
        print(f"  {(groups[False] - groups[True])[key]:3d} x {' '.join(key)}")


def _groups(fusion, executables) -> collections.Counter:
    """The fused groups of the plans of `executables`, by their ops' names."""
    found: collections.Counter = collections.Counter()
    for exe in executables:
        for step in getattr(getattr(exe, "payload", None), "steps", ()):
            if isinstance(step, fusion.FusedStep):
                found[tuple(s.op.name for s in step.steps)] += 1
    return found


if __name__ == "__main__":
    main()
