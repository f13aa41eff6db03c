"""The bodies of IR op `while_array` compiled once into straight-line plans, as the driver compiles a program.

`kernels_control.run_region` interprets a region op by op: a dict lookup of the kernel, the generic kernel's
attribute lookups, dtype checks and list wrapping, per op and per trip. A Jacobi eigh of 256x256 runs its body
thousands of times, so that per-op overhead was most of its host time. `compiled_region` builds the region's
steps with the driver's own machinery (driver.py `build_steps`): constants folded once, each step's direct numpy
call (fast.py `specialize`), long element-wise chains as one numba loop (fusion.py), broadcasts left to the
ufuncs that read them (fast.py `elide_broadcasts`), all written out as one generated function
(straight_line.py). The calls are the ones the interpreter makes (or, fused, tested bit for bit equal to
them), so values are unchanged. A plan is cached per region program (by identity, the program kept alive
with it).

The MXU tiling is the default one, as the interpreter's kernels use (regions carry no chip).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
from torchtpu.drivers.ir import Program

RegionRunner = Callable[[list[np.ndarray]], list[np.ndarray]]

_CACHE: dict[int, tuple[Program, RegionRunner]] = {}
_CACHE_MAX = 512
_LOCK = threading.Lock()


def compiled_region(program: Program) -> RegionRunner:
    """`run(args)`: the region `program` over the operand arrays `args`, its results as a list (a result may be an
    operand itself, or a read-only compile-time constant)."""
    hit = _CACHE.get(id(program))
    if hit is not None and hit[0] is program:
        return hit[1]
    runner = _build(program)
    with _LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[id(program)] = (program, runner)
    return runner


def _build(program: Program) -> RegionRunner:
    from torchtpu.drivers.sim.driver import build_steps  # (driver imports the kernels, which import this module)
    from torchtpu.drivers.sim.straight_line import compile_steps
    from torchtpu.sim import mxu

    steps, padding, outputs = build_steps(program, mxu.DEFAULT_ARRAY)
    run = compile_steps(steps, (), f"{program.name}_region", outputs)

    def runner(args: list[np.ndarray]) -> list[np.ndarray]:
        return list(run([*args, *padding]))

    return runner
