"""bf16 rounding throughput: torchtpu.sim.numerics (numba, single thread) vs ml_dtypes astype, same run.

Prints elements/s for f32 -> bf16 (`to_bf16` vs `x.astype(ml_dtypes.bfloat16)`), f32 -> bf16-valued f32
(`round_bf16` vs `x.astype(bfloat16).astype(float32)`) and bf16 -> f32 (`from_bf16` vs astype), each as a
ratio (ours / ml_dtypes). Medians of several runs; the numba warm-up (compile or cache load) is excluded.

Usage: python benchmarks/bf16.py [--elements 16777216] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=1 << 24)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    import ml_dtypes
    import numpy as np
    from torchtpu.sim import numerics

    bf16 = ml_dtypes.bfloat16
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(args.elements) * np.exp2(rng.integers(-60, 60, args.elements))).astype(np.float32)
    xb = x.astype(bf16)
    for f in (numerics.to_bf16, numerics.round_bf16):  # warm-up: numba compile / cache load
        f(x[:1024])
    numerics.from_bf16(xb[:1024])

    def rate(fn) -> float:
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return args.elements / statistics.median(times)

    cases = {
        "f32->bf16": (lambda: numerics.to_bf16(x), lambda: x.astype(bf16)),
        "round_bf16 (f32->f32)": (lambda: numerics.round_bf16(x), lambda: x.astype(bf16).astype(np.float32)),
        "bf16->f32": (lambda: numerics.from_bf16(xb), lambda: xb.astype(np.float32)),
    }
    print(f"{args.elements} elements, medians of {args.repeats}; ml_dtypes {ml_dtypes.__version__}")
    print(f"{'conversion':<24} {'ours Melem/s':>13} {'ml_dtypes Melem/s':>18} {'ratio':>7}")
    out: dict[str, float] = {}
    for name, (ours, ref) in cases.items():
        r_ours, r_ref = rate(ours), rate(ref)
        out[name] = r_ours / r_ref
        print(f"{name:<24} {r_ours / 1e6:>13.0f} {r_ref / 1e6:>18.0f} {r_ours / r_ref:>7.2f}")
    return out


if __name__ == "__main__":
    main()
