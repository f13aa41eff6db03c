"""MXU simulator speed: exact-mode and fast-mode GFLOP/s for float32 n^3 matmuls (precision DEFAULT), each as a
ratio to numpy.matmul (BLAS) on the same inputs in the same run. Medians of interleaved runs; warm-ups excluded.

Threads are pinned before numpy is imported: numba and BLAS get the same count (default: the CPUs this process
may use). OPENBLAS_CORETYPE is never touched. Goals (issue #3): fast >= 0.8x BLAS, exact >= 0.25x BLAS.

Usage: python benchmarks/mxu.py [--threads N] [--sizes 512 1024 2048] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def _pin_threads(n: int) -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = str(n)


def main(argv: list[str] | None = None) -> dict[int, dict[str, float]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    if "numpy" not in sys.modules:
        _pin_threads(args.threads)
    import numba
    import numpy as np

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
    except ImportError:
        pass  # env variables above already pin BLAS (numpy was not imported yet)
    from torchtpu.sim import mxu

    rng = np.random.default_rng(0)
    warm = rng.standard_normal((64, 64)).astype(np.float32)
    mxu.matmul(warm, warm, mode="exact")  # compile / load the numba kernels before timing
    mxu.matmul(warm, warm, mode="fast")

    def timed(fn) -> float:
        # Idle first: OpenBLAS worker threads spin ~0.1 s after a call and numba's OpenMP threads briefly
        # too; on a 2-core machine the spinning threads of the other library would halve the measured rate.
        time.sleep(0.2)
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    print(f"threads={args.threads} (numba {numba.get_num_threads()}), numpy {np.__version__}, "
          f"numba {numba.__version__}, medians of {args.repeats}")
    print(f"{'n':>6} {'BLAS GF/s':>10} {'fast GF/s':>10} {'fast/BLAS':>10} {'exact GF/s':>11} {'exact/BLAS':>11}")
    results: dict[int, dict[str, float]] = {}
    for n in args.sizes:
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        flops = 2.0 * n**3
        reps = args.repeats
        impls = {
            "blas": lambda a=a, b=b: np.matmul(a, b),
            "fast": lambda a=a, b=b: mxu.matmul(a, b, mode="fast"),
            "exact": lambda a=a, b=b: mxu.matmul(a, b, mode="exact"),
        }
        for fn in impls.values():
            fn()  # warm caches and thread pools
        # interleaved repeats, so load from other processes hits all three alike
        times: dict[str, list[float]] = {k: [] for k in impls}
        for _ in range(reps):
            for name, fn in impls.items():
                times[name].append(timed(fn))
        t_blas, t_fast, t_exact = (statistics.median(times[k]) for k in ("blas", "fast", "exact"))
        r = {"blas_gflops": flops / t_blas / 1e9, "fast_gflops": flops / t_fast / 1e9,
             "exact_gflops": flops / t_exact / 1e9, "fast_ratio": t_blas / t_fast, "exact_ratio": t_blas / t_exact}
        results[n] = r
        print(f"{n:>6} {r['blas_gflops']:>10.1f} {r['fast_gflops']:>10.1f} {r['fast_ratio']:>10.2f} "
              f"{r['exact_gflops']:>11.1f} {r['exact_ratio']:>11.2f}")
    return results


if __name__ == "__main__":
    main()
