"""torch.compile(backend="tpu") vs eager DEFER_NEVER vs eager DEFER_AND_FUSE on the demo model's training step,
same run: time to first result, steady-state wall time per step (median) and simulated device time per step.
Ratios are to DEFER_NEVER. "compiled" runs the forward and backward graphs compiled and the optimizer eagerly;
"compiled+DEFER_AND_FUSE" also defers what is not compiled (the optimizer), so the step is one launch."""

from __future__ import annotations

import statistics
import time

import torch

torch.set_num_threads(1)


def _run(kind: str, steps: int = 8) -> dict[str, float]:
    import torchtpu
    from torchtpu.models.tiny_gpt import GPTConfig, TinyGPT, synthetic_batch

    torch._dynamo.reset()
    cfg = GPTConfig()
    torch.manual_seed(0)
    model = TinyGPT(cfg).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)

    def step(x, y):
        loss = model.loss(x, y)
        loss.backward()
        return loss

    fn = torch.compile(step, backend="tpu") if kind.startswith("compiled") else step
    mode = "DEFER_AND_FUSE" if kind.endswith("DEFER_AND_FUSE") else "DEFER_NEVER"
    walls, device = [], []
    with torchtpu.eager_mode(mode):
        start = time.perf_counter()
        for i in range(steps):
            x, y = synthetic_batch(cfg, 8, gen)
            torchtpu.reset_stats()
            t0 = time.perf_counter()
            opt.zero_grad()
            fn(x.to("tpu"), y.to("tpu")).item()
            opt.step()
            torch.tpu.synchronize()
            walls.append(time.perf_counter() - t0)
            device.append(torchtpu.stats()["device_seconds"])
            if i == 0:
                first = time.perf_counter() - start
    return {"first": first, "wall": statistics.median(walls[2:]), "device": statistics.median(device[2:])}


def main() -> None:
    import torchtpu  # noqa: F401

    kinds = ("DEFER_NEVER", "DEFER_AND_FUSE", "compiled", "compiled+DEFER_AND_FUSE")
    results = {kind: _run(kind) for kind in kinds}
    base = results["DEFER_NEVER"]
    print(f"{'mode':24} {'first result s':>15} {'step wall s':>12} {'device us/step':>15} {'device vs eager':>16}")
    for kind, r in results.items():
        print(f"{kind:24} {r['first']:15.3f} {r['wall']:12.4f} {r['device'] * 1e6:15.2f} "
              f"{base['device'] / r['device']:15.2f}x")


if __name__ == "__main__":
    main()
