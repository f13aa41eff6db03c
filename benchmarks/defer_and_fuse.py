"""DEFER_AND_FUSE vs DEFER_NEVER, same run: launches, HBM bytes, simulated device time and wall time for the demo
model's training step and for a transformer block's forward. Prints each as a ratio (DEFER_NEVER / DEFER_AND_FUSE;
higher is better for fusion). Wall times are medians over steps after warm-up."""

from __future__ import annotations

import statistics
import time

import torch

torch.set_num_threads(1)


def _measure(mode: str, step, warmup: int = 3, steps: int = 10) -> dict[str, float]:
    import torchtpu

    with torchtpu.eager_mode(mode):
        for _ in range(warmup):
            step()
        torch.tpu.synchronize()
        torchtpu.reset_stats()
        walls = []
        for _ in range(steps):
            start = time.perf_counter()
            step()
            walls.append(time.perf_counter() - start)
        s = torchtpu.stats()
    return {"launches": s["launches"] / steps, "hbm_bytes": s["hbm_bytes"] / steps,
            "device_seconds": s["device_seconds"] / steps, "simulated_step": s["wall_seconds"] / steps,
            "wall": statistics.median(walls)}


def _training_step():
    from torchtpu.models.tiny_gpt import GPTConfig, TinyGPT, synthetic_batch

    cfg = GPTConfig()
    torch.manual_seed(0)
    model = TinyGPT(cfg).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)

    def step():
        x, y = synthetic_batch(cfg, 8, gen)
        loss = model.loss(x.to("tpu"), y.to("tpu"))
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()

    return step


def _block_forward():
    from torchtpu.models.tiny_gpt import Block, GPTConfig

    cfg = GPTConfig(d_model=128, heads=4, ffn=512, seq=64)
    torch.manual_seed(0)
    block = Block(cfg).to("tpu")
    x = torch.randn(8, cfg.seq, cfg.d_model).to("tpu")

    def step():
        with torch.no_grad():
            block(x).sum().item()

    return step


def main() -> None:
    import torchtpu  # noqa: F401

    print(f"{'workload':26} {'metric':15} {'DEFER_NEVER':>12} {'DEFER_AND_FUSE':>15} {'ratio':>8}")
    for name, make in (("demo model training step", _training_step), ("transformer block forward", _block_forward)):
        eager = _measure("DEFER_NEVER", make())
        fused = _measure("DEFER_AND_FUSE", make())
        for metric in ("launches", "hbm_bytes", "device_seconds", "simulated_step", "wall"):
            a, b = eager[metric], fused[metric]
            print(f"{name:26} {metric:15} {a:12.4g} {b:15.4g} {a / b:7.2f}x")


if __name__ == "__main__":
    main()
