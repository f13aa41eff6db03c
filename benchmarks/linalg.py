"""Host time of qr, eigh and svd on the tpu device (the sim driver runs the IR lowerings of
drivers/ir_lowerings_linalg.py) against torch CPU (LAPACK), same run: seconds and the ratio tpu / cpu.

The first call per shape (tracing and compiling the program) is excluded; medians of several runs.

Usage: python benchmarks/linalg.py [--sizes 64,256] [--repeats 3] [--dtype float32]
"""

from __future__ import annotations

import argparse
import statistics
import time


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64,256")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    args = ap.parse_args(argv)
    import torch

    import torchtpu  # noqa: F401

    dtype = getattr(torch, args.dtype)
    ops = {"qr": lambda a: torch.linalg.qr(a), "eigh": lambda a: torch.linalg.eigh(a + a.mT),
           "svd": lambda a: torch.linalg.svd(a, full_matrices=False)}
    ratios = {}
    for n in (int(s) for s in args.sizes.split(",")):
        a = torch.randn(n, n, dtype=dtype, generator=torch.Generator().manual_seed(0))
        for name, fn in ops.items():
            times = {}
            for dev in ("cpu", "tpu"):
                x = a.to(dev)
                fn(x)[0].cpu()  # warm-up: trace and compile
                runs = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    fn(x)[0].cpu()
                    runs.append(time.perf_counter() - t0)
                times[dev] = statistics.median(runs)
            ratios[f"{name} {n}x{n}"] = times["tpu"] / times["cpu"]
            print(f"{name:5s} {n:4d}x{n:<4d} {args.dtype}: cpu {times['cpu'] * 1e3:9.2f} ms   tpu(sim) "
                  f"{times['tpu'] * 1e3:10.2f} ms   ratio {ratios[f'{name} {n}x{n}']:8.1f}x")
    return ratios


if __name__ == "__main__":
    main()
