"""DEFER_AND_FUSE vs DEFER_NEVER vs CPU PyTorch eager, same run: host time per step of GPT-2 and Llama (2 layers,
hidden 128, batch 2 x 64 tokens, vocab 1000; forward and an AdamW training step) and per op (8x8 add and mm,
2,000 per loop, unsynced and synced every op), plus the simulated launches, HBM bytes and device time of the demo
model's training step. Goal (issue #22): DEFER_AND_FUSE host time at or under DEFER_NEVER's on each model, and
within 2x of it per op; eager per op at or under 3x CPU.

Host time is this process's CPU time (`time.process_time`): the machine is shared, and other processes' load does
not inflate it (the sim runs on the calling thread; torch is pinned to 1 thread). Each sample runs the variants in
ABBA order (CPU, NEVER, FUSE, FUSE, NEVER, CPU) so that drift hits all alike; figures are medians.

    python benchmarks/defer_and_fuse.py [--repeats 7] [--skip-models] [--skip-ops] [--skip-sim] [--zoo [names]]

Measured (issue #22; loaded 2-core machine, medians of 5 ABBA samples; FUSE / NEVER host time), main 552930a ->
the speed branch (a cached op recorded from the C++ launch path, replays without gc.collect or slot lookups, the
sim's heap kept instead of faulted in on every launch):

    gpt2 forward 1.38x -> 1.06-1.11x    gpt2 train 1.72x -> 1.04-1.26x
    llama forward 1.43x -> 1.22-1.44x   llama train 1.93x -> 1.14-1.17x
    8x8 add per op unsynced 9.1x -> 3.9x, synced 10.4x -> 6.8-7.1x
    8x8 mm per op unsynced 4.1x -> 2.2x, synced 6.9x -> 3.9-4.8x
    demo model training step host 0.59x -> 0.96-0.98x of DEFER_NEVER's speed; transformer block 0.53x -> 0.96x

eager2 branch (same pieces A/B in one process, interleaved, thread CPU time; the loops above moved within this
machine's +-30% run-to-run noise): the 8x8 mm's fast kernel 4.3 -> 2.4 us (one numba crossing, no Python
reshapes), a replay's key 3.3 -> 0.3 us per recorded op (interned event-signature ids), a slot's holder 4.2 -> 1.8
us (a flat alias of a whole contiguous tensor).

fuse branch (recording hits looked up by the storage layout the C++ launch path passes, docs/deferred_regions.md;
main 5e9f1ad run, then the branch's, 35 min apart on the loaded machine, 5 ABBA samples; cpu / NEVER / FUSE us):

    add unsynced  2.36 / 6.71 / 27.04 (FUSE/NEVER 4.03x) -> 1.22 / 4.28 / 15.27 (3.57x)
    add synced    2.20 / 10.27 / 43.42 (4.23x)           -> 2.15 / 7.35 / 16.88 (2.30x)
    mm unsynced   2.65 / 13.20 / 33.51 (2.54x)           -> 1.61 / 8.78 / 21.38 (2.44x)
    mm synced     1.75 / 10.69 / 29.69 (2.78x)           -> 2.44 / 13.32 / 26.14 (1.96x)
    models, branch (3 samples), FUSE/NEVER: gpt2 fwd 0.96x, train 1.18x; llama fwd 1.39x, train 1.50x

smallmm branch (an mm of <= 2,048 multiply-adds written straight into the output buffer by the last step:
sim/mxu_kernel.py `mm_small_bf16_rounded_into`, no packing, no result array, no copy). 8x8 mm per op, one process,
old and new path interleaved (9 ABBA samples, two runs; the old path emulated by swapping the kernel back to
result + np.copyto, which leaves out the old copy path's own Python, so the gain is if anything understated):

    DEFER_NEVER unsynced  6.91 / 6.67 us (4.76x / 4.47x CPU) -> 5.79 / 5.57 us (3.99x / 3.73x CPU)
    DEFER_NEVER synced    8.20 / 7.96 us (5.58x / 5.70x CPU) -> 6.87 / 6.85 us (4.68x / 4.90x CPU)
    (third run, with the reshape fold below: 6.99 -> 5.69 unsynced, 8.62 -> 6.89 synced; 4.76x -> 3.87x CPU)
    DEFER_AND_FUSE: its one-op region ends in a reshape of the mm, now merged into the writing step; the sim
    driver's execute of that region 5.3 -> 4.1 us (same process, unfolded vs folded), the per-op loop above
    within its noise (14.4-17.6 us, 10-12x CPU: most of the cost is the deferred path, not the sim)
    this script, after (5 samples): mm NEVER/cpu 4.40x unsynced, 4.73x synced; FUSE/cpu 11.5x, 12.3x

perffuse2 branch (a kept one-op region flushed on the sim runs the op's own executable through the driver's
launcher on views made by address, execution/one_op_direct.py, instead of the storage-level region Program, whose
general execute and new-storage buffer misses cost ~3x the direct launch; buffer misses slice
drivers/sim/host_memory.py's address-space array). One process, old and new path interleaved ABBA (old: the
direct run off, ctypes buffer misses), process CPU time, medians, two runs (5 and 7 samples; load ~5-7 on 2 cores):

    add synced  FUSE 17.40 / 17.03 -> 11.11 / 11.16 us; FUSE/NEVER 4.28x / 3.96x -> 2.73x / 2.59x
    mm synced   FUSE 17.77 / 22.61 -> 12.79 / 20.31 us; FUSE/NEVER 3.13x / 4.13x -> 2.25x / 3.71x (noisy run)
    unsynced loops and models: unchanged within noise (no one-op regions there); FUSE/NEVER old -> new, 5 samples:
    gpt2 fwd 1.18x -> 1.20x and 0.76x -> 1.04x (a 9-sample rerun 1.07x -> 0.96x), gpt2 train 0.70x -> 0.63x and
    0.74x -> 0.76x, llama fwd 1.05x -> 1.06x and 1.06x -> 1.03x, llama train 0.85x -> 1.04x and 1.10x -> 1.18x

session 24 fuse branch: this script on main 867654c (3 samples): FUSE/NEVER gpt2 fwd 0.89x, train 0.91x, llama fwd
1.22x, train 1.03x; per op add 2.86x / 2.84x, mm 3.01x / 3.20x (unsynced / synced); NEVER/cpu add 2.73x / 3.02x,
mm 2.40x / 2.76x. A recording hit into a region with events in one call (execution/record_fast.py), old and new
interleaved in one process (9 samples, results held): FUSE add unsynced 8.06 -> 7.36 us (2.45x -> 2.23x NEVER),
mm 8.08 -> 7.30 us (2.43x -> 2.20x); models within noise (llama fwd 1.12x -> 1.16x); synced rows untouched.

Session 51 (branch main; GC): a pending region held four objects per recorded op that the cycle collector tracks
(its Event and that Event's __dict__, its Slot, and a torch.UntypedStorage per fresh output), so a long
DEFER_AND_FUSE loop promoted ~3 per op into the oldest generation and Python ran a full collection (~150 ms over
the ~330k objects `import torch, torchtpu` leaves) every ~27k ops. This script's samples turned the
collector off, so no row showed it. Now Event has __slots__, the C++ recording hit makes Event and Slot
untracked (they reference no object that references them), and a Slot keeps its storage through the shim's
StorageKeep (a C++ reference; csrc/record_native.cpp), so a recorded op leaves no tracked object. The samples
keep the collector on and a `steady` row runs 50 loops back to back. 100,000 8x8 ops in one loop, collector on,
per-generation collection time from gc.callbacks, old and new in separate processes, order old/new/new/old
(load 6-8 on 2 cores): FUSE add 15.2 / 12.2 -> 8.8 / 7.8 us per op, mm 14.5 / 13.8 -> 8.0 / 6.9 us; full
collections 3 -> 0 per 100k ops (4.0-4.2 -> 0 us per op), young ones 0.6-0.9 -> 0.1 us per op. This script,
old then new: steady FUSE/NEVER add 3.31x -> 2.52x, mm 3.89x -> 1.91x (DEFER_NEVER allocates nothing that lives
and is unchanged).

Session 52 (branch fuse22; the C++ recording hit's own cost). perf and py-spy --native of an unsynced 8x8 add loop
under FUSE: the recording (csrc/record_native.cpp) was ~42% of an op, the flush ~10%; its largest pieces were
pybind11's StorageKeep (an instance-map insert per fresh output, its erase at the flush: ~10% of the op),
PyObject_SetAttr on each new Event and Slot (type lookup and descriptor call per field: ~5%), the region lock's
method lookups, and the user line (the code object hashed, constants and all, twice per op). Now StorageKeep is a
plain CPython type (csrc/record_native_keep.cpp), Event and Slot fields are written and read at their __slots__
offsets (also by the flush's walks, csrc/region_flush.cpp), the lock's bound methods are made once, an op's
origin (op, user line) is memoized by (code, instruction, op) identity, and the replay key's slot layout is one
flat tuple. Base (8d707a8) and this branch in alternating processes (new, base, base, new; --skip-models
--skip-sim --repeats 5; load 11-12 on 2 cores), FUSE/NEVER:

    add unsynced  2.01x / 1.99x -> 1.31x / 1.42x    add steady  2.07x / 1.81x -> 1.69x / 1.79x
    mm unsynced   2.31x / 2.36x -> 1.70x / 1.40x    mm steady   2.78x / 2.03x -> 1.62x / 1.78x
    synced rows   0.98-1.06x -> 1.05-1.36x (the one-op streak's launches, unchanged code: noise)
    models (--skip-ops --repeats 3, base and branch run at once, twice): gpt2 fwd 0.71 / 0.83 -> 0.76 / 0.78,
    train 0.84 / 0.75 -> 0.90 / 0.77; llama fwd 0.97 / 0.97 -> 0.92 / 0.90, train 0.98 / 0.86 -> 0.94 / 0.89
    (all under 1.0x in both; within noise: a model step records few ops per microsecond of its flush)

In one process, old and new runs apart (/tmp script, 5 ABBA samples of NEVER and FUSE each, base/new/new/base):
add unsynced 2.14x / 2.15x -> 1.51x / 1.46x, mm 2.70x / 2.06x -> 1.51x / 1.45x. What is left of a recorded 8x8
op (py-spy, new): record_native ~41% (its C-API calls: ~20 module-global and attribute lookups, the lock's
acquire through RLock's argument parsing, the Event, Slot, StorageKeep and tuples per op), the storage layout
bytes and address tuple ~9%, at::empty ~8% (as in NEVER), the flush ~4% plus freeing the region's storages.
The shim is built without NDEBUG, so every pybind11 inc_ref/dec_ref checks the GIL (PyGILState_Check and its TLS
read: ~5% of a FUSE op, less of a NEVER one): -DPYBIND11_NO_ASSERT_GIL_HELD_INCREF_DECREF in torchtpu/_native.py
and setup.py would drop it (not done here: a shared build file, and a full rebuild).

Quiet machine, main after session 52's merges (load ~0.5, this script, 5 samples; cpu / NEVER / FUSE us, FUSE/NEVER):
add unsynced 2.41 / 6.04 / 8.38 (1.39x), synced 2.50 / 6.84 / 7.64 (1.12x), steady 2.01 / 6.26 / 8.84 (1.41x);
mm unsynced 2.61 / 5.44 / 7.99 (1.47x), synced 1.97 / 5.22 / 6.29 (1.20x), steady 3.04 / 6.47 / 8.41 (1.30x).
Models (3 samples), FUSE/NEVER: gpt2 fwd 0.79x, train 0.80x; llama fwd 0.91x, train 1.00x.

Session 53: the shim is now a release build (-DNDEBUG, torchtpu/_native.py SHIM_CFLAGS, setup.py), which drops
pybind11's GIL check. 8x8 ops, 2,000 per loop, thread CPU time, median of 7, builds before/after alternated across
processes (load ~9): DEFER_AND_FUSE add 5.3-5.5 -> 4.75-5.0 us, mm 5.45-5.65 -> 4.8-5.2 us (~8%; two of the ten
processes read ~10 us on either build, left out); DEFER_NEVER add 4.0-4.2 -> 4.3, mm 3.9 -> 3.75-3.9 us (noise)."""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

