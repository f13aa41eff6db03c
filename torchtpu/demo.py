"""`torchtpu demo`: trains a small transformer LM on the simulated TPU and on CPU side by side, then reports
the loss curves, simulated device time per step, FLOPs, HBM traffic and MFU on the chosen chip."""

from __future__ import annotations

import argparse
import time

import torch
from tqdm import tqdm

import torchtpu
from torchtpu.models.tiny_gpt import GPTConfig, TinyGPT, model_flops_per_step, synthetic_batch


def _train(device: str, cfg: GPTConfig, steps: int, batch: int, lr: float, seed: int,
           progress: tqdm | None) -> tuple[list[float], float]:
    torch.manual_seed(seed)
    model = TinyGPT(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    losses: list[float] = []
    start = time.perf_counter()
    for _ in range(steps):
        x, y = synthetic_batch(cfg, batch, gen)
        loss = model.loss(x.to(device), y.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if progress is not None:
            progress.set_postfix(device=device, loss=f"{losses[-1]:.3f}")
            progress.update(1)
    return losses, time.perf_counter() - start


def run(steps: int = 30, batch: int = 8, precision: str = "DEFAULT", seed: int = 0,
        eager_mode: str = "DEFER_NEVER") -> dict:
    cfg = GPTConfig()
    lr = 3e-3
    with tqdm(total=2 * steps, desc="training tiny GPT (cpu, then tpu)", unit="step") as bar:
        cpu_losses, cpu_seconds = _train("cpu", cfg, steps, batch, lr, seed, bar)
        torchtpu.reset_stats()
        with torchtpu.precision(precision), torchtpu.eager_mode(eager_mode):
            tpu_losses, tpu_seconds = _train("tpu", cfg, steps, batch, lr, seed, bar)
    torch.tpu.synchronize()
    s = torchtpu.stats()
    props = torch.tpu.get_device_properties()
    flops = model_flops_per_step(cfg, batch)
    result = {"cpu_losses": cpu_losses, "tpu_losses": tpu_losses, "cpu_seconds": cpu_seconds,
              "tpu_seconds": tpu_seconds, "model_flops_per_step": flops, "launches_per_step": s["launches"] / steps,
              "chip": props.name, "precision": precision, "eager_mode": eager_mode, "fallbacks": s["fallbacks"],
              "driver": s.get("driver", "sim"), "memory_allocated": torch.tpu.memory_allocated()}
    if "device_seconds" in s:  # simulated costs: only the sim driver has them (pjrt runs on real hardware)
        step_wall = s["wall_seconds"] / steps
        result.update({"device_seconds_per_step": s["device_seconds"] / steps, "simulated_step_seconds": step_wall,
                       "flops_per_step": s["flops"] / steps, "hbm_bytes_per_step": s["hbm_bytes"] / steps,
                       "mfu": flops / step_wall / props.bf16_flops})
    return result


def report(r: dict) -> str:
    lines = [f"tiny GPT on {r['chip']}, precision {r['precision']}, eager mode {r['eager_mode']}", "",
             " step   cpu loss   tpu loss   rel diff"]
    for i, (a, b) in enumerate(zip(r["cpu_losses"], r["tpu_losses"])):
        if i % 5 == 0 or i == len(r["cpu_losses"]) - 1:
            lines.append(f"{i:5d}   {a:8.4f}   {b:8.4f}   {abs(a - b) / abs(a):.2e}")
    if "simulated_step_seconds" in r:
        lines += [
            "",
            f"simulated step time      {r['simulated_step_seconds'] * 1e3:9.3f} ms "
            f"(device busy {r['device_seconds_per_step'] * 1e3:.3f} ms, {r['launches_per_step']:.0f} launches)",
            f"FLOPs per step           {r['flops_per_step']:.3e} executed ({r['model_flops_per_step']:.3e} model)",
            f"HBM traffic per step     {r['hbm_bytes_per_step'] / 1e6:9.3f} MB",
            f"MFU (model FLOPs)        {r['mfu'] * 100:9.4f} %  (a tiny model is launch/latency-bound)",
        ]
    else:
        lines += ["", f"driver {r['driver']}: {r['launches_per_step']:.0f} launches per step (simulated costs are "
                      "reported by the sim driver only)"]
    lines += [
        f"wall time                cpu {r['cpu_seconds']:.2f} s, tpu ({r['driver']}) {r['tpu_seconds']:.2f} s",
        f"CPU fallbacks            {sum(r['fallbacks'].values())} {r['fallbacks'] or ''}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="torchtpu demo", description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--precision", default="DEFAULT", choices=["DEFAULT", "HIGH", "HIGHEST"])
    parser.add_argument("--eager-mode", default="DEFER_NEVER",
                        choices=["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"])
    args = parser.parse_args(argv)
    print(report(run(args.steps, args.batch, args.precision, eager_mode=args.eager_mode)))
    return 0
