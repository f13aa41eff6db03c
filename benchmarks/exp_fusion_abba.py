"""ABBA in one process: medium compiled Llama/GPT-2 steps with float32 exp fused (drivers/sim/exp_numpy.py) or not.

Run: `.venv/bin/python benchmarks/exp_fusion_abba.py [repeats]`. Sides: CPU eager, compiled with fusion.FUSE_EXP off,
compiled with it on. Each side has its own executable cache in the sim driver (swapped in around each call, with the
flag), so each runs the plans compiled under its flag. Prints process CPU ms per call (median) and the
ratios to CPU eager.
"""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile as cb  # noqa: E402 - benchmarks/compile.py


def main() -> None:
    from torchtpu.drivers.sim import fusion

    from torchtpu.runtime import driver

    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    drv = driver()
    caches = {True: drv._cache, False: type(drv._cache)()}  # the executable cache, one per side
    assert fusion.FUSE_EXP, "exp_numpy's check failed: nothing to compare"

    def flagged(fn, on: bool):
        def run():
            fusion.FUSE_EXP, drv._cache = on, caches[on]
            try:
                fn()
            finally:
                fusion.FUSE_EXP, drv._cache = True, caches[True]

        return run

    torch.set_num_threads(1)
    cb.toggled(repeats, flagged, ("exp off", "exp on"))


if __name__ == "__main__":
    main()
