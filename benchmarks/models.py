"""Hugging Face model zoo: forward and training-step wall time on "tpu" (sim driver) vs CPU PyTorch eager, same run.

For each architecture of `torchtpu.validate_models.MODELS` (small configs: 2 layers, hidden 32, 8 tokens), it
times a no-grad forward and a training step (forward, loss.backward(), AdamW step, loss to host) on CPU and on
"tpu", after warm-up (the tpu side compiles its programs then), alternating CPU and tpu runs so that other
processes' load hits both alike, and prints medians and the ratio tpu / CPU (the
goal: <= 3x). It also prints what the simulator charges for the same step on the chip (TORCHTPU_CHIP, default
v5e): the simulated step time (host launch timeline and device), device-busy time and launches per step.

    python benchmarks/models.py [--models bert,llama] [--repeats 5] [--threads 1] [--markdown] [--compile]
                                [--size tiny|medium]

`--size medium` rebuilds each config at hidden 256 (feed-forward 1024, 4 heads, positions 512) over 2 x 256
tokens, where the sim's kernels rather than launch overhead are the cost (issue #22); image and audio inputs
keep their size, their hidden width grows.

Figures (issue #5; loaded 2-core machine, so process CPU time per step, median of 9, tpu / CPU eager):

    model   forward before -> after    training step before -> after
    bert    7.5x -> 5.6x               10.2x -> 7.2x
    llama   8.6x -> 7.6x               10.7x -> 9.3x
    gpt2    7.5x -> 6.2x                9.0x -> 6.9x

before = e6151f9, after = the perf branch (cheaper eager cache key, sim launch plan with constant folding). The
largest item then was the exact MXU kernel's parallel region on tiny matmuls (100-500 us each, 40-45% of a
step); small products now run in a serial twin of the kernel (`torchtpu.sim.mxu_kernel._dot_exact3_serial`).
The simulated figures (sim fwd/train us, launches) are unchanged by either.

perf2 branch (cheaper dot_general/broadcast/timeline Python; eager ops with a float scalar argument launch a
program whose float constants are 0-d inputs, so the optimizer's per-step bias-correction scalars re-trace but
no longer recompile: a Linear+Adam step's compiles stay flat instead of +4 per step). Wall-time medians over
bert/llama/gpt2, main d842c7b -> perf2, back-to-back on a heavily loaded 2-core machine (CPU baseline itself
varied 2-7 ms, so +-50% per model): forward 4.5x -> 4.2x, training step 5.7x -> 4.7x CPU. Still above the 3x
goal; the optimizer still re-traces (Python lowering, ~50-100 us) the ops whose scalar changes each step.

All of it merged (main, 25 models, load average ~2): median forward 4.6x, training step 6.7x CPU eager
(first measurement: 7.0x / 8.9x).

Session 3 (quiet machine, 3d8be29; per-model tables in docs/models.md): eager forward 4.0x, training step 4.8x
(foreach optimizer ops as one launch, no re-trace for new float values, direct numpy steps in the sim);
`--compile`: forward 1.6x, training step 3.1x over the 23 models that compile (the MoE models use
torch._grouped_mm under Dynamo, which takes only bf16).

Session 4: those figures were flattered. Each sample was one call right after a full gc.collect(), which left
the caches cold and slowed CPU eager far more than the tpu side (bert forward: CPU 2.9 ms cold vs 1.0 ms in
steady state). A sample is now a batch of back-to-back calls; measured that way at the session's start:
eager forward 6.0x, training step 5.5x. With the C++ launch cache for repeated eager ops, the fused
DEFAULT-precision dot, straight-line plans and the compiled optimizer step (`--compile` now also compiles
`optimizer.step`): eager forward 4.3x, training step 3.7x (25 models); compiled see docs/models.md.

Session 5 (5367389): eager forward 2.96x, training step 2.95x (the C++ launch cache serves generic floats,
out= variants, copies, factories and index lists; cheaper sim launches; BLAS on torch's thread count);
compiled, all 25 models: forward 1.2x, training step 2.3x (MoE via a tpu `_grouped_mm`; wav2vec2's 89 Dynamo
graphs were the sim's plan functions being traced: 4 now).
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

_BATCH = 5  # back-to-back calls per timed sample


def _interleaved(cpu_fn, tpu_fn, repeats: int, threads: int, batch: int = _BATCH) -> tuple[float, float]:
    """Median wall time per call of each, in steady state: a sample is `batch` back-to-back calls (the mean of
    them), and samples alternate between the sides so that load from other processes hits both alike. Garbage
    is collected before each sample and the collector is off during it (as in timeit), so that one side's
    garbage is not charged to the other. A sample is a batch, not one call: right after a full collection the
    interpreter's and CPU's caches are cold, which measured CPU eager (bert forward) at 2.9 ms instead of its
    steady 1.0 ms and so flattered every ratio about 2x. torch's thread count is pinned again before each
    sample: the sim's numba kernels share libgomp with torch and reset it (see docs/models.md)."""
    cpu, tpu = [], []
    for _ in range(repeats):
        for fn, out in ((cpu_fn, cpu), (tpu_fn, tpu)):
            torch.set_num_threads(threads)
            gc.collect()
            fn()  # the first call after a collection runs cold: not timed
            gc.disable()
            try:
                start = time.perf_counter()
                for _ in range(batch):
                    fn()
                out.append((time.perf_counter() - start) / batch)
            finally:
                gc.enable()
    return statistics.median(cpu), statistics.median(tpu)


