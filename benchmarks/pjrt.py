"""The PJRT driver on JAX's CPU client against the sim driver and CPU PyTorch, measured in one run.

Per-op eager dispatch latency (DEFER_NEVER, one launch per op, synchronized at the end of each timed loop; this
process's CPU time, all threads: the machine is shared), JAX's own eager dispatch of the same ops on the same
client, and the demo model's (tiny GPT, AdamW) training-step time, each printed as ratios to the sim driver and to
CPU PyTorch.
The driver is chosen once per process, so each device runs in its own child process with the same seeds; the
parent prints the table. Also checks that pjrt(cpu) and the sim train to the same losses at HIGHEST.

    python benchmarks/pjrt.py            # about 2-3 minutes on two cores
    python benchmarks/pjrt.py --steps 10 --iters 200
    TORCHTPU_DRIVER=pjrt TORCHTPU_PJRT_PLATFORM=cpu python benchmarks/pjrt.py --prepared --iters 200
                                         # per op: the prepared one-op launch off/on (ABBA, one process), JAX's

Measured (issue #22, loaded 2-core machine), main 552930a -> the speed branch (a cached DEFER_NEVER op runs as
its one-op region from C++ without making the region; replays skip gc.collect), pjrt / JAX eager per op: add
19.7x -> 7.7x, mul_ 7.0x -> 3.4x, mm 10.4x -> 5.6x, relu 11.4x -> 5.0x, sum 9.1x -> 4.9x, index_select 18.5x ->
6.2x; tiny GPT training step pjrt(cpu) / CPU eager 6.4x -> 5.0x (losses equal to the sim's).
The pjrtfast branch (driver.execute binds inputs straight from storages, results by consume_with_handlers):
driver.execute alone 13.4 -> 12.2 us (ABBA, one process); per op within the machine's noise, see docs/pjrt.md.
The pjrtop branch (a repeated one-op region launches by a prepared launch, execution/one_op_fast.py and
drivers/pjrt/one_op.py; `--prepared`: off -> on in one process, three runs, load 1-10): pjrt / JAX eager per op
add 2.54x -> 2.04x, 2.54x -> 1.87x, 2.72x -> 1.84x; mul_ 2.04x -> 1.63x, 1.70x -> 1.37x, 3.08x -> 2.45x; mm 1.97x
-> 1.79x, 1.80x -> 1.52x, 2.70x -> 2.30x; relu 1.88x -> 1.46x, 1.66x -> 1.18x, 1.85x -> 1.65x; sum 3.52x -> 2.87x,
1.51x -> 1.35x, 2.85x -> 2.18x; index_select (waits for its index check) 4.36x -> 3.71x, 2.54x -> 2.25x, 4.48x ->
3.93x; softmax and view_add_ 0.2-0.5x; tiny GPT step 23.0 -> 21.0 ms (ABBA), pjrt(cpu) / CPU eager 3.6x -> 3.3x
(this script the same hour: 2.7x). The launch column times the pjrt client's execute (a prepared launch does not
go through the driver's execute).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

OPS = {  # name: fn(a, b, index) on 64x64 float32 a, b and a 64-long int64 index
    "add": lambda a, b, i: a + b,
    "mul_": lambda a, b, i: a.mul_(1.0),
    "mm": lambda a, b, i: a @ b,
    "relu": lambda a, b, i: a.relu(),
    "sum": lambda a, b, i: a.sum(1),
    "softmax": lambda a, b, i: a.softmax(-1),
    "index_select": lambda a, b, i: a.index_select(0, i),
    "view_add_": lambda a, b, i: a[:, 1:9].add_(1.0),
}


JAX_OPS = {  # the same ops in JAX's own eager dispatch (jax.numpy on JAX's default client of the same platform)
    "add": lambda jnp, a, b, i: a + b,
    "mul_": lambda jnp, a, b, i: a * 1.0,
    "mm": lambda jnp, a, b, i: a @ b,
    "relu": lambda jnp, a, b, i: jnp.maximum(a, 0.0),
    "sum": lambda jnp, a, b, i: a.sum(1),
    "softmax": lambda jnp, a, b, i: __import__("jax").nn.softmax(a, -1),
    "index_select": lambda jnp, a, b, i: jnp.take(a, i, axis=0),
    "view_add_": lambda jnp, a, b, i: a.at[:, 1:9].add(1.0),
}


def _jax_ops(iters: int, repeats: int) -> dict:
    """Per-op time of JAX's own eager dispatch of OPS (synchronized at the end of each loop, as ours)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    gen = np.random.default_rng(0)
    a, b = (jnp.asarray(gen.standard_normal((64, 64), dtype=np.float32)) for _ in range(2))
    index = jnp.asarray(gen.integers(0, 64, 64))
    out = {}
    for name, fn in JAX_OPS.items():
        last: list = [None]

        def call(fn=fn, last=last):
            last[0] = fn(jnp, a, b, index)

        out[name] = _per_op(call, iters, repeats, lambda last=last: jax.block_until_ready(last[0]))
    return out


