"""Host memory of a training loop in each eager mode: the tiny transformer (torchtpu/models/tiny_gpt.py) with
AdamW, N steps per mode, each mode in its own process. Prints resident memory (VmRSS from /proc/self/status)
after warm-up and at each quarter of the run, its growth per 1000 steps, the wall time per step, and the size
of every program cache at the end (a cache that gains entries per step is what grows memory).

    python benchmarks/defer_memory.py --steps 2000            # the three modes
    python benchmarks/defer_memory.py --steps 500 --mode DEFER_AND_FUSE
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

MODES = ("DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE")


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS line in /proc/self/status")


def cache_sizes() -> dict[str, int]:
    """Entries in each program / trace cache a training step may add to."""
    from torchtpu import runtime
    from torchtpu.execution import deferred, eager, fast_launch, region_ir

    return {"eager_traces": len(eager._cache), "region_replays": len(deferred._replays),
            "region_programs": len(region_ir.PROGRAMS), "region_structures": len(region_ir._STRUCTURES),
            "driver_executables": len(runtime.driver()._cache), "buffer_views": len(runtime._views),
            "fast_launch": fast_launch.counters()["entries"]}


def run_mode(mode: str, steps: int, warmup: int, batch: int) -> dict[str, object]:
    import torch

    import torchtpu
    from torchtpu.models.tiny_gpt import GPTConfig, TinyGPT, synthetic_batch

    torch.set_num_threads(1)
    cfg = GPTConfig()
    torch.manual_seed(0)
    model = TinyGPT(cfg).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)

    def step() -> float:
        x, y = synthetic_batch(cfg, batch, gen)
        loss = model.loss(x.to("tpu"), y.to("tpu"))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    with torchtpu.eager_mode(mode):
        for _ in range(warmup):
            step()
        torch.tpu.synchronize()
        start_rss, start_caches = rss_mb(), cache_sizes()
        samples = []
        start = time.perf_counter()
        for i in range(steps):
            loss = step()
            if (i + 1) % max(steps // 4, 1) == 0:
                samples.append(round(rss_mb(), 1))
        wall = time.perf_counter() - start
        end_rss = rss_mb()
    return {"mode": mode, "steps": steps, "rss_start_mb": start_rss, "rss_end_mb": end_rss,
            "growth_mb_per_1000": (end_rss - start_rss) * 1000.0 / steps, "ms_per_step": 1e3 * wall / steps,
            "loss": loss, "rss_quarters_mb": samples, "caches_after_warmup": start_caches, "caches_end": cache_sizes()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--mode", choices=MODES, action="append", help="a mode to run (default: all three)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_mode(args.mode[0], args.steps, args.warmup, args.batch)))
        return
    print(f"{'mode':16} {'steps':>6} {'RSS start':>10} {'RSS at each quarter (MB)':>26} {'MB/1000 steps':>14} "
          f"{'ms/step':>8}  caches (after warm-up -> end)")
    for mode in args.mode or MODES:
        cmd = [sys.executable, __file__, "--child", "--mode", mode, "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--batch", str(args.batch)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=os.environ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        caches = ", ".join(f"{k} {r['caches_after_warmup'][k]}->{v}" for k, v in r["caches_end"].items())
        quarters = " ".join(f"{q:.0f}" for q in r["rss_quarters_mb"])
        print(f"{mode:16} {r['steps']:6d} {r['rss_start_mb']:9.1f}M {quarters:>26} "
              f"{r['growth_mb_per_1000']:+14.1f} {r['ms_per_step']:8.1f}  {caches}", flush=True)


if __name__ == "__main__":
    main()