# --size medium: config fields set wherever a config (or its text/vision sub-config) has them
MEDIUM = {"hidden": 256, "ffn": 1024, "positions": 512, "seq": 256}
_HIDDEN = ("hidden_size", "n_embd", "d_model", "dim", "projection_dim", "word_embed_proj_dim")
_FFN = ("intermediate_size", "ffn_dim", "d_ff", "hidden_dim", "encoder_ffn_dim", "decoder_ffn_dim")
_POSITIONS = ("max_position_embeddings", "n_positions", "max_source_positions", "max_target_positions")


def _resize(config, sizes: dict) -> None:
    for keys, value in ((_HIDDEN, sizes["hidden"]), (_FFN, sizes["ffn"]), (_POSITIONS, sizes["positions"])):
        for key in keys:
            if isinstance(getattr(config, key, None), int):
                setattr(config, key, value)
    for sub in ("text_config", "vision_config"):
        if getattr(config, sub, None) is not None:
            _resize(getattr(config, sub), sizes)


def _build(spec, size: str):
    """The spec's model and inputs at `size` ("tiny": the zoo's own configs)."""
    import transformers

    from torchtpu import validate_models as vm

    if size == "tiny":
        return spec.build(), spec.make_inputs()
    config = spec.config()
    _resize(config, MEDIUM)
    torch.manual_seed(0)
    model = getattr(transformers, spec.arch)(vm._no_dropout(config)).eval()
    from torchtpu import model_zoo

    seq, model_zoo.SEQ = model_zoo.SEQ, MEDIUM["seq"]  # the zoo's input makers read it when called
    try:
        inputs = spec.make_inputs()
    finally:
        model_zoo.SEQ = seq
    return model, inputs


def _steps(spec, model, device: str, compiled: bool = False, inputs: dict | None = None):
    from torchtpu import validate_models as vm

    inputs = vm.to_device(inputs if inputs is not None else spec.make_inputs(), device)  # labels too
    model = model.to(device)
    run = torch.compile(model, backend="tpu") if compiled else model

    def forward():
        with torch.no_grad():
            vm._output(run(**inputs), spec.output).cpu()

    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    step = torch.compile(opt.step, backend="tpu") if compiled else opt.step  # PyTorch's compiled-optimizer recipe

    def train():
        model.train()
        opt.zero_grad()
        loss = run(**inputs).loss
        loss.backward()
        step()
        loss.detach().cpu()

    return forward, train


