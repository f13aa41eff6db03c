"""MXU simulator speed: exact-mode and fast-mode GFLOP/s for float32 n^3 matmuls (precision DEFAULT), each as a
ratio to numpy.matmul (BLAS) on the same inputs in the same run. Medians of interleaved runs; warm-ups excluded.
Second table (issue #22 goal 6): the fast mode through MKL's bf16 GEMM (sim/mxu_gemm.py, the default where it
loads) and through numpy's float32 BLAS (the old path), each as a ratio to `torch.matmul` in float32 (CPU eager's
product) on the same operands, at n^3 and at the medium models' product shapes.

Threads are pinned before numpy is imported: numba and BLAS get the same count (default: the CPUs this process
may use). OPENBLAS_CORETYPE is never touched. Goals (issue #3): fast >= 0.8x BLAS, exact >= 0.25x BLAS.

Usage: python benchmarks/mxu.py [--threads N] [--sizes 512 1024 2048] [--repeats 5]

Figures (2-core machine, quiet, `--threads 1 --sizes 1024`, medians of 5, session 29; `x` = torch.matmul's time /
the fast product's, so > 1 is faster than CPU eager's product; each sample ~10 ms of back-to-back products):
1024^3 fast 323.1 GF/s = 2.33x numpy's float32 BLAS (138.9), exact 0.38x. By library:

    shape (batch, M, K, N)   MKL bf16 x   numpy BLAS x   MKL / numpy
    (1, 1024, 1024, 1024)       2.55          0.90           2.85
    (1, 512, 256, 256)          1.21          0.79           1.54
    (1, 512, 1024, 256)         1.45          0.66           2.19
    (1, 256, 512, 1024)         1.27          0.71           1.80
    (1, 1000, 512, 256)         1.25          0.67           1.86
    (1, 512, 256, 1000)         1.09          0.77           1.41
    (8, 256, 256, 64)           0.90          0.58           1.55
    (8, 256, 64, 256)           0.79          0.76           1.05
    (8, 64, 256, 256)           0.61          0.41           1.50

The batched attention products stay below torch.matmul: one MKL call per batch item (torch's bmm batches them).
"""

from __future__ import annotations

import argparse
import functools
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
    _backends(args, timed)
    return results


# (batch, M, K, N): 1024^3, and the products of the medium (hidden 256, 2 x 256 tokens) Llama and GPT-2 compiled
# training steps (captured at mxu_gemm's call, session 29)
BACKEND_SHAPES = [(1, 1024, 1024, 1024), (1, 512, 256, 256), (1, 256, 512, 256), (1, 512, 256, 1024),
                  (1, 512, 1024, 256), (1, 1024, 512, 256), (1, 256, 512, 1024), (1, 512, 256, 1000),
                  (1, 1000, 512, 256), (8, 256, 256, 64), (8, 256, 64, 256), (8, 64, 256, 256)]


def _per_call(timed, fn, calls: int) -> float:  # noqa: ANN001 - the timer, a callable
    """Seconds per call of `fn`, timed over `calls` back-to-back calls (a single small product is too short to
    time alone on a shared machine)."""
    return timed(lambda: [fn() for _ in range(calls)]) / calls


def _fast(mxu, mxu_gemm, timed, a, b, mkl: bool, calls: int) -> float:  # noqa: ANN001 - modules, timer, arrays
    """Seconds per fast-mode product of a and b through MKL's bf16 GEMM (mkl) or numpy's BLAS."""
    mxu_gemm.ENABLED = mkl
    mxu_gemm.reset()
    mxu.matmul(a, b, mode="fast")
    return _per_call(timed, functools.partial(mxu.matmul, a, b, mode="fast"), calls)


def _backends(args: argparse.Namespace, timed) -> None:  # noqa: ANN001 - the timer above
    import numpy as np
    import torch
    from torchtpu.sim import mxu, mxu_gemm

    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(1)
    print(f"\nfast mode by library, ratios to torch.matmul float32 ({torch.get_num_threads()} torch threads)")
    print(f"{'shape':>22} {'torch ms':>9} {'mkl ms':>8} {'numpy ms':>9} {'mkl x':>7} {'numpy x':>8} {'mkl/numpy':>10}")
    for batch, m, k, n in BACKEND_SHAPES:
        a = rng.standard_normal((batch, m, k), dtype=np.float32)
        b = rng.standard_normal((batch, k, n), dtype=np.float32)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)

        torch.matmul(ta, tb)
        calls = max(1, int(2e8 // (batch * m * k * n)))  # ~10 ms of products per sample
        times: dict[str, list[float]] = {"torch": [], "mkl": [], "numpy": []}
        for _ in range(args.repeats):
            times["torch"].append(_per_call(timed, functools.partial(torch.matmul, ta, tb), calls))
            times["mkl"].append(_fast(mxu, mxu_gemm, timed, a, b, True, calls))
            times["numpy"].append(_fast(mxu, mxu_gemm, timed, a, b, False, calls))
        t = {k: statistics.median(v) for k, v in times.items()}
        print(f"{str((batch, m, k, n)):>22} {t['torch'] * 1e3:>9.3f} {t['mkl'] * 1e3:>8.3f} {t['numpy'] * 1e3:>9.3f} "
              f"{t['torch'] / t['mkl']:>7.2f} {t['torch'] / t['numpy']:>8.2f} {t['numpy'] / t['mkl']:>10.2f}")
    mxu_gemm.ENABLED = True
    mxu_gemm.reset()


if __name__ == "__main__":
    main()
