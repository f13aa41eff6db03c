"""Sim host time of the special functions, 1e6 float32 elements, against torch CPU in the same run.

Each function is one IR program (`special_unary` / `special_binary`) compiled once and run N times on the sim
driver; the time is the median of the runs, beside torch's CPU kernel on the same values (median of N, one
thread). The script builds programs through the IR only, so it runs unchanged in a checkout where the special
functions are numba kernels (main, before they became lowerings): run it in both and compare the columns. Where
the sim fuses element-wise chains (drivers/sim/fusion.py), each function is also run step by step (fusion off),
in the same run: the "steps" columns. The first fused call, which compiles (or loads from numba's disk cache)
the loops, is timed on its own ("first ms").

    python benchmarks/special.py [--n 1000000] [--repeat 5] [--only bessel_j0,zeta] [--no-steps] [--cpu]

`--cpu` times with the process's CPU time instead of the wall clock: on a machine shared with other work, the
wall clock counts the time the scheduler gives to others (both columns, unequally), the CPU time much less.

Measured on a loaded 2-core machine (ratio to torch CPU in the same run, 1e6 float32, two runs), step by step
-> fused, against the numba kernels the lowerings replaced (issue 16's figures): bessel_j0 18-20x -> 0.3-1.2x
(kernel 4.3x); igamma 20x -> 2.1-2.3x (1.5x); chebyshev_t 8-14x -> 1.7-2.0x (3.5x); digamma 2.7-4.3x -> 0.1-0.5x
(6.2x). First fused call: 4-10 s where numba compiles the loops, 25-400 ms where it loads them from its cache.
Since the loops run in blocks of lanes (drivers/sim/fusion_lanes.py) and igamma's series and continued fraction
are separate loops, with `--cpu` at load 6-8, beside main's code in the same conditions: igamma 1.3-1.6x
(main 3.2-4.2x), igammac 1.6-1.8x (3.7-4.1x), chebyshev_t 0.9x (2.9x), hermite_h / laguerre_l / legendre_p
0.5-0.7x (1.2-1.4x); interleaved with torch in one process (CPU time, minimum of 9), igamma 0.94-1.0x against
main's 2.7-2.9x.

igamma/igammac as ATen's algorithm (issue 17, drivers/ir_lowerings_igamma.py: three expansion loops, Temme's
expansion and Lanczos sum in one-trip loops, more transcendentals as numpy steps), `--cpu --no-steps`, 1e6
float32, against the Numerical Recipes lowering it replaced swapped in, back to back: igamma 292 ms (3.8x torch)
vs 100 ms (1.4x), igammac 288 ms (4.2x) vs 100 ms (1.5x): the price of CPU's values in the tails (its first
version, Temme's table straight-line for every element, 375 ms).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from torchtpu.drivers.ir import Builder
from torchtpu.drivers.ir_ops import SPECIAL_BINARY, SPECIAL_UNARY
from torchtpu.drivers.sim.driver import SimDriver

try:
    from torchtpu.drivers.sim import fusion
except ImportError:  # a checkout without fused loops: the steps are all there is
    fusion = None

S = torch.special
TORCH = {
    "digamma": torch.digamma, "lgamma": torch.lgamma, "bessel_j0": S.bessel_j0, "bessel_j1": S.bessel_j1,
    "bessel_y0": S.bessel_y0, "bessel_y1": S.bessel_y1, "bessel_i0": S.i0, "bessel_i0e": S.i0e, "bessel_i1": S.i1,
    "bessel_i1e": S.i1e, "bessel_k0": S.modified_bessel_k0, "bessel_k0e": S.scaled_modified_bessel_k0,
    "bessel_k1": S.modified_bessel_k1, "bessel_k1e": S.scaled_modified_bessel_k1, "airy_ai": S.airy_ai,
    "spherical_bessel_j0": S.spherical_bessel_j0, "erfcx": S.erfcx, "ndtri": S.ndtri, "zeta": S.zeta,
    "polygamma": lambda n, x: torch.polygamma(2, x), "igamma": torch.igamma, "igammac": torch.igammac,
    "chebyshev_t": S.chebyshev_polynomial_t, "hermite_h": S.hermite_polynomial_h,
    "laguerre_l": S.laguerre_polynomial_l, "legendre_p": S.legendre_polynomial_p,
}


def _inputs(fn: str, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    if fn in ("igamma", "igammac"):
        return [rng.uniform(0.1, 10, n).astype(np.float32), rng.uniform(0.1, 10, n).astype(np.float32)]
    if fn == "zeta":
        return [rng.uniform(1.1, 6, n).astype(np.float32), rng.uniform(0.1, 5, n).astype(np.float32)]
    if fn == "polygamma":
        return [np.full(n, 2.0, np.float32), rng.uniform(0.1, 10, n).astype(np.float32)]
    if fn in SPECIAL_BINARY:
        return [rng.uniform(-1, 1, n).astype(np.float32), rng.integers(0, 8, n).astype(np.float32)]
    if fn == "ndtri":
        return [rng.uniform(0, 1, n).astype(np.float32)]
    return [rng.uniform(-10 if fn not in ("bessel_y0", "bessel_y1", "bessel_k0", "bessel_k0e", "bessel_k1",
                                          "bessel_k1e") else 0.01, 10, n).astype(np.float32)]


CLOCK = time.perf_counter


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = CLOCK()
        fn()
        times.append(CLOCK() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="")
    parser.add_argument("--no-steps", action="store_true", help="skip the step-by-step (unfused) runs")
    parser.add_argument("--cpu", action="store_true", help="time with the process's CPU time, not the wall clock")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.cpu else time.perf_counter
    steps = fusion is not None and not args.no_steps
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    drv = SimDriver()
    names = [f for f in TORCH if f in SPECIAL_UNARY or f in SPECIAL_BINARY or f in ("digamma", "lgamma")]
    if args.only:
        names = [f for f in names if f in args.only.split(",")]
    extra = f" {'steps ms':>9s} {'ratio':>7s}" if steps else ""
    print(f"{'function':22s} {'first ms':>9s} {'sim ms':>9s} {'torch ms':>9s} {'ratio':>7s}{extra}  (n={args.n}, "
          f"median of {args.repeat})")
    for fn in names:
        xs = _inputs(fn, args.n, rng)
        b = Builder()
        vals = [b.input(x.shape, "float32") for x in xs]
        if fn in ("digamma", "lgamma"):
            outs = b.emit(fn, vals)
        else:
            outs = b.emit("special_binary" if fn in SPECIAL_BINARY else "special_unary", vals, function=fn)
        program = b.finish(outs, name=fn)
        out = np.empty(args.n, np.float32)
        exe = drv.compile(program)
        start = CLOCK()
        drv.execute(exe, xs, [out])  # warm (numba compiles, or loads its cache, on the first call)
        first = CLOCK() - start
        sim = _median(lambda exe=exe, xs=xs, out=out: drv.execute(exe, xs, [out]), args.repeat)
        ts = [torch.from_numpy(x) for x in xs]
        ref = _median(lambda fn=fn, ts=ts: TORCH[fn](*ts), args.repeat)
        row = f"{fn:22s} {first * 1e3:9.1f} {sim * 1e3:9.1f} {ref * 1e3:9.1f} {sim / ref:7.1f}"
        if steps:
            threshold, fusion.MIN_ELEMENTS = fusion.MIN_ELEMENTS, 1 << 62
            try:
                plain = SimDriver().compile(program)
            finally:
                fusion.MIN_ELEMENTS = threshold
            before = _median(lambda exe=plain, xs=xs, out=out: drv.execute(exe, xs, [out]), args.repeat)
            row += f" {before * 1e3:9.1f} {before / ref:7.1f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