def measure(name: str, warmup: int, repeats: int, eager_mode: str | None, threads: int = 1,
            compiled: bool = False, size: str = "tiny") -> dict:
    import contextlib

    import torchtpu
    from torchtpu import validate_models as vm

    spec = vm.MODELS[name]
    if compiled:  # transformers wraps every model's forward in one decorator: Dynamo's per-code cache (8
        torch._dynamo.reset()  # entries) would fill across models and later models would run uncompiled
    model, inputs = _build(spec, size)
    cpu_fwd, cpu_train = _steps(spec, copy.deepcopy(model), "cpu", inputs=inputs)
    tpu_fwd, tpu_train = _steps(spec, model, "tpu", compiled, inputs=inputs)
    row = {"model": name}
    def mode():
        return torchtpu.eager_mode(eager_mode) if eager_mode else contextlib.nullcontext()

    for kind, cpu_fn, tpu_fn in (("fwd", cpu_fwd, tpu_fwd), ("train", cpu_train, tpu_train)):
        torchtpu.reset_fallback_counts()
        with mode():
            for _ in range(warmup):
                torch.set_num_threads(threads)
                cpu_fn()
                tpu_fn()
            torch.tpu.synchronize()
            torchtpu.reset_stats()
            row[f"{kind}_cpu"], row[f"{kind}_tpu"] = _interleaved(cpu_fn, tpu_fn, repeats, threads)
            torch.tpu.synchronize()
        s = torchtpu.stats()
        calls = repeats * (_BATCH + 1)
        row[f"{kind}_sim"] = s["wall_seconds"] / calls
        row[f"{kind}_dev"] = s["device_seconds"] / calls
        row[f"{kind}_launches"] = s["launches"] / calls
        row[f"{kind}_ratio"] = row[f"{kind}_tpu"] / row[f"{kind}_cpu"]
        row["fallbacks"] = sorted(set(row.get("fallbacks", [])) | set(torchtpu.fallback_counts()))
        row["chip"] = s["chip"]
    return row


HEADER = ["model", "fwd cpu ms", "fwd tpu ms", "fwd ratio", "train cpu ms", "train tpu ms", "train ratio",
          "sim fwd us", "sim train us", "dev train us", "launches/step", "fallbacks"]


def _cells(r: dict) -> list[str]:
    if "error" in r:
        return [r["model"], *["-"] * (len(HEADER) - 2), "error: " + r["error"]]
    return [r["model"], f"{r['fwd_cpu'] * 1e3:.2f}", f"{r['fwd_tpu'] * 1e3:.1f}", f"{r['fwd_ratio']:.1f}x",
            f"{r['train_cpu'] * 1e3:.2f}", f"{r['train_tpu'] * 1e3:.1f}", f"{r['train_ratio']:.1f}x",
            f"{r['fwd_sim'] * 1e6:.0f}", f"{r['train_sim'] * 1e6:.0f}", f"{r['train_dev'] * 1e6:.0f}",
            f"{r['train_launches']:.0f}", ", ".join(r["fallbacks"]) or "0"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated subset of torchtpu.validate_models.MODELS")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads for the CPU baseline")
    parser.add_argument("--eager-mode", help="run the tpu side in this eager mode (e.g. DEFER_AND_FUSE)")
    parser.add_argument("--compile", action="store_true",
                        help='tpu side: torch.compile(model) and torch.compile(optimizer.step), backend "tpu" '
                             '(the CPU baseline stays eager)')
    parser.add_argument("--size", choices=("tiny", "medium"), default="tiny",
                        help="tiny: the zoo's configs (hidden 32, 8 tokens); medium: hidden 256 over 256 tokens")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from tqdm import tqdm
    from transformers.utils import logging as hf_logging

    from torchtpu import validate_models as vm

    hf_logging.set_verbosity_error()
    names = args.models.split(",") if args.models else list(vm.MODELS)
    rows = []
    for name in (bar := tqdm(names, file=sys.stderr, unit="model")):
        bar.set_description(name)
        try:
            rows.append(measure(name, args.warmup, args.repeats, args.eager_mode, args.threads, args.compile,
                                args.size))
        except Exception as exc:  # noqa: BLE001 - a model that cannot run is a row, not the end of the table
            rows.append({"model": name, "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:90]})
    table = [HEADER] + [_cells(r) for r in rows]
    if args.markdown:
        print("| " + " | ".join(HEADER) + " |\n|" + "---|" * len(HEADER))
        print("\n".join("| " + " | ".join(c) + " |" for c in table[1:]))
    else:
        widths = [max(len(row[i]) for row in table) for i in range(len(HEADER) - 1)]
        for row in table:
            print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))), row[-1])
    ok = [r for r in rows if "error" not in r]
    if ok:
        chip = ok[0]["chip"]
        print(f"\nmedian over {len(ok)} models: forward {statistics.median(r['fwd_ratio'] for r in ok):.1f}x CPU, "
              f"training step {statistics.median(r['train_ratio'] for r in ok):.1f}x CPU "
              f"(goal <= 3x); tpu side {'compiled' if args.compile else args.eager_mode or 'eager'}; "
              f"torch threads {args.threads}; size {args.size}; simulated chip {chip}; "
              f"{args.repeats} timed repeats after {args.warmup} warm-up")


if __name__ == "__main__":
    main()