def _per_op(fn, iters: int, repeats: int, sync) -> float:
    for _ in range(10):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(iters):
            fn()
        sync()
        samples.append((time.process_time() - start) / iters)
    return statistics.median(samples)


def child(device: str, iters: int, repeats: int, steps: int) -> dict:
    import torch

    torch.set_num_threads(1)
    if device == "tpu":
        import torchtpu

        sync = torch.tpu.synchronize
        precision = torchtpu.precision("HIGHEST")
    else:
        import contextlib

        sync = lambda: None  # noqa: E731
        precision = contextlib.nullcontext()
    out: dict = {"ops": {}, "driver_share": {}}
    spent = [0.0, 0]
    if device == "tpu":  # CPU time spent in the launch itself (the rest is the front end: key, record, bind)
        from torchtpu import runtime

        # pjrt: the client's execute (jaxlib's execute_sharded and its results; a repeated one-op region reaches it
        # without the driver's general execute, drivers/pjrt/one_op.py); the sim: the driver's execute
        owner = getattr(runtime.driver(), "client", runtime.driver())
        execute = owner.execute

        def timed(*args, **kwargs):
            start = time.process_time()  # as the per-op figures (wall time counts other processes on a shared host)
            try:
                return execute(*args, **kwargs)
            finally:
                spent[0] += time.process_time() - start
                spent[1] += 1

        owner.execute = timed
    with precision:
        for name, fn in OPS.items():
            gen = torch.Generator().manual_seed(0)
            a, b = (torch.randn(64, 64, generator=gen).to(device) for _ in range(2))
            index = torch.randint(0, 64, (64,), generator=gen).to(device)
            for _ in range(10):  # compile outside the timed part
                fn(a, b, index)
            sync()
            spent[:] = [0.0, 0]
            out["ops"][name] = _per_op(lambda fn=fn, a=a, b=b, i=index: fn(a, b, i), iters, repeats, sync)
            out["driver_share"][name] = spent[0] / spent[1] if spent[1] else 0.0
        out["train"] = _train(device, steps, sync)
    if device == "tpu" and os.environ.get("TORCHTPU_DRIVER") == "pjrt":
        out["jax"] = _jax_ops(iters, repeats)
    if device == "tpu":
        import torchtpu

        s = torchtpu.stats()
        out["driver"] = s["driver"]
        out["compiles"] = s["cache"]["compiles"]
        out["compile_seconds"] = s["cache"]["compile_seconds"]
    return out


