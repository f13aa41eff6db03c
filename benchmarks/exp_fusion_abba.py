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

    import torchtpu
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
    print(f"process CPU ms per call (ABBA, median of {repeats}), hidden 256, 2 x 256 tokens; ratios to CPU eager")
    for arch in ("llama", "gpt2"):
        torch._dynamo.reset()
        model = cb._hf(arch, 256, 1000)
        ids = torch.randint(0, 1000, (2, 256), generator=torch.Generator().manual_seed(0))
        off, on = cb._fns(model, ids, "tpu", True), cb._fns(model, ids, "tpu", True)
        sides = {"cpu": cb._fns(model, ids, "cpu", False), "exp off": tuple(flagged(f, False) for f in off),
                 "exp on": tuple(flagged(f, True) for f in on)}
        with torchtpu.eager_mode("DEFER_NEVER"):
            for k, kind in enumerate(("fwd", "train")):
                fns = {name: pair[k] for name, pair in sides.items()}
                for fn in fns.values():
                    fn()
                    fn()
                t = cb._abba(fns, repeats)
                print(f"{arch:6} {kind:6} cpu {t['cpu'] * 1e3:7.2f}  exp off {t['exp off'] * 1e3:7.2f} "
                      f"({t['exp off'] / t['cpu']:.3f}x)  exp on {t['exp on'] * 1e3:7.2f} "
                      f"({t['exp on'] / t['cpu']:.3f}x)  on/off {t['exp on'] / t['exp off']:.3f}", flush=True)


if __name__ == "__main__":
    main()
