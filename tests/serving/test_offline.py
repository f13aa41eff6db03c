"""Offline `LLM(model=dir).generate` on "tpu" through the torchtpu.vllm plugin: greedy tokens equal vLLM's own CPU
platform and Hugging Face `generate` on CPU for tiny random-weight Llama, Qwen3 (MQA) and Mistral-style sliding
window models; bad input fails with errors naming what was wrong."""

from __future__ import annotations

import pytest

from torchtpu.vllm import harness, tiny

PROMPTS = ["hello world the cat sat on a red house and the dog",  # longer than the sliding window (8)
           "one two three four five six seven eight nine ten red blue green",
           "the king"]
MAX_TOKENS = 8
KINDS = ["llama", "qwen3", "mistral_swa"]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("tiny")
    return {k: str(tiny.build(k, root / k)) for k in KINDS}


# the CI step (scripts/ci_vllm.sh, -m "not slow") keeps Llama (GQA) and Mistral (sliding window); Qwen3 is slow
@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k == "qwen3" else k for k in KINDS])
def test_greedy_matches_vllm_cpu_and_hf(models: dict[str, str], kind: str) -> None:
    spec = {"model": models[kind], "prompts": PROMPTS, "max_tokens": MAX_TOKENS}
    tpu = harness.run({**spec, "platform": "tpu"})
    cpu = harness.run({**spec, "platform": "cpu"})
    assert tpu["platform"] == "TpuPlatform" and cpu["platform"] == "CpuPlatform"
    assert tpu["tokens"] == cpu["tokens"]
    hf = [harness.hf_greedy(models[kind], p, MAX_TOKENS) for p in PROMPTS]
    assert tpu["tokens"] == hf
    assert all(len(t) == MAX_TOKENS for t in tpu["tokens"])
    serving = tpu["serving"]
    assert serving["token_buckets"] == [16, 32, 64, 128, 256]
    # the model compiled per bucket at start-up (vLLM's pieces between attention layers, one program each per
    # bucket) and every step padded to a bucket: no piece ever ran outside one
    assert serving["bucket_compiles"] >= 5 and serving["bucket_compiles"] % 5 == 0
    assert serving["general_range_calls"] == 0
    # decode steps replay: after the first step, the rest of the run compiles few programs (each step's attention
    # program, keyed by its lengths, and new shapes of the eager sampler)
    assert serving["programs_compiled"] < 3 * serving["programs_after_first_step"]
    assert tpu["sim"]["flops"] > 0 and tpu["sim"]["launches"] > 0


@pytest.mark.slow  # the CI step checks seeded sampling through the server (test_server.py)
def test_sampling_params_seeded_and_stop(models: dict[str, str]) -> None:
    spec = {"model": models["llama"], "platform": "tpu", "prompts": PROMPTS[:2], "max_tokens": 6,
            "sampling": {"temperature": 0.9, "top_p": 0.9, "top_k": 20, "seed": 7}}
    a, b = harness.run(spec), harness.run(spec)
    assert a["tokens"] == b["tokens"]  # per-request seed: reproducible
    greedy = harness.run({**spec, "sampling": {}})
    assert a["tokens"] != greedy["tokens"]
    assert all(len(t) == 6 for t in a["tokens"] + greedy["tokens"])


# the start-up and request errors do not depend on the model's compilation (the greedy tests and the server cover
# it): these runs skip compiling it per bucket at start-up
EAGER = {"enforce_eager": True}


def test_prompt_longer_than_max_model_len(models: dict[str, str]) -> None:
    long_prompt = " ".join(["red"] * 300)
    with pytest.raises(RuntimeError, match=r"maximum context length is 256 tokens\. However, your prompt contains at "
                                           r"least 257 input tokens"):
        harness.run({"model": models["llama"], "platform": "tpu", "prompts": [long_prompt], "max_tokens": 4,
                     "llm": EAGER})


def test_hbm_too_small_for_kv_cache(models: dict[str, str]) -> None:
    with pytest.raises(RuntimeError, match=r"HBM too small for the KV cache: kv_cache_memory_bytes=68719476736 .*"
                                           r"TPU v5e has 14\.901 GiB of HBM"):
        harness.run({"model": models["llama"], "platform": "tpu", "prompts": ["hello"],
                     "llm": {**EAGER, "kv_cache_memory_bytes": 64 << 30}})


def test_unsupported_head_dim_named(tmp_path) -> None:
    d = tiny.build("llama", tmp_path / "hd12", hidden=48, num_attention_heads=4, num_key_value_heads=2, head_dim=12)
    with pytest.raises(RuntimeError, match=r"head dim 12 is not supported; valid: multiples of 8 from 8 to 256"):
        harness.run({"model": str(d), "platform": "tpu", "prompts": ["hello"]})


@pytest.mark.slow  # vLLM's own validation, not ours
def test_unsupported_dtype_named(models: dict[str, str]) -> None:
    # vLLM's own config validation refuses it first, naming the value and the valid set
    with pytest.raises(RuntimeError, match=r"Input should be 'auto', 'half', 'float16', 'bfloat16', 'float' or "
                                           r"'float32' \[type=literal_error, input_value='float64'"):
        harness.run({"model": models["llama"], "platform": "tpu", "prompts": ["hello"],
                     "llm": {"dtype": "float64"}})
