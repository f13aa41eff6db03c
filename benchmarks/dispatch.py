"""Per-op eager dispatch latency of a small `add` and `mm` on "tpu" (sim driver) against CPU PyTorch eager,
printed as ratios (medians over repeated timed loops, same run). Goal for later issues: under 5x CPU per op."""

from __future__ import annotations

import statistics
import time

import torch

torch.set_num_threads(1)


def _per_op(fn, iters: int = 300, repeats: int = 7) -> float:
    for _ in range(20):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        samples.append((time.perf_counter() - start) / iters)
    return statistics.median(samples)


def main() -> None:
    import torchtpu  # noqa: F401

    rows = []
    for name, shape in (("add", (64, 64)), ("mm", (64, 64))):
        a_cpu, b_cpu = torch.randn(shape), torch.randn(shape)
        a_tpu, b_tpu = a_cpu.to("tpu"), b_cpu.to("tpu")
        op = torch.add if name == "add" else torch.mm
        cpu = _per_op(lambda op=op, a=a_cpu, b=b_cpu: op(a, b))
        tpu = _per_op(lambda op=op, a=a_tpu, b=b_tpu: op(a, b))
        torch.tpu.synchronize()
        rows.append((name, shape, cpu, tpu))
    print(f"{'op':4} {'shape':10} {'cpu us':>9} {'tpu us':>9} {'tpu/cpu':>8}")
    for name, shape, cpu, tpu in rows:
        print(f"{name:4} {str(shape):10} {cpu * 1e6:9.2f} {tpu * 1e6:9.2f} {tpu / cpu:8.1f}x")


if __name__ == "__main__":
    main()
