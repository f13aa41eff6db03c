"""ABBA in one process: medium Llama / GPT-2 compiled steps with the sim's in-place logistic and rsqrt
(drivers/sim/kernels.py `IN_PLACE`) on and off, ratios to CPU eager; and the kernels alone on a SiLU's operand.
With `np.where`, every plan's select steps run np.where (drivers/sim/fast.py `SELECT_UFUNC` off: it is read when
a plan is built, so the select ufunc is measured in alternating processes, with and without).

usage: benchmarks/unary_in_place.py [repeats] [np.where]   (from the repository root, TORCHTPU_CACHE_DIR set)"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import compile as cb  # noqa: E402  (benchmarks/compile.py: the models, the step functions, ABBA timing)
from torchtpu.drivers.sim import fast, kernels  # noqa: E402


def _flagged(fn, on: bool):
    def run() -> None:
        kernels.IN_PLACE = on
        try:
            fn()
        finally:
            kernels.IN_PLACE = True

    return run


def _kernel_ms(name: str, shape: tuple[int, ...], repeats: int) -> dict[bool, float]:
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    fn = kernels._UNARY_FLOAT[name]
    times: dict[bool, list[float]] = {True: [], False: []}
    with np.errstate(all="ignore"):
        for r in range(repeats):
            for flag in (True, False) if r % 2 == 0 else (False, True):
                kernels.IN_PLACE = flag
                start = time.thread_time_ns()
                for _ in range(10):
                    fn(x)
                times[flag].append((time.thread_time_ns() - start) / 10 / 1e6)
    kernels.IN_PLACE = True
    return {k: statistics.median(v) for k, v in times.items()}


def main(repeats: int) -> None:
    for name, shape in (("logistic", (2, 256, 1024)), ("rsqrt", (2, 256, 1))):
        t = _kernel_ms(name, shape, 3 * repeats)
        print(f"kernel {name} {shape}: old {t[False]:.3f} ms, new {t[True]:.3f} ms (thread time, median)")
    cb.toggled(repeats, _flagged)


if __name__ == "__main__":
    torch.set_num_threads(1)
    if sys.argv[2:] == ["np.where"]:
        fast.SELECT_UFUNC = False
    print(f"select steps: {'np.where' if not fast.SELECT_UFUNC else 'kernels.SELECT'}")
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