MODES = ("DEFER_NEVER", "DEFER_AND_FUSE")


def _sample(fn, batch: int) -> float:
    """Process CPU seconds per call over `batch` back-to-back calls (one untimed call first). The cycle collector
    stays on, as in a user's loop: a mode that holds Python objects per recorded op pays for their scans."""
    gc.collect()
    fn()
    start = time.process_time()
    for _ in range(batch):
        fn()
    return (time.process_time() - start) / batch


def _abba(variants: dict[str, object], repeats: int, batch: int) -> dict[str, float]:
    """Median per-call process time of each variant (name -> (mode or None, fn)), sampled in ABBA order."""
    import torchtpu

    names = list(variants)
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            mode, fn = variants[name]
            torch.set_num_threads(1)
            if mode is None:
                out[name].append(_sample(fn, batch))
            else:
                with torchtpu.eager_mode(mode):
                    out[name].append(_sample(fn, batch))
                    torch.tpu.synchronize()
    return {n: statistics.median(v) for n, v in out.items()}


def _hf_model(name: str):
    import transformers

    common = dict(vocab_size=1000, bos_token_id=1, eos_token_id=2)
    if name == "gpt2":
        cfg = transformers.GPT2Config(n_positions=128, n_embd=128, n_layer=2, n_head=4, **common)
        return transformers.GPT2LMHeadModel(cfg)
    cfg = transformers.LlamaConfig(hidden_size=128, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, max_position_embeddings=128, pad_token_id=0, **common)
    return transformers.LlamaForCausalLM(cfg)


