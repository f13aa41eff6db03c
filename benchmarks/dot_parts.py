"""Per-dot cost breakdown of compiled medium steps (thread CPU ms per step, by operand shapes and layouts: C order,
T transposed C order, S other strides): the whole fast dot kernel (step), `mxu.matmul` or `mxu.fast_default`
within it (matmul), the operand rounding (`round_operand`, its gathers and shared roundings included), the shared
roundings alone (memo: `_memo_round`), C-order gathers, BLAS, and the minor page faults per step in rounding and
BLAS (_flt).
usage: .venv/bin/python benchmarks/dot_parts.py llama|gpt2 train|fwd N [top]"""

from __future__ import annotations

import collections
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import compile as cb  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torchtpu.drivers.sim import fast  # noqa: E402
from torchtpu.sim import mxu, mxu_round  # noqa: E402

import torchtpu  # noqa: E402

torch.set_num_threads(1)
on = [False]
parts: dict = collections.defaultdict(lambda: collections.defaultdict(float))
counts: dict = collections.defaultdict(int)
cur = [None]


def _lay(x: np.ndarray) -> str:
    if x.flags.c_contiguous:
        return "C"
    if x.ndim >= 2 and x.swapaxes(-1, -2).flags.c_contiguous:
        return "T"
    return "S"


def timed(name: str, fn):
    def run(*a, **k):
        if not on[0] or cur[0] is None:
            return fn(*a, **k)
        t = time.thread_time_ns()
        f = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        try:
            return fn(*a, **k)
        finally:
            parts[cur[0]][name] += time.thread_time_ns() - t
            parts[cur[0]][name + "_flt"] += resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - f
    return run


def _keyed(fn):
    """`fn` (mxu.matmul or mxu.fast_default) timing each call under its operands' shapes and layouts."""

    def run(a, b, *args, **k):
        if not on[0]:
            return fn(a, b, *args, **k)
        out = k.get("out", args[0] if args else None)
        key = ("x".join(map(str, a.shape)) + _lay(a) + " @ " + "x".join(map(str, b.shape)) + _lay(b)
               + (" out" if out is not None else ""))
        prev, cur[0] = cur[0], key
        t = time.thread_time_ns()
        try:
            return fn(a, b, *args, **k)
        finally:
            parts[key]["matmul"] += time.thread_time_ns() - t
            counts[key] += 1
            cur[0] = prev

    return run


mxu.matmul = _keyed(mxu.matmul)
mxu.fast_default = _keyed(mxu.fast_default)
mxu.round_operand = timed("round", mxu.round_operand)
mxu.blas_matmul = timed("blas", mxu.blas_matmul)
mxu_round._gather = timed("gather", mxu_round._gather)
mxu_round._memo_round = timed("memo", mxu_round._memo_round)
orig_dot = fast._dot


def _dot(op, array):
    d = orig_dot(op, array)

    def run(*a, **k):
        if not on[0]:
            return d(*a, **k)
        t = time.thread_time_ns()
        before = dict(counts)
        r = d(*a, **k)
        dt = time.thread_time_ns() - t
        keys = [key for key in counts if counts[key] != before.get(key, 0)]
        parts[keys[0] if keys else "exact/other"]["step"] += dt
        if not keys:
            counts["exact/other"] += 1
        return r

    for attr in ("writes_out", "result_shape", "native_exact"):
        if hasattr(d, attr):
            setattr(run, attr, getattr(d, attr))
    return run


fast._dot = _dot

arch, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
top = int(sys.argv[4]) if len(sys.argv) > 4 else 30
f = cb.medium_step(arch, kind)
with torchtpu.eager_mode("DEFER_NEVER"):
    f()
    f()
    on[0] = True
    t = time.process_time()
    for _ in range(n):
        f()
    tot = (time.process_time() - t) / n * 1e3
cols = ("step", "matmul", "round", "memo", "gather", "blas", "round_flt", "blas_flt")
sums = {c: sum(p[c] for p in parts.values()) / n / (1 if c.endswith("_flt") else 1e6) for c in cols}
print(f"{arch} {kind}: step {tot:.1f} ms; dots " + ", ".join(f"{c} {v:.2f}" for c, v in sums.items())
      + f"; other(step-blas-round) {sums['step'] - sums['blas'] - sums['round']:.2f} ms")
print(f"  {'ms':>6s} {'n':>3s} " + " ".join(f"{c:>6s}" for c in cols[1:]) + "  shape")
for key, p in sorted(parts.items(), key=lambda kv: -kv[1]["step"])[:top]:
    c = counts[key] // n
    print(f"  {p['step'] / n / 1e6:6.2f} {c:3d} "
          + " ".join(f"{p[x] / n / (1 if x.endswith('_flt') else 1e6):6.2f}" for x in cols[1:]) + f"  {key}")
