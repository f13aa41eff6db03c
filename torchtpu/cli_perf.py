"""`torchtpu perf`: the performance model from the command line (no torch import: runs in milliseconds).

    torchtpu perf --model llama3.1-70b --chip v6e --chips 256 --per-device-batch 5 --seq 8192 \\
                  --parallelism fsdp=-1 --remat save_qkv --offload
    torchtpu perf --model maxtext-128b --chip v5p --chips 1024 --batch 1024 --search --json
    torchtpu perf --model llama3.1-8b --chip v5e --chips 8 --serve --serve-batch 32
    torchtpu perf --validate          # predicted vs published MFU table
    torchtpu perf --list-models

--model takes a shipped config name, a JSON/YAML file (our fields or a Hugging Face config.json).
--json prints a JSON object (step_seconds, mfu, tokens_per_second, memory_per_chip_bytes, layout, ...).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from torchtpu.sim.chips import CHIPS, DEFAULT_CHIP

__all__ = ["add_perf_parser", "run_perf"]


def add_perf_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `perf` sub-command to an argparse subparsers object."""
    p = subparsers.add_parser("perf", help="predict training/serving speed on TPU pods (analytical model)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="config name (see --list-models), or a .json/.yaml file")
    p.add_argument("--chip", default=DEFAULT_CHIP, help=f"{', '.join(CHIPS)} (default {DEFAULT_CHIP})")
    p.add_argument("--chips", type=int, default=256, help="number of chips (default 256)")
    p.add_argument("--slices", type=int, default=None, help="ICI slices joined by DCN (default: by chip type)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--batch", type=float, default=None, help="global batch in sequences")
    g.add_argument("--per-device-batch", type=float, default=None, help="sequences per chip (MaxText style)")
    p.add_argument("--seq", type=int, default=2048, help="sequence length (default 2048)")
    p.add_argument("--parallelism", default=None,
                   help="layout, e.g. 'fsdp=-1,tp=8' (-1 fills the slice; dcn_dp defaults to the slices)")
    p.add_argument("--remat", default="full", help="none, minimal, save_qkv, save_attention, full (default full)")
    p.add_argument("--offload", action="store_true", help="saved activations in host memory")
    p.add_argument("--block", type=int, default=512, help="flash-attention block size (default 512)")
    p.add_argument("--causal", default="half", choices=("half", "full"),
                   help="count causal attention FLOPs at half (newer MaxText) or full (older recipes, PaLM)")
    p.add_argument("--cp-mode", default="all_gather", choices=("all_gather", "ring"),
                   help="context parallelism: all-gather K/V (default) or ring")
    p.add_argument("--microbatches", type=int, default=None, help="pipeline microbatches per data shard")
    p.add_argument("--schedule", default="1f1b", choices=("1f1b", "interleaved", "gpipe"), help="pipeline schedule")
    p.add_argument("--virtual-stages", type=int, default=1, help="interleaved pipeline: model chunks per chip")
    p.add_argument("--dcn-bw", type=float, default=None, help="per-chip DCN bytes/s (the chip table has none for "
                   f"{', '.join(n for n, c in CHIPS.items() if c.dcn_bw is None)})")
    p.add_argument("--search", action="store_true", help="search the best fitting layout and remat policy")
    p.add_argument("--max-pp", type=int, default=1, help="search: pipeline stages up to this (default 1: none)")
    p.add_argument("--max-cp", type=int, default=16, help="search: context parallelism up to this (default 16)")
    p.add_argument("--top", type=int, default=5, help="rows of the search table (default 5)")
    p.add_argument("--serve", action="store_true", help="predict serving (prefill/decode) instead of training")
    p.add_argument("--serve-batch", type=int, default=1, help="concurrent sequences per replica (serving)")
    p.add_argument("--prompt", type=int, default=2048, help="prompt length (serving)")
    p.add_argument("--gen", type=int, default=256, help="generated tokens (serving)")
    p.add_argument("--tp", type=int, default=None, help="tensor parallelism per replica (serving)")
    p.add_argument("--quant", default="bf16", help="serving weights: bf16, int8, fp8, int8_w8a8, fp8_w8a8")
    p.add_argument("--kv-bytes", type=float, default=2, help="serving: bytes per cached K/V element (int8: 1)")
    p.add_argument("--page-tokens", type=int, default=None, help="serving: paged KV cache page size (tokens)")
    p.add_argument("--draft", default=None, help="serving: speculative decoding draft model")
    p.add_argument("--acceptance", type=float, default=None, help="speculative decoding acceptance rate")
    p.add_argument("--gamma", type=int, default=4, help="speculative decoding: draft tokens per round")
    p.add_argument("--validate", action="store_true", help="print predicted vs published MFU")
    p.add_argument("--list-models", action="store_true", help="list the shipped model configs")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def _print(obj: Any, as_json: bool, text: str) -> None:
    print(json.dumps(obj, indent=1, default=str) if as_json else text)


def run_perf(args: argparse.Namespace) -> int:
    """Run `torchtpu perf` with parsed arguments; returns the exit status."""
    from torchtpu.perfmodel import config, layout_search, serving, training, validation

    if args.list_models:
        names = config.list_configs()
        _print(names, args.json, "\n".join(names))
        return 0
    if args.validate:
        from torchtpu.perfmodel.published import CASES, VALIDATION_CASES

        rows = validation.validate(CASES + VALIDATION_CASES)
        data = [{"case": r.case.id, "role": r.case.role, "published_mfu": r.published, "predicted_mfu": r.predicted,
                 "rel_error": r.rel_error} for r in rows]
        _print(data, args.json, validation.format_table(rows))
        return 0
    if not args.model:
        print("torchtpu perf: --model is required (or --validate / --list-models)")
        return 2
    try:
        model = config.load_config(args.model)
        if args.serve:
            rep = serving.serve(model, args.chip, args.chips, tp=args.tp, batch=args.serve_batch,
                                prompt_len=args.prompt, gen_len=args.gen, quant=args.quant, kv_bytes=args.kv_bytes,
                                page_tokens=args.page_tokens, draft=args.draft, acceptance=args.acceptance,
                                gamma=args.gamma)
            _print(rep.to_dict(), args.json, rep.summary())
            return 0
        setup = training.TrainSetup(seq_len=args.seq, global_batch=args.batch, per_device_batch=args.per_device_batch,
                                    remat=args.remat, offload=args.offload, causal_convention=args.causal,
                                    block_q=args.block, block_kv=args.block, cp_mode=args.cp_mode,
                                    microbatches=args.microbatches, schedule=args.schedule,
                                    virtual_stages=args.virtual_stages)
        if args.search:
            res = layout_search.search(model, args.chip, args.chips, setup, n_slices=args.slices,
                                       max_pp=args.max_pp, max_cp=args.max_cp, dcn_bw=args.dcn_bw,
                                       cp_modes=("all_gather", "ring"))
            if res.best is None:
                _print(res.to_dict(args.top), args.json, f"no layout fits\n{res.explain()}")
                return 1
            text = f"best: {res.best.summary()}\n\n{res.table(args.top)}\n{res.explain()}"
            out = res.best.to_dict()
            out["search"] = res.to_dict(args.top)
            _print(out, args.json, text)
            return 0
        rep = training.train_step(model, args.chip, args.chips, args.parallelism, setup, n_slices=args.slices,
                                  dcn_bw=args.dcn_bw)
    except ValueError as e:
        print(f"torchtpu perf: {e}")
        return 2
    text = rep.summary() + "\n" + "\n".join(f"  {k}: {v:.3f} s" for k, v in rep.breakdown.items())
    _print(rep.to_dict(), args.json, text)
    return 0 if rep.fits else 1