def _model_steps(name: str, device: str):
    torch.manual_seed(0)
    model = _hf_model(name).to(device)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 1000, (2, 64), generator=gen).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def forward():
        with torch.no_grad():
            model(input_ids=ids).logits.sum().cpu()

    def train():
        opt.zero_grad()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        loss.detach().cpu()

    return forward, train


_HEADER = (f"{'step':6} {'cpu ms':>8} {'NEVER ms':>9} {'FUSE ms':>9} {'NEVER/cpu':>10} {'FUSE/cpu':>9} "
           f"{'FUSE/NEVER':>11}")


def _model_rows(name: str, width: int, steps: tuple, repeats: int, warmup: int) -> list[float]:
    """Prints a model's rows (steps: (step, cpu fn, tpu fn) each; every mode warmed up first); FUSE / NEVER per step."""
    import torchtpu

    ratios = []
    for step, cpu_fn, tpu_fn in steps:
        for mode in MODES:
            with torchtpu.eager_mode(mode):
                for _ in range(warmup):
                    tpu_fn()
        cpu_fn()
        t = _abba({"cpu": (None, cpu_fn), "never": ("DEFER_NEVER", tpu_fn), "fuse": ("DEFER_AND_FUSE", tpu_fn)},
                  repeats, 3)
        ratios.append(t["fuse"] / t["never"])
        print(f"{name:{width}} {step:6} {t['cpu'] * 1e3:8.2f} {t['never'] * 1e3:9.2f} {t['fuse'] * 1e3:9.2f} "
              f"{t['never'] / t['cpu']:9.2f}x {t['fuse'] / t['cpu']:8.2f}x {t['fuse'] / t['never']:10.2f}x", flush=True)
    return ratios