def _train(device: str, steps: int, sync) -> dict:
    import torch

    from torchtpu.models.tiny_gpt import GPTConfig, TinyGPT, synthetic_batch

    cfg = GPTConfig()
    torch.manual_seed(0)
    model = TinyGPT(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    losses, times = [], []
    for _ in range(steps):
        start = time.process_time()
        x, y = synthetic_batch(cfg, 8, gen)
        loss = model.loss(x.to(device), y.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())  # reads the loss: waits for the step
        sync()
        times.append(time.process_time() - start)
    warm = times[2:] if len(times) > 3 else times[1:] or times
    return {"losses": losses, "first_step": times[0], "step": statistics.median(warm)}


def prepared_abba(iters: int, repeats: int) -> None:
    """pjrt only (run with TORCHTPU_DRIVER=pjrt): each op with the prepared one-op launch
    (execution/one_op_fast.py) off and on, and JAX's own eager op, interleaved (ABC CBA) in this process; medians."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import torch

    import torchtpu
    from torchtpu.execution import one_op_fast

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(64, 64, generator=gen).to("tpu") for _ in range(2))
    index = torch.randint(0, 64, (64,), generator=gen).to("tpu")
    rng = np.random.default_rng(0)
    ja, jb = (jnp.asarray(rng.standard_normal((64, 64), dtype=np.float32)) for _ in range(2))
    jindex = jnp.asarray(rng.integers(0, 64, 64))
    times: dict = {}
    with torchtpu.precision("HIGHEST"):
        for name, fn in OPS.items():
            times[name] = {"off": [], "on": [], "jax": []}
            last: list = [None]

            def jax_call(jfn=JAX_OPS[name], last=last):
                last[0] = jfn(jnp, ja, jb, jindex)

            def jax_sync(last=last):
                jax.block_until_ready(last[0])

            for r in range(2 * repeats):
                for kind in (("on", "off", "jax") if r % 2 == 0 else ("jax", "off", "on")):
                    if kind == "jax":
                        times[name][kind].append(_per_op(jax_call, iters, 1, jax_sync))
                        continue
                    one_op_fast.enabled = kind == "on"
                    if kind == "off":
                        one_op_fast.clear()
                    times[name][kind].append(_per_op(lambda fn=fn: fn(a, b, index), iters, 1, torch.tpu.synchronize))
    print(f"{'op':14} {'off us':>8} {'on us':>8} {'jax us':>8} {'off/jax':>8} {'on/jax':>8}")
    for name, t in times.items():
        off, on, j = (statistics.median(t[k]) for k in ("off", "on", "jax"))
        print(f"{name:14} {off * 1e6:8.1f} {on * 1e6:8.1f} {j * 1e6:8.1f} {off / j:7.2f}x {on / j:7.2f}x")


def _run_child(label: str, env: dict, args: argparse.Namespace) -> dict:
    device = "cpu" if label == "cpu" else "tpu"
    cmd = [sys.executable, __file__, "--child", device, "--iters", str(args.iters), "--repeats", str(args.repeats),
           "--steps", str(args.steps)]
    full_env = {**os.environ, **env}
    proc = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=args.timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{label} child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--child", choices=["cpu", "tpu"], help=argparse.SUPPRESS)
    parser.add_argument("--prepared", action="store_true",
                        help="pjrt only: per op with the prepared one-op launch off and on (ABBA), and JAX's")
    args = parser.parse_args(argv)
    if args.prepared:
        prepared_abba(args.iters, args.repeats)
        return 0
    if args.child:
        print(json.dumps(child(args.child, args.iters, args.repeats, args.steps)))
        return 0
    runs = {
        "pjrt(cpu)": _run_child("pjrt", {"TORCHTPU_DRIVER": "pjrt", "TORCHTPU_PJRT_PLATFORM": "cpu"}, args),
        "sim": _run_child("sim", {"TORCHTPU_DRIVER": "sim"}, args),
        "cpu": _run_child("cpu", {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, args),
    }
    pj, sim, cpu = runs["pjrt(cpu)"], runs["sim"], runs["cpu"]
    print(f"per-op eager dispatch latency (DEFER_NEVER, median of {args.repeats} loops of {args.iters}; jax: JAX's "
          "own eager dispatch of the op on the same client, same process)")
    print(f"{'op':14} {'pjrt us':>9} {'jax us':>9} {'sim us':>9} {'cpu us':>9} {'pjrt/jax':>9} {'pjrt/sim':>9} "
          f"{'pjrt/cpu':>9}   {'launch (pjrt client.execute, sim driver.execute)':>48}")
    for name in OPS:
        p, j, s, c = pj["ops"][name], pj["jax"][name], sim["ops"][name], cpu["ops"][name]
        print(f"{name:14} {p * 1e6:9.1f} {j * 1e6:9.1f} {s * 1e6:9.1f} {c * 1e6:9.1f} {p / j:8.2f}x {p / s:8.2f}x "
              f"{p / c:8.1f}x   {pj['driver_share'][name] * 1e6:34.1f} us {sim['driver_share'][name] * 1e6:9.1f} us")
    pt, st, ct = pj["train"], sim["train"], cpu["train"]
    print(f"\ntiny GPT training step (AdamW, batch 8, HIGHEST; median of steps 3..{args.steps})")
    print(f"{'':14} {'pjrt ms':>9} {'sim ms':>9} {'cpu ms':>9} {'pjrt/sim':>9} {'pjrt/cpu':>9}")
    print(f"{'step':14} {pt['step'] * 1e3:9.1f} {st['step'] * 1e3:9.1f} {ct['step'] * 1e3:9.1f} "
          f"{pt['step'] / st['step']:8.2f}x {pt['step'] / ct['step']:8.1f}x")
    print(f"{'first step':14} {pt['first_step'] * 1e3:9.1f} {st['first_step'] * 1e3:9.1f} "
          f"{ct['first_step'] * 1e3:9.1f}   (pjrt: {pj['compiles']} XLA compiles, {pj['compile_seconds']:.1f} s)")
    rel = max(abs(a - b) / abs(b) for a, b in zip(pt["losses"], st["losses"]))
    rel_cpu = max(abs(a - b) / abs(b) for a, b in zip(pt["losses"], ct["losses"]))
    print(f"\nlosses: pjrt {', '.join(f'{x:.4f}' for x in pt['losses'])}")
    print(f"        sim  {', '.join(f'{x:.4f}' for x in st['losses'])}")
    print(f"max relative loss difference pjrt vs sim {rel:.1e}, pjrt vs cpu {rel_cpu:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
