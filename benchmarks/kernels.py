"""Custom kernels on the simulator: each example kernel against the same computation as eager ops and as a
compiled graph, and a Helion kernel's configurations ranked per chip by simulated time.

Per example and size (a small one and a realistic one), in one run on the sim driver (TORCHTPU_CHIP):
* simulated device seconds of one call: the kernel, the eager ops (DEFER_NEVER, one launch per op) and the eager
  ops under torch.compile (one Program), with the ratios eager / kernel and compiled / kernel;
* host wall time per call (median of `--repeat` calls after a warm-up): the kernel against the eager ops, ratio.
Then the Helion RMSNorm kernel: `sim_autotune` on v5e and on v6e, the best configuration of each, its simulated
time and the speedup over Helion's default configuration.

    python benchmarks/kernels.py [--repeat 5] [--threads 1] [--small-only] [--cpu]

`--cpu` times the host with the process's CPU time instead of the wall clock (a loaded machine's wall clock
counts the time other work gets). Figures measured: docs/kernels.md, "Measured".
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HELION_BACKEND", "pallas")
os.environ.setdefault("HELION_PALLAS_INTERPRET", "1")

import torch  # noqa: E402

import torchtpu  # noqa: E402
from torchtpu.kernels.examples.flash_attention import attention_eager, flash_attention  # noqa: E402
from torchtpu.kernels.examples.grouped_matmul import grouped_matmul, grouped_matmul_eager  # noqa: E402
from torchtpu.kernels.examples.rmsnorm import rmsnorm, rmsnorm_eager  # noqa: E402


def _device_seconds(fn, *args) -> float:  # noqa: ANN001
    torch.tpu.synchronize()
    torchtpu.reset_stats()
    fn(*args)
    torch.tpu.synchronize()
    return torchtpu.stats()["device_seconds"]


def _host_seconds(fn, args, repeat: int, clock) -> float:  # noqa: ANN001
    fn(*args)
    torch.tpu.synchronize()
    times = []
    for _ in range(repeat):
        start = clock()
        fn(*args)
        torch.tpu.synchronize()
        times.append(clock() - start)
    return statistics.median(times)


def _cases(small_only: bool) -> list[tuple]:
    g = torch.Generator().manual_seed(0)

    def rand(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.randn(*shape, generator=g).to(dtype).to("tpu")

    cases = []
    for rows, d, block in ((64, 256, 16), (2048, 1024, 256)):
        x, w = rand(rows, d), rand(d)
        cases.append((f"rmsnorm {rows}x{d}", lambda a, b, blk=block: rmsnorm(a, b, 1e-6, blk), rmsnorm_eager, (x, w)))
    for s, d, bq in ((128, 64, 64), (1024, 128, 256)):
        q, k, v = rand(1, 4, s, d), rand(1, 4, s, d), rand(1, 4, s, d)
        cases.append((f"flash attention causal 1x4x{s}x{d}",
                      lambda a, b, c, blk=bq: flash_attention(a, b, c, True, blk, blk),
                      lambda a, b, c: attention_eager(a, b, c, True), (q, k, v)))
    for m, k, n, e, blk in ((256, 128, 128, 4, 64), (2048, 512, 1024, 8, 256)):
        sizes = torch.full((e,), m // e, dtype=torch.int32)
        sizes[0] += 3
        sizes[-1] -= 3
        cases.append((f"grouped matmul {m}x{k} @ {e}x{k}x{n}",
                      lambda a, b, c, bl=blk: grouped_matmul(a, b, c, bl, bl),
                      grouped_matmul_eager, (rand(m, k), rand(e, k, n), sizes.to("tpu"))))
    return cases[::2] if small_only else cases


def run_examples(repeat: int, small_only: bool, clock) -> None:  # noqa: ANN001
    print(f"chip {torchtpu.stats().get('chip')}, torch threads {torch.get_num_threads()}")
    header = (f"{'example':44s} {'kernel us':>10s} {'eager us':>10s} {'eager/k':>8s} {'compiled us':>11s} "
              f"{'comp/k':>7s} | {'host kernel ms':>14s} {'host eager ms':>13s} {'k/eager':>8s}")
    print(header)
    for name, kernel, eager, args in _cases(small_only):
        kernel(*args)  # traces, compiles and prices once
        compiled = torch.compile(eager, backend="tpu")
        compiled(*args)
        sim_k = _device_seconds(kernel, *args)
        sim_e = _device_seconds(eager, *args)
        sim_c = _device_seconds(compiled, *args)
        host_k = _host_seconds(kernel, args, repeat, clock)
        host_e = _host_seconds(eager, args, repeat, clock)
        print(f"{name:44s} {sim_k * 1e6:10.2f} {sim_e * 1e6:10.2f} {sim_e / sim_k:8.2f} {sim_c * 1e6:11.2f} "
              f"{sim_c / sim_k:7.2f} | {host_k * 1e3:14.2f} {host_e * 1e3:13.2f} {host_k / host_e:8.2f}")


def run_helion(candidates: int) -> None:
    import jax

    from torchtpu.kernels.examples.helion_rmsnorm import rms_norm
    from torchtpu.kernels.helion_ops import sim_autotune

    avals = [jax.ShapeDtypeStruct((4096, 1024), "float32"), jax.ShapeDtypeStruct((1024,), "float32")]
    print(f"\nHelion rms_norm 4096x1024 float32, {candidates} random configurations + the default, per chip:")
    for chip in ("v5e", "v6e"):
        t = sim_autotune(rms_norm, avals, chip=chip, candidates=candidates)
        priced = sum(1 for _, s in t.tried if s is not None)
        print(f"  {chip}: best {t.best} {t.best_seconds * 1e6:.2f} us; default {t.default} "
              f"{t.default_seconds * 1e6:.2f} us; speedup {t.speedup:.2f}x ({priced}/{len(t.tried)} priced)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--candidates", type=int, default=12)
    parser.add_argument("--small-only", action="store_true")
    parser.add_argument("--no-helion", action="store_true")
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    clock = time.process_time if args.cpu else time.perf_counter
    run_examples(args.repeat, args.small_only, clock)
    if not args.no_helion:
        run_helion(args.candidates)


if __name__ == "__main__":
    main()
