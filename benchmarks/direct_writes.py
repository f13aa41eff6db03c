"""Compiled medium steps with and without the shared direct writes (drivers/sim/direct_outputs.py `SHARED`), ABBA
in one process, and the bytes the driver still copies into output buffers per step.

`SHARED` is read when a plan is built, so both plans of every executable are kept and swapped before each call
(the same model, buffers and compiled graphs on both sides). Process CPU ms per call, medians; ratios to CPU eager.

    python benchmarks/direct_writes.py [--models llama,gpt2] [--repeats 7]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from compile import _fns, _hf
from torchtpu.drivers.sim import direct_outputs
from torchtpu.drivers.sim import driver as sim_driver
from torchtpu.drivers.sim.straight_line import compile_steps

import torchtpu
from torchtpu import runtime

_BATCH = 3
_copied = {"on": False, "bytes": 0, "ns": 0}


def _count_copies() -> None:
    """The driver's np.copyto, counting bytes and thread CPU time while `_copied["on"]`."""
    real = np.copyto
    proxy = type(sys)("numpy_counting")
    proxy.__dict__.update(np.__dict__)

    def copyto(dst: np.ndarray, src: Any, *args: Any, **kwargs: Any) -> None:
        if not _copied["on"]:
            return real(dst, src, *args, **kwargs)
        start = time.thread_time_ns()
        real(dst, src, *args, **kwargs)
        _copied["ns"] += time.thread_time_ns() - start
        _copied["bytes"] += dst.nbytes

    proxy.copyto = copyto
    sim_driver.np = proxy


def _plans(variants: dict[int, tuple]) -> None:
    """For each sim plan not seen yet: (plan, its direct writes with SHARED, without)."""
    for exe in list(runtime.driver()._cache.values()):
        plan = exe.payload
        if not isinstance(plan, sim_driver._Plan) or id(plan) in variants:
            continue
        direct_outputs.SHARED = False
        try:
            old = direct_outputs.plan_direct(plan.steps, plan.outputs, len(exe.program.inputs), plan.last)
        finally:
            direct_outputs.SHARED = True
        last = plan.last.inputs if plan.last is not None else ()
        copied = [] if old is None else [slot for slot, _ in old.copies]
        run = None if old is None else compile_steps(plan.steps, copied, plan.name, last, old.direct)
        variants[id(plan)] = (plan, (plan.direct, plan.run_direct), (old, run))


def _side(fn: Callable[[], None], variants: dict[int, tuple], new: bool) -> Callable[[], None]:
    def run() -> None:
        for plan, with_shared, without in variants.values():
            plan.direct, plan.run_direct = with_shared if new else without
        fn()

    return run


def main(models: list[str], repeats: int) -> None:
    _count_copies()
    torch.set_num_threads(1)
    for arch in models:
        torch._dynamo.reset()
        model = _hf(arch, 256, 1000)
        ids = torch.randint(0, 1000, (2, 256), generator=torch.Generator().manual_seed(0))
        cpu, tpu = _fns(model, ids, "cpu", False), _fns(model, ids, "tpu", True)
        variants: dict[int, tuple] = {}
        with torchtpu.eager_mode("DEFER_NEVER"):
            for k, kind in enumerate(("fwd", "train")):
                for fn in (cpu[k], tpu[k], tpu[k]):
                    fn()
                _plans(variants)
                fns = {"cpu": cpu[k], "old": _side(tpu[k], variants, False), "new": _side(tpu[k], variants, True)}
                copies = {}
                for side in ("old", "new"):
                    fns[side]()
                    _copied.update(on=True, bytes=0, ns=0)
                    for _ in range(4):
                        fns[side]()
                    _copied["on"] = False
                    copies[side] = (_copied["bytes"] / 4e6, _copied["ns"] / 4e6)
                times: dict[str, list[float]] = {n: [] for n in fns}
                for r in range(repeats):
                    for name in list(fns) if r % 2 == 0 else reversed(list(fns)):
                        gc.collect()
                        fns[name]()
                        gc.disable()
                        start = time.process_time()
                        for _ in range(_BATCH):
                            fns[name]()
                        times[name].append((time.process_time() - start) / _BATCH * 1e3)
                        gc.enable()
                m = {n: statistics.median(v) for n, v in times.items()}
                print(f"{arch:5} {kind:5} cpu {m['cpu']:6.1f} ms | without {m['old']:6.1f} ({m['old'] / m['cpu']:.3f}x)"
                      f" copies {copies['old'][0]:5.2f} MB {copies['old'][1]:4.2f} ms | with {m['new']:6.1f} "
                      f"({m['new'] / m['cpu']:.3f}x) copies {copies['new'][0]:5.2f} MB {copies['new'][1]:4.2f} ms",
                      flush=True)
            _side(lambda: None, variants, True)()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="llama,gpt2")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    main(args.models.split(","), args.repeats)
