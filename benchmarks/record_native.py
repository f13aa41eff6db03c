"""DEFER_AND_FUSE's recording hit in C++ (csrc/record_native.cpp) against the same hit in Python
(execution/record_fast.py), same run: host time per 8x8 op (add and mm, 2,000 per loop, unsynced) and per step of
the zoo's tiny models (`benchmarks/models.py`), with DEFER_NEVER as the reference (issue #22's goal: FUSE at or
under NEVER per model, within 2x per op).

Host time is this process's CPU time; each sample runs the variants in ABBA order (NEVER, FUSE python, FUSE
native, then reversed); figures are medians. The collector is off while a sample runs (as defer_and_fuse.py).

    python benchmarks/record_native.py [--repeats 7] [--zoo t5,clip,bert] [--skip-ops]
"""

from __future__ import annotations

import argparse
import copy
import statistics

import torch
from defer_and_fuse import _sample  # (benchmarks/: the same per-call sample)

VARIANTS = ("never", "python", "native")


def _abba(fn, repeats: int, batch: int) -> dict[str, float]:
    import torchtpu
    from torchtpu.execution import record_fast

    out: dict[str, list[float]] = {v: [] for v in VARIANTS}
    try:
        for r in range(repeats):
            for variant in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
                torch.set_num_threads(1)
                record_fast.native_recording(variant != "python")
                with torchtpu.eager_mode("DEFER_NEVER" if variant == "never" else "DEFER_AND_FUSE"):
                    out[variant].append(_sample(fn, batch))
                    torch.tpu.synchronize()
    finally:
        record_fast.native_recording(True)
    return {v: statistics.median(s) for v, s in out.items()}


def _row(name: str, t: dict[str, float], scale: float, unit: str) -> None:
    never, py, native = (t[v] * scale for v in VARIANTS)
    print(f"{name:18} {never:9.2f} {py:10.2f} {native:10.2f} {unit:3} {py / never:9.2f}x {native / never:9.2f}x "
          f"{native / py:9.2f}x", flush=True)


def _header(first: str) -> None:
    print(f"{first:18} {'NEVER':>9} {'FUSE py':>10} {'FUSE C++':>10} {'':3} {'py/NEVER':>10} {'C++/NEVER':>10} "
          f"{'C++/py':>10}")


def ops(repeats: int, n: int = 2000) -> None:
    print(f"per op, 8x8 float32, {n} per loop, unsynced (results held until the next call)")
    _header("op")
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(8, 8, generator=gen).to("tpu"), torch.randn(8, 8, generator=gen).to("tpu")
    for name, op in (("add", torch.add), ("mm", torch.mm)):
        def loop(op=op):
            for _ in range(n):
                y = op(a, b)  # noqa: F841
            torch.tpu.synchronize()

        for mode in ("DEFER_NEVER", "DEFER_AND_FUSE"):
            import torchtpu

            with torchtpu.eager_mode(mode):
                loop()
        _row(name, _abba(loop, repeats, 1), 1e6 / n, "us")


def zoo(repeats: int, names: list[str]) -> None:
    from models import _build, _steps  # benchmarks/models.py: the zoo's models, inputs and steps

    import torchtpu
    from torchtpu import validate_models as vm

    print("\nzoo (benchmarks/models.py, tiny): host time per step")
    _header("model step")
    ratios: dict[str, list[float]] = {"python": [], "native": []}
    for name in names:
        spec = vm.MODELS[name]
        model, inputs = _build(spec, "tiny")
        fwd, train = _steps(spec, copy.deepcopy(model), "tpu", inputs=inputs)
        for step, fn in (("fwd", fwd), ("train", train)):
            for mode in ("DEFER_NEVER", "DEFER_AND_FUSE"):
                with torchtpu.eager_mode(mode):
                    for _ in range(3):
                        fn()
            t = _abba(fn, repeats, 3)
            _row(f"{name} {step}", t, 1e3, "ms")
            for v in ratios:
                ratios[v].append(t[v] / t["never"])
    for v, values in ratios.items():
        print(f"FUSE {v}/NEVER: median {statistics.median(values):.2f}x over {len(values)} steps, "
              f"max {max(values):.2f}x, {sum(x > 1.0 for x in values)} above 1.0x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--zoo", default="t5,clip,bert,gpt2,llama", help="comma-separated zoo names ('' for none)")
    parser.add_argument("--skip-ops", action="store_true")
    args = parser.parse_args(argv)
    import torchtpu  # noqa: F401

    if not args.skip_ops:
        ops(args.repeats)
    names = [n for n in args.zoo.split(",") if n]
    if names:
        zoo(args.repeats, names)


if __name__ == "__main__":
    main()
