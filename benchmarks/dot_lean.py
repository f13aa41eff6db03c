"""Fast DEFAULT dots through `mxu.fast_default` (drivers/sim/fast.py LEAN) against the `mxu.matmul` path, in one
process, ABBA order: thread CPU time of the dot kernels and process CPU time of the whole compiled medium step
(hidden 256, 2 x 256 tokens), with CPU eager's step alongside.
usage: .venv/bin/python benchmarks/dot_lean.py [repeats] [llama,gpt2] [train,fwd]"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import compile as cb  # noqa: E402
import torch  # noqa: E402
from torchtpu.drivers.sim import fast  # noqa: E402

import torchtpu  # noqa: E402

dot_ns = [0]
_orig = fast._dot


def _timed_dot(op, array):
    kernel = _orig(op, array)

    def run(*args, **kwargs):
        t = time.thread_time_ns()
        try:
            return kernel(*args, **kwargs)
        finally:
            dot_ns[0] += time.thread_time_ns() - t

    for attr in ("writes_out", "result_shape", "native_exact"):
        if hasattr(kernel, attr):
            setattr(run, attr, getattr(kernel, attr))
    return run


fast._dot = _timed_dot


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    archs = sys.argv[2].split(",") if len(sys.argv) > 2 else ["llama", "gpt2"]
    kinds = sys.argv[3].split(",") if len(sys.argv) > 3 else ["train", "fwd"]
    torch.set_num_threads(1)
    for arch in archs:
        model = cb._hf(arch, 256, 1000)
        ids = torch.randint(0, 1000, (2, 256), generator=torch.Generator().manual_seed(0))
        sim = cb._fns(model, ids, "tpu", True)
        cpu = cb._fns(model, ids, "cpu", False)
        for kind in kinds:
            f, c = (sim[0], cpu[0]) if kind == "fwd" else (sim[1], cpu[1])
            sides = {"lean": True, "old": False, "cpu": None}
            step = {s: [] for s in sides}
            dots = {s: [] for s in sides}
            with torchtpu.eager_mode("DEFER_NEVER"):
                f(), f(), c()
                for r in range(repeats):
                    for side in list(sides) if r % 2 == 0 else list(sides)[::-1]:
                        fast.LEAN = bool(sides[side])
                        fn = c if side == "cpu" else f
                        gc.collect()
                        fn()
                        gc.disable()
                        dot_ns[0] = 0
                        start = time.process_time()
                        for _ in range(3):
                            fn()
                        step[side].append((time.process_time() - start) / 3 * 1e3)
                        dots[side].append(dot_ns[0] / 3 / 1e6)
                        gc.enable()
            fast.LEAN = True
            m = {s: statistics.median(v) for s, v in step.items()}
            d = {s: statistics.median(v) for s, v in dots.items()}
            print(f"{arch} {kind}: step lean {m['lean']:.1f} ms / old {m['old']:.1f} (x{m['lean'] / m['old']:.3f}); "
                  f"dots lean {d['lean']:.2f} / old {d['old']:.2f} ms (x{d['lean'] / d['old']:.3f}); cpu eager "
                  f"{m['cpu']:.1f} ms: lean x{m['lean'] / m['cpu']:.2f}, old x{m['old'] / m['cpu']:.2f}", flush=True)


if __name__ == "__main__":
    main()