def models(repeats: int) -> None:
    print("host time per step (process CPU time, median of ABBA samples); ratios to CPU eager and FUSE / NEVER")
    print(f"{'model':8} {_HEADER}")
    for name in ("gpt2", "llama"):
        cpu_f, cpu_t = _model_steps(name, "cpu")
        tpu_f, tpu_t = _model_steps(name, "tpu")
        _model_rows(name, 8, (("fwd", cpu_f, tpu_f), ("train", cpu_t, tpu_t)), repeats, 3)


def zoo(repeats: int, names: list[str]) -> None:
    """FUSE / NEVER host time on the zoo of `benchmarks/models.py` (its tiny configs; all models when `names` is
    empty), each model's steps in ABBA order with CPU eager; a model that fails prints its error."""
    import copy

    from models import _build, _steps  # benchmarks/models.py: the zoo's models, inputs and steps

    from torchtpu import validate_models as vm

    print("\nzoo (benchmarks/models.py, tiny): host time per step (process CPU time, median of ABBA samples)")
    print(f"{'model':16} {_HEADER}")
    ratios: dict[str, list[float]] = {"fwd": [], "train": []}
    for name in names or list(vm.MODELS):
        spec = vm.MODELS[name]
        try:
            model, inputs = _build(spec, "tiny")
            cpu_f, cpu_t = _steps(spec, copy.deepcopy(model), "cpu", inputs=inputs)
            tpu_f, tpu_t = _steps(spec, model, "tpu", inputs=inputs)
            fwd, train = _model_rows(name, 16, (("fwd", cpu_f, tpu_f), ("train", cpu_t, tpu_t)), repeats, 2)
            ratios["fwd"].append(fwd)
            ratios["train"].append(train)
        except Exception as exc:  # noqa: BLE001 - one model's failure is reported, the others still run
            print(f"{name:16} error: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
    for step, values in ratios.items():
        if values:
            over = sum(v > 1.0 for v in values)
            print(f"FUSE/NEVER {step}: median {statistics.median(values):.2f}x over {len(values)} models, "
                  f"max {max(values):.2f}x, {over} above 1.0x")


STEADY_LOOPS = 50


def ops(repeats: int, n: int = 2000) -> None:
    print(f"\nper op, 8x8 float32, {n} per loop (process CPU time; synced: torch.tpu.synchronize() after each op; "
          f"steady: {STEADY_LOOPS} unsynced loops back to back, long enough for the collector's full collections)")
    print(f"{'op':4} {'loop':9} {'cpu us':>8} {'NEVER us':>9} {'FUSE us':>9} {'NEVER/cpu':>10} {'FUSE/cpu':>9} "
          f"{'FUSE/NEVER':>11}")
    gen = torch.Generator().manual_seed(0)
    a_cpu, b_cpu = torch.randn(8, 8, generator=gen), torch.randn(8, 8, generator=gen)
    a, b = a_cpu.to("tpu"), b_cpu.to("tpu")
    for op_name, op in (("add", torch.add), ("mm", torch.mm)):
        for synced, loops in ((False, 1), (True, 1), (False, STEADY_LOOPS)):
            # each result is held until the next call, as a program holds what it computes (a result dropped
            # before the flush is never computed under DEFER_AND_FUSE: that would time an empty region)
            def cpu_loop(op=op):
                for _ in range(n):
                    y = op(a_cpu, b_cpu)  # noqa: F841

            def tpu_loop(op=op, synced=synced):
                if synced:
                    sync = torch.tpu.synchronize
                    for _ in range(n):
                        y = op(a, b)  # noqa: F841
                        sync()
                else:
                    for _ in range(n):
                        y = op(a, b)  # noqa: F841
                    torch.tpu.synchronize()

            def loops_of(loop, loops=loops):
                def run():
                    for _ in range(loops):
                        loop()
                return run

            t = _abba({"cpu": (None, loops_of(cpu_loop)), "never": ("DEFER_NEVER", loops_of(tpu_loop)),
                       "fuse": ("DEFER_AND_FUSE", loops_of(tpu_loop))}, repeats if loops == 1 else 3, 1)
            c, e, f = (t[k] / (n * loops) * 1e6 for k in ("cpu", "never", "fuse"))
            kind = "steady" if loops > 1 else "synced" if synced else "unsynced"
            print(f"{op_name:4} {kind:9} {c:8.2f} {e:9.2f} {f:9.2f} {e / c:9.2f}x "
                  f"{f / c:8.2f}x {f / e:10.2f}x")


def _measure(mode: str, step, warmup: int = 3, steps: int = 10) -> dict[str, float]:
    import torchtpu

    with torchtpu.eager_mode(mode):
        for _ in range(warmup):
            step()
        torch.tpu.synchronize()
        torchtpu.reset_stats()
        walls = []
        for _ in range(steps):
            start = time.process_time()
            step()
            walls.append(time.process_time() - start)
        s = torchtpu.stats()
    return {"launches": s["launches"] / steps, "hbm_bytes": s["hbm_bytes"] / steps,
            "device_seconds": s["device_seconds"] / steps, "simulated_step": s["wall_seconds"] / steps,
            "host": statistics.median(walls)}


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


def simulated() -> None:
    print(f"\n{'workload':26} {'metric':15} {'DEFER_NEVER':>12} {'DEFER_AND_FUSE':>15} {'NEVER/FUSE':>10}")
    for name, make in (("demo model training step", _training_step), ("transformer block forward", _block_forward)):
        eager = _measure("DEFER_NEVER", make())
        fused = _measure("DEFER_AND_FUSE", make())
        for metric in ("launches", "hbm_bytes", "device_seconds", "simulated_step", "host"):
            a, b = eager[metric], fused[metric]
            print(f"{name:26} {metric:15} {a:12.4g} {b:15.4g} {a / b:9.2f}x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--skip-models", action="store_true")
    parser.add_argument("--skip-ops", action="store_true")
    parser.add_argument("--skip-sim", action="store_true")
    parser.add_argument("--zoo", nargs="?", const="", default=None,
                        help="also the zoo of benchmarks/models.py (comma-separated names; none: every model)")
    args = parser.parse_args(argv)
    import torchtpu  # noqa: F401

    if args.zoo is not None:
        zoo(args.repeats, [n for n in args.zoo.split(",") if n])
    if not args.skip_models:
        models(args.repeats)
    if not args.skip_ops:
        ops(args.repeats)
    if not args.skip_sim:
        simulated()


if __name__ == "__main__":
    main()
