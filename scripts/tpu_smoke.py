#!/usr/bin/env python
"""Checks a torchtpu install on a TPU VM and reports op latencies: run it once after `pip install 'torchtpu[tpu]'`.

    python scripts/tpu_smoke.py               # on a TPU VM (libtpu); one process: it takes the VM's chips
    python scripts/tpu_smoke.py --platform cpu --quick    # the same checks on JAX's CPU client, anywhere

Steps, each printed with OK or FAIL: versions (torch, jax, jaxlib, libtpu) and /dev/accel*; the PJRT client and
its devices; a torch-free Program compiled from StableHLO text and checked against the simulator; tensors on
"tpu" through torch (copies, views, in-place, matmul at each precision against CPU); per-op dispatch latency;
matmul throughput (bf16, TFLOP/s against the chip's peak when the chip is known); a few training steps of the
demo model. Exit status 0 when every check passed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import traceback
from importlib import metadata

RESULTS: list[tuple[str, bool, str]] = []


def check(name: str):
    def wrap(fn):
        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                detail = fn(*args, **kwargs) or ""
                ok = True
            except Exception as exc:  # noqa: BLE001 - a smoke test reports every failure and goes on
                detail = f"{type(exc).__name__}: {exc}"
                if os.environ.get("TPU_SMOKE_TRACEBACK"):
                    traceback.print_exc()
                ok = False
            took = time.perf_counter() - start
            RESULTS.append((name, ok, detail))
            print(f"[{'OK' if ok else 'FAIL':4}] {name} ({took:.1f} s){': ' + detail if detail else ''}", flush=True)
            return ok

        return run

    return wrap


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


@check("environment")
def environment(platform: str) -> str:
    accel = sorted(p for p in os.listdir("/dev") if p.startswith("accel")) if os.path.isdir("/dev") else []
    versions = {d: _version(d) for d in ("torchtpu", "torch", "jax", "jaxlib", "libtpu", "libtpu-nightly")}
    text = ", ".join(f"{k} {v}" for k, v in versions.items() if v != "not installed")
    if platform == "tpu" and not accel:
        raise RuntimeError(f"no /dev/accel* devices: not a TPU VM? ({text})")
    if versions["jax"] == "not installed":
        raise RuntimeError("jax is not installed: pip install 'torchtpu[tpu]'")
    return f"{text}; devices {accel or 'none'}; python {sys.version.split()[0]}"


@check("PJRT client and devices")
def client(platform: str) -> str:
    from torchtpu.drivers.pjrt.driver import PjrtDriver

    drv = PjrtDriver(platform)
    names = {drv.device_name(i) for i in range(drv.device_count())}
    mem = drv.memory_limit(0)
    return f"{drv.device_count()} device(s): {', '.join(sorted(names))}; {mem / 2**30:.1f} GiB on device 0; " \
           f"platform version {drv.client.platform_version}"


@check("StableHLO program, torch-free, against the simulator")
def program(platform: str) -> str:
    import numpy as np
    from torchtpu.drivers.ir import Builder
    from torchtpu.drivers.pjrt.driver import PjrtDriver
    from torchtpu.drivers.sim.driver import SimDriver

    b = Builder()
    x, w = b.input((64, 128), "float32"), b.input((128, 32), "float32")
    (h,) = b.emit("dot_general", [x, w], lhs_batch=(), rhs_batch=(), lhs_contract=(1,), rhs_contract=(0,),
                  precision="HIGHEST", out_dtype="float32")
    (t,) = b.emit("tanh", [h])
    (s,) = b.emit("reduce", [t], kind="sum", dimensions=(1,))
    values, index = b.emit("sort", [s], dimension=0, descending=True, stable=True)
    prog = b.finish([t, values, index], name="smoke")
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((64, 128)).astype(np.float32), rng.standard_normal((128, 32)).astype(np.float32)]
    outs = {}
    for drv in (PjrtDriver(platform), SimDriver()):
        exe = drv.compile(prog)
        res = [np.zeros(v.shape, np.float32 if v.dtype == "float32" else np.int64) for v in prog.outputs]
        drv.execute(exe, inputs, res)
        outs[drv.name] = res
    err = float(np.abs(outs["pjrt"][0] - outs["sim"][0]).max())
    if err > 1e-4:
        raise AssertionError(f"tanh(x @ w) differs from the simulator by {err:.2e}")
    return f"max |pjrt - sim| {err:.1e}"


@check("tensors on tpu through torch")
def tensors() -> str:
    import torch

    x = torch.randn(256, 256)
    t = x.to("tpu")
    t[1:5, :8].add_(1.0)  # in-place on a view
    x[1:5, :8].add_(1.0)
    assert torch.equal(t.cpu(), x), "copy/view/in-place round trip"
    worst = {}
    for p in ("DEFAULT", "HIGH", "HIGHEST"):
        with torch.tpu.precision(p):
            got = (t @ t).cpu()
        worst[p] = float((got - x @ x).abs().max() / (x @ x).abs().max())
    assert worst["HIGHEST"] < 1e-4, worst
    return f"{torch.tpu.get_device_name()}; matmul relative error " + \
        ", ".join(f"{k} {v:.1e}" for k, v in worst.items())


@check("per-op dispatch latency")
def latency(iters: int) -> str:
    import torch

    a, b = torch.randn(128, 128, device="tpu"), torch.randn(128, 128, device="tpu")
    ops = {"add": lambda: a + b, "mm": lambda: a @ b, "softmax": lambda: a.softmax(-1), "sum": lambda: a.sum(0),
           "add_": lambda: a.add_(0.0)}
    rows = []
    for name, fn in ops.items():
        for _ in range(5):
            fn()
        torch.tpu.synchronize()
        samples = []
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(iters):
                fn()
            torch.tpu.synchronize()
            samples.append((time.perf_counter() - start) / iters)
        rows.append(f"{name} {statistics.median(samples) * 1e6:.0f} us")
    return ", ".join(rows)


_PEAK_BF16 = {"v4": 275e12, "v5 lite": 197e12, "v5e": 197e12, "v5p": 459e12, "v6 lite": 918e12, "v6e": 918e12}


@check("matmul throughput (bf16)")
def throughput(n: int) -> str:
    import torch

    a = torch.randn(n, n, device="tpu", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="tpu", dtype=torch.bfloat16)
    (a @ b).sum().item()
    reps = 5
    torch.tpu.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        c = a @ b
    torch.tpu.synchronize()
    seconds = (time.perf_counter() - start) / reps
    flops = 2 * n**3 / seconds
    name = torch.tpu.get_device_name().lower()
    peak = next((v for k, v in _PEAK_BF16.items() if k in name), None)
    del c
    return f"{n}x{n}x{n}: {seconds * 1e3:.2f} ms, {flops / 1e12:.2f} TFLOP/s" + \
        (f" ({flops / peak * 100:.0f}% of peak)" if peak else "")


@check("training steps (demo model)")
def training(steps: int) -> str:
    import torch

    from torchtpu.models.tiny_gpt import GPTConfig, TinyGPT, synthetic_batch

    cfg = GPTConfig()
    torch.manual_seed(0)
    model = TinyGPT(cfg).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    losses, times = [], []
    for _ in range(steps):
        start = time.perf_counter()
        x, y = synthetic_batch(cfg, 8, gen)
        loss = model.loss(x.to("tpu"), y.to("tpu"))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        times.append(time.perf_counter() - start)
    if not losses[-1] < losses[0]:
        raise AssertionError(f"loss did not go down: {losses}")
    return f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; first step {times[0]:.2f} s (compiles), " \
           f"then {statistics.median(times[1:]) * 1e3:.1f} ms/step"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--platform", default="tpu", choices=["tpu", "cpu", "cuda"])
    parser.add_argument("--quick", action="store_true", help="fewer iterations, a small matmul")
    args = parser.parse_args(argv)
    os.environ["TORCHTPU_DRIVER"] = "pjrt"  # before torch is imported (autoload picks the driver)
    os.environ["TORCHTPU_PJRT_PLATFORM"] = args.platform
    print(f"torchtpu smoke test on PJRT platform {args.platform!r}", flush=True)
    if not environment(args.platform) or not client(args.platform):
        print("\nthe PJRT client is not usable; see docs/pjrt.md")
        return 1
    program(args.platform)
    tensors()
    latency(30 if args.quick else 200)
    throughput(512 if args.quick else 4096)
    training(4 if args.quick else 10)
    failed = [name for name, ok, _ in RESULTS if not ok]
    print(f"\n{len(RESULTS) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
