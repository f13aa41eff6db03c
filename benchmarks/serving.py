"""Offline serving on "tpu" (torchtpu.vllm, simulator) vs vLLM's own CPU platform, in the same run.

Prints per model size: host tokens/s and time to first token on each platform and their ratio (tpu / cpu), the
programs compiled on "tpu", and the simulated device time of the generate call on the chosen chip, as simulated
tokens/s. Each platform runs in its own process (torchtpu.vllm.harness), `repeats` times; medians.

    .venv-vllm/bin/python benchmarks/serving.py [--sizes 128x2,512x4] [--batch 8] [--max-tokens 16]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from torchtpu.vllm import harness, tiny

WORDS = tiny.WORDS


def prompts(batch: int, length: int) -> list[str]:
    return [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(length)) for i in range(batch)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="128x2,512x4", help="hidden x layers of the Llama models, comma separated")
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
                    "max_tokens": args.max_tokens, "repeats": args.repeats, "threads": args.threads}
            res = {p: harness.run({**spec, "platform": p}, timeout=1800) for p in ("tpu", "cpu")}
            same = res["tpu"]["tokens"] == res["cpu"]["tokens"]
            tps = {p: r["generated"] / r["generate_s"] for p, r in res.items()}
            sim_s = res["tpu"]["sim"]["device_seconds"]
            row = {"model": f"llama h{hidden} L{layers}", "batch": args.batch, "tokens_equal": same,
                   "tpu_tok_s": tps["tpu"], "cpu_tok_s": tps["cpu"], "ratio_tok_s": tps["tpu"] / tps["cpu"],
                   "tpu_ttft_s": res["tpu"]["first_request_s"], "cpu_ttft_s": res["cpu"]["first_request_s"],
                   "ratio_ttft": res["tpu"]["first_request_s"] / res["cpu"]["first_request_s"],
                   "programs_compiled": res["tpu"]["serving"]["programs_compiled"],
                   "sim_device_s_total": sim_s, "sim_chip": "TORCHTPU_CHIP (default v5e)"}
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\nmodel              batch  tok/s tpu  tok/s cpu  ratio  TTFT tpu  TTFT cpu  ratio  programs  equal")
    for r in rows:
        print(f"{r['model']:<18} {r['batch']:>5} {r['tpu_tok_s']:>10.1f} {r['cpu_tok_s']:>10.1f} "
              f"{r['ratio_tok_s']:>6.3f} {r['tpu_ttft_s']:>9.3f} {r['cpu_ttft_s']:>9.3f} {r['ratio_ttft']:>6.2f} "
              f"{r['programs_compiled']:>9} {r['tokens_equal']!s:>6}")


if __name__ == "__main__":
    main()
