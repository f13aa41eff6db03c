"""Offline serving on "tpu" (torchtpu.vllm, simulator) vs vLLM's own CPU platform, in the same run, and the
simulated chip's prefill/decode time beside `torchtpu perf --serve`'s prediction for the same model and batch.

Prints per model size: host tokens/s and time to first token on each platform and their ratio (tpu / cpu), the
programs compiled on "tpu"; then the simulated v5e (TORCHTPU_CHIP) prefill time and decode-step latency of the
batch, its simulated decode tokens/s, and perfmodel.serving's prediction (`torchtpu perf --serve --serve-batch B
--prompt P --gen G`, the same config.json, bf16 weights and KV, 16-token pages) with the ratio sim / predicted.
Each platform runs in its own process (torchtpu.vllm.harness), `repeats` times; medians; torch threads pinned.
Prefix caching is off on both (the repeats would otherwise skip the prefill).

    .venv-vllm/bin/python benchmarks/serving.py [--sizes 128x2,1024x4] [--batch 8] [--max-tokens 16]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

# run as a script, this folder is sys.path[0]: its kernels.py would shadow the `kernels` package transformers imports
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

from torchtpu.vllm import harness, tiny  # noqa: E402

WORDS = tiny.WORDS


def prompts(batch: int, length: int) -> list[str]:
    return [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(length)) for i in range(batch)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="128x2,1024x4", help="hidden x layers of the Llama models, comma separated")
    ap.add_argument("--batch", type=int, default=8, help="concurrent prompts")
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads in both runs")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            hidden, layers = (int(x) for x in size.split("x"))
            model = tiny.build("llama", Path(tmp) / size, hidden=hidden, layers=layers, head_dim=32,
                               num_attention_heads=hidden // 32, num_key_value_heads=max(1, hidden // 64))
            spec = {"model": str(model), "prompts": prompts(args.batch, args.prompt_len),
                    "max_tokens": args.max_tokens, "repeats": args.repeats, "threads": args.threads,
                    "sampling": {"ignore_eos": True},
                    "llm": {"dtype": "bfloat16", "enable_prefix_caching": False,
                            "max_num_batched_tokens": max(256, args.batch * args.prompt_len)}}
            res = {p: harness.run({**spec, "platform": p, "phases": p == "tpu"}, timeout=1800) for p in ("tpu", "cpu")}
            same = res["tpu"]["tokens"] == res["cpu"]["tokens"]
            tps = {p: r["generated"] / r["generate_s"] for p, r in res.items()}
            sim_s = res["tpu"]["sim"]["device_seconds"]
            row = {"model": f"llama h{hidden} L{layers}", "batch": args.batch, "tokens_equal": same,
                   "tpu_tok_s": tps["tpu"], "cpu_tok_s": tps["cpu"], "ratio_tok_s": tps["tpu"] / tps["cpu"],
                   "tpu_ttft_s": res["tpu"]["first_request_s"], "cpu_ttft_s": res["cpu"]["first_request_s"],
                   "ratio_ttft": res["tpu"]["first_request_s"] / res["cpu"]["first_request_s"],
                   "programs_compiled": res["tpu"]["serving"]["programs_compiled"],
                   "sim_device_s_total": sim_s}
            row.update(predicted(model, args, res["tpu"]["phases"]))
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\nmodel              batch  tok/s tpu  tok/s cpu  ratio  TTFT tpu  TTFT cpu  ratio  programs  equal")
    for r in rows:
        print(f"{r['model']:<18} {r['batch']:>5} {r['tpu_tok_s']:>10.1f} {r['cpu_tok_s']:>10.1f} "
              f"{r['ratio_tok_s']:>6.3f} {r['tpu_ttft_s']:>9.3f} {r['cpu_ttft_s']:>9.3f} {r['ratio_ttft']:>6.2f} "
              f"{r['programs_compiled']:>9} {r['tokens_equal']!s:>6}")
    print(f"\nsimulated {os.environ.get('TORCHTPU_CHIP', 'v5e')} vs torchtpu perf --serve (same model, batch, prompt, "
          "gen):")
    print("model              prefill sim ms  pred ms  ratio   decode sim ms  pred ms  ratio   sim tok/s  pred tok/s")
    for r in rows:
        print(f"{r['model']:<18} {1e3 * r['sim_prefill_s']:>14.3f} {1e3 * r['pred_prefill_s']:>8.3f} "
              f"{r['ratio_prefill']:>6.2f} {1e3 * r['sim_decode_step_s']:>15.3f} {1e3 * r['pred_decode_step_s']:>8.3f} "
              f"{r['ratio_decode']:>6.2f} {r['sim_decode_tok_s']:>10.0f} {r['pred_decode_tok_s']:>11.0f}")


def predicted(model: Path, args: argparse.Namespace, phases: dict[str, float]) -> dict[str, float]:
    """perfmodel.serving's prefill and decode-step time for the model's config.json, beside the simulated ones."""
    from torchtpu.perfmodel import config, serving

    cfg = config.from_hf_config(json.loads((model / "config.json").read_text()), name=model.name)
    rep = serving.serve(cfg, os.environ.get("TORCHTPU_CHIP", "v5e"), 1, tp=1, batch=args.batch,
                        prompt_len=args.prompt_len, gen_len=args.max_tokens, page_tokens=16)
    return {"sim_prefill_s": phases["prefill_s"], "pred_prefill_s": rep.prefill_seconds,
            "ratio_prefill": phases["prefill_s"] / rep.prefill_seconds,
            "sim_decode_step_s": phases["decode_step_s"], "pred_decode_step_s": rep.decode_step_seconds,
            "ratio_decode": phases["decode_step_s"] / rep.decode_step_seconds,
            "sim_decode_tok_s": args.batch / phases["decode_step_s"], "pred_decode_tok_s": rep.decode_tokens_per_second}


if __name__ == "__main__":
    main()
