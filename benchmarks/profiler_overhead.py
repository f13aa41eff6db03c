"""Host time per eager op on "tpu" with profiling off and on, as ratios to the unprofiled loop in the same run
(benchmarks/dispatch.py's loops: a 64x64 add and mm, thread CPU time, medians). Goals (issue #23): off costs
nothing measurable (off after a closed window within noise of before it); on under 2x per op.

    off            no window was ever opened
    off-after      after a torchtpu.profiler.record() window and a torch.profiler window closed
    record         inside torchtpu.profiler.record() (each launch stamped with the host clock)
    record+stacks  inside record(stacks=True) (plus the launch's user source line, what advise uses)
    torch.profiler inside torch.profiler.profile(CPU, PrivateUse1): kineto's own per-op recording included
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

torch.set_num_threads(1)
sys.path.insert(0, str(Path(__file__).parent))


def _per_op(fn, iters: int = 300, repeats: int = 7) -> float:
    """Median thread CPU seconds per call."""
    for _ in range(20):
        fn()
    cpu = []
    for _ in range(repeats):
        start = time.thread_time()
        for _ in range(iters):
            fn()
        cpu.append((time.thread_time() - start) / iters)
    return statistics.median(cpu)


def main() -> None:
    from torch.profiler import ProfilerActivity, profile

    from torchtpu.profiler import record

    for name, shape in (("add", (64, 64)), ("mm", (64, 64))):
        a, b = torch.randn(shape, device="tpu"), torch.randn(shape, device="tpu")
        op = torch.add if name == "add" else torch.mm

        def call(op=op, a=a, b=b):
            return op(a, b)

        off = _per_op(call)
        with record():
            on = _per_op(call)
        with record(stacks=True):
            stacks = _per_op(call)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]):
            torch_prof = _per_op(call, iters=100, repeats=3)
        off_after = _per_op(call)
        off_again = _per_op(call)  # noise: two unprofiled loops back to back
        print(f"{name} {shape[0]}x{shape[1]}: off {off * 1e6:.1f} us/op | off-after {off_after / off:.2f}x "
              f"(noise: {off_again / off_after:.2f}x) | record {on / off:.2f}x | record+stacks {stacks / off:.2f}x "
              f"| torch.profiler {torch_prof / off:.2f}x")


if __name__ == "__main__":
    main()
