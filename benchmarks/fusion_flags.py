"""ABBA in one process: medium compiled Llama/GPT-2 steps with one of fusion.py's plan-time flags off or on.

Run: `.venv/bin/python benchmarks/fusion_flags.py FLAG [repeats]`, FLAG one of FUSE_EXP (float32 exp and logistic
fuse through drivers/sim/exp_numpy.py), SHORT_EXP (2-op groups holding exp/logistic fuse) or FUSE_INT64 (int64
compares and selects fuse). Sides: CPU eager, compiled with the flag off,
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

FLAGS = ("FUSE_EXP", "SHORT_EXP", "FUSE_INT64")


def main() -> None:
    from torchtpu.drivers.sim import fusion

    from torchtpu.runtime import driver

    if len(sys.argv) < 2 or sys.argv[1] not in FLAGS:
        raise SystemExit(f"usage: fusion_flags.py FLAG [repeats], FLAG one of {', '.join(FLAGS)}")
    flag = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    drv = driver()
    caches = {True: drv._cache, False: type(drv._cache)()}  # the executable cache, one per side
    default = getattr(fusion, flag)
    if flag in ("FUSE_EXP", "SHORT_EXP") and not fusion.exp_numpy.AVAILABLE:
        raise SystemExit(f"exp_numpy's check failed ({fusion.exp_numpy.REASON}): exp never fuses here")
    if flag == "SHORT_EXP":
        fusion.FUSE_EXP = True  # (off by default) short groups exist only where exp fuses

    def flagged(fn, on: bool):
        def run():
            setattr(fusion, flag, on)
            drv._cache = caches[on]
            try:
                fn()
            finally:
                setattr(fusion, flag, default)
                drv._cache = caches[True]

        return run

    torch.set_num_threads(1)
    changed = {True: collections.Counter(), False: collections.Counter()}
    _record(fusion, flag, changed)
    cb.toggled(repeats, flagged, (f"{flag} off", f"{flag} on"))
    print(f"fused groups that differ when plans are built with {flag} on (ops in order, shape: count):")
    for on in (True, False):
        print(f"  only with {flag} {'on' if on else 'off'}:")
        for key, count in sorted(changed[on].items()):
            print(f"    {count:3d} x {key}")


def _record(fusion, flag: str, changed: dict) -> None:
    """Wraps the sim driver's fuse_steps: each plan built with `flag` on is fused with it off too, and the groups
    only one side forms are counted in `changed[side]` (building a FusedStep compiles nothing)."""
    from torchtpu.drivers.sim import driver as sim_driver

    real = sim_driver.fuse_steps

    def groups(steps) -> collections.Counter:
        return collections.Counter(
            f"{' '.join(s.op.name for s in st.steps)} {'x'.join(map(str, st.op.outputs[0].shape))}"
            for st in steps
            if isinstance(st, fusion.FusedStep)
        )

    def both(steps, outputs, folded):
        out = real(steps, outputs, folded)
        if getattr(fusion, flag):
            setattr(fusion, flag, False)
            try:
                old = groups(real(steps, outputs, folded))
            finally:
                setattr(fusion, flag, True)
            new = groups(out)
            changed[True].update(new - old)
            changed[False].update(old - new)
        return out

    sim_driver.fuse_steps = both


if __name__ == "__main__":
    main()
