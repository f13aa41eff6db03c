"""Quantized matmul-heavy model step on the simulated v5e / v6e / v7x vs bf16, and host wall time vs torchao on CPU.

The model is a stack of MLP blocks (Linear d -> 4d, ReLU, Linear 4d -> d), forward only (a serving step), run as:
- bf16: the baseline;
- int8 dynamic: torchao's Int8DynamicActivationInt8WeightConfig (int8 x int8 -> int32 `_int_mm` on the MXU);
- int8 weight-only: torchao's Int8WeightOnlyConfig (int8 weights from HBM, bf16 MXU);
- fp8: each Linear as `torch._scaled_mm` on fp8 activations and weights with per-tensor scales (what torchao's
  float8 dynamic config runs on GPUs; torchao 0.18 refuses that config without CUDA sm89, so the step calls the
  op itself), in the chip's fp8 MXU format (float8_e4m3fn on v7x, float8_e5m2 on v6e).
On v7x (no int8 MXU) `_int_mm` is refused: eager torchao's own `safe_int_mm` catches the refusal and multiplies in
float32 instead (its fallback for devices without int8 matmuls; the row names the matmul ops that ran), while its
compiled path has no such retry, so the compiled int8 dynamic step is refused there.
For each chip (one child process per chip: TORCHTPU_CHIP) it prints the simulated device seconds of one step and
the ratio to bf16 on that chip, or the refusal where the chip's MXU lacks the type; and, in the same run, the
median host wall time of the step on "tpu" vs the same torchao-quantized model on CPU (for fp8: the same
`_scaled_mm` step on CPU). torch.set_num_threads(1).

Usage: python benchmarks/quantized.py [--tokens 512] [--dim 1024] [--layers 2] [--repeats 5] [--chips v5e,v6e,v7x]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

FP8_FORMAT = {"v7x": "float8_e4m3fn", "v6e": "float8_e5m2", "v5p": "float8_e5m2", "v5e": "float8_e5m2",
              "v4": "float8_e5m2"}  # the format the chip's MXU has (sim/data/chips.json mxu_fp8), else a refusal


def _model(dim: int, layers: int):
    import torch

    torch.manual_seed(0)
    blocks = []
    for _ in range(layers):
        blocks += [torch.nn.Linear(dim, 4 * dim), torch.nn.ReLU(), torch.nn.Linear(4 * dim, dim)]
    return torch.nn.Sequential(*blocks).to(torch.bfloat16)


class _Fp8Linear:
    """y = _scaled_mm(fp8(x / sx), fp8(w / sw).T, sx, sw) + b with per-tensor scales (amax / fp8 max)."""

    def __init__(self, linear, fp8):
        import torch

        self.fp8, self.fmax = fp8, torch.finfo(fp8).max
        w = linear.weight.detach().float()
        self.sw = (w.abs().amax() / self.fmax).reshape(())
        self.w_t = (w / self.sw).to(fp8).t()
        self.bias = linear.bias.detach()

    def __call__(self, x):
        import torch

        sx = (x.float().abs().amax() / self.fmax).reshape(())
        xq = (x.float() / sx).to(self.fp8)
        return torch._scaled_mm(xq, self.w_t, sx, self.sw, bias=self.bias, out_dtype=torch.bfloat16)


def _fp8_step(model, fp8):
    import torch

    layers = [_Fp8Linear(m, fp8) if isinstance(m, torch.nn.Linear) else m for m in model]

    def step(x):
        for layer in layers:
            x = layer(x)
        return x

    return step


def _variants(model, fp8_name: str):
    import torch
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, Int8WeightOnlyConfig, quantize_

    out = {"bf16": model}
    for name, cfg in (("int8 dynamic", Int8DynamicActivationInt8WeightConfig()),
                      ("int8 weight-only", Int8WeightOnlyConfig())):
        m = copy.deepcopy(model)
        quantize_(m, cfg)
        out[name] = m
    out["fp8"] = _fp8_step(model, getattr(torch, fp8_name))  # CPU: the same torch._scaled_mm step (torchao's
    return out  # float8 dynamic config refuses CPU)


def _median_wall(fn, x, repeats: int, sync) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(x)
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def child(chip: str, tokens: int, dim: int, layers: int, repeats: int) -> dict:
    """One chip: simulated seconds per step per variant (or the refusal), host wall time on tpu and on CPU."""
    import torch

    import torchtpu

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    x = torch.randn(tokens, dim, dtype=torch.bfloat16, generator=torch.Generator().manual_seed(1))
    base = _model(dim, layers)
    cpu = _variants(base, FP8_FORMAT[chip])
    tpu = _variants(copy.deepcopy(base).to("tpu"), FP8_FORMAT[chip])
    xt = x.to("tpu")
    res: dict = {"chip": chip, "fp8_format": FP8_FORMAT[chip], "variants": {}}
    with torch.no_grad():
        for name, fn in tpu.items():
            row: dict = {}
            try:
                fn(xt).cpu()  # warm-up: traces and compiles
            except NotImplementedError as exc:
                row["refused"] = str(exc).split(";")[0]
                res["variants"][name] = row
                continue
            torch.tpu.synchronize()
            torchtpu.reset_stats()
            fn(xt).cpu()
            stats = torchtpu.stats()
            row["sim_eager"] = stats["device_seconds"]
            row["matmuls"] = sorted(k.split(".")[1] for k in stats["by_op"] if "mm" in k)
            row["wall_eager"] = _median_wall(fn, xt, repeats, lambda: torch.tpu.synchronize())
            torch._dynamo.reset()
            compiled = torch.compile(fn, backend="tpu")
            try:
                compiled(xt).cpu()
                torchtpu.reset_stats()
                compiled(xt).cpu()
                row["sim_compiled"] = torchtpu.stats()["device_seconds"]
                row["wall_compiled"] = _median_wall(compiled, xt, repeats, lambda: torch.tpu.synchronize())
            except NotImplementedError as exc:  # v7x: torchao's compiled path has no float32 retry around _int_mm
                row["compiled_refused"] = str(exc).split(":")[0] + ": " + str(exc).split(": ")[1][:60]
                row["sim_compiled"] = row["wall_compiled"] = float("nan")
            row["fallbacks"] = torchtpu.fallback_counts()
            if name in cpu:
                cpu[name](x)
                row["wall_cpu"] = _median_wall(cpu[name], x, repeats, lambda: None)
            res["variants"][name] = row
    return res


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--chips", default="v5e,v6e,v7x")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.tokens, args.dim, args.layers, args.repeats)))
        return {}
    print(f"MLP stack: {args.layers} x (Linear {args.dim}->{4 * args.dim}, ReLU, Linear {4 * args.dim}->{args.dim}), "
          f"{args.tokens} tokens, bf16 activations; forward step; medians of {args.repeats}; 1 thread")
    print("sim us: simulated device time of one step, eager (DEFER_NEVER: every op its own launch) and compiled "
          "(torch.compile, one Program); wall: host ms, tpu eager / compiled vs torchao on CPU (eager)")
    print(f"{'chip':<5} {'variant':<17} {'sim eager':>9} {'vs bf16':>8} {'sim comp':>9} {'vs bf16':>8} "
          f"{'wall eager':>10} {'wall comp':>10} {'wall cpu':>9} {'eager/cpu':>9} {'comp/cpu':>8}  matmuls")
    results = {}
    for chip in args.chips.split(","):
        env = dict(os.environ, TORCHTPU_CHIP=chip)
        cmd = [sys.executable, __file__, "--child", chip, "--tokens", str(args.tokens), "--dim", str(args.dim),
               "--layers", str(args.layers), "--repeats", str(args.repeats)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
        if out.returncode != 0:
            raise RuntimeError(f"{chip}: child failed:\n{out.stderr[-3000:]}")
        res = json.loads(out.stdout.strip().splitlines()[-1])
        results[chip] = res
        base = res["variants"]["bf16"]
        for name, row in res["variants"].items():
            label = f"{name} ({res['fp8_format']})" if name == "fp8" else name
            if "refused" in row:
                print(f"{chip:<5} {label:<17} refused: {row['refused'][:110]}")
                continue
            if row["fallbacks"]:
                raise RuntimeError(f"{chip} {name}: CPU fallbacks {row['fallbacks']}")
            cpu = row.get("wall_cpu") or float("nan")
            print(f"{chip:<5} {label:<17} {row['sim_eager'] * 1e6:>9.1f} {row['sim_eager'] / base['sim_eager']:>8.3f} "
                  f"{row['sim_compiled'] * 1e6:>9.1f} {row['sim_compiled'] / base['sim_compiled']:>8.3f} "
                  f"{row['wall_eager'] * 1e3:>10.1f} {row['wall_compiled'] * 1e3:>10.1f} {cpu * 1e3:>9.1f} "
                  f"{row['wall_eager'] / cpu:>9.2f} {row['wall_compiled'] / cpu:>8.2f}  {','.join(row['matmuls'])}"
                  + (f"; compiled refused: {row['compiled_refused']}" if "compiled_refused" in row else ""))
    return results


if __name__ == "__main__":
    main()
