"""Runs one offline vLLM generation in a fresh process, on "tpu" (our plugin) or on vLLM's own CPU platform, and
reports tokens and timings as JSON: what tests/serving and benchmarks/serving.py compare.

    python -m torchtpu.vllm.harness '{"model": DIR, "platform": "tpu", "prompts": [...], "max_tokens": 8}'

Optional spec keys: "llm" (LLM arguments, e.g. tensor_parallel_size), "sampling", "env" (extra environment, e.g.
TORCHTPU_NUM_DEVICES), "repeats", "phases", "kill_rank"/"kill_after_s" (SIGKILL a tensor-parallel rank's worker
mid-generate and report what the engine raised). The engine is shut down before the result is printed.

vLLM's CPU platform runs with torchtpu's autoload off and our plugin filtered out (VLLM_PLUGINS), so the baseline
is vLLM alone; a process per run keeps one vLLM engine per process, as vLLM expects.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LLM = dict(max_model_len=256, max_num_batched_tokens=256, max_num_seqs=16, kv_cache_memory_bytes=16 << 20,
                   dtype="float32", seed=0)


def env_for(platform: str, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
               VLLM_ENABLE_V1_MULTIPROCESSING="0")
    if platform == "cpu":
        env.update(TORCH_DEVICE_BACKEND_AUTOLOAD="0", VLLM_PLUGINS="none", VLLM_TARGET_DEVICE="cpu",
                   VLLM_CPU_CI_ENV="1")
        env.pop("VLLM_CPU_KVCACHE_SPACE", None)
    elif platform == "tpu":
        env.setdefault("TORCHTPU_PRECISION", "HIGHEST")
    else:
        raise ValueError(f"platform {platform!r}; valid: tpu, cpu")
    return env


def run(spec: dict[str, Any], timeout: float = 600) -> dict[str, Any]:
    """Runs `spec` (see `_main`) in a subprocess; returns its JSON result or raises with its output's tail."""
    # run by path, not `-m torchtpu...`: importing the torchtpu package would load the backend (and numba) into
    # the CPU baseline's process, where vLLM 0.32's kernel rebinding then fails on llvmlite (docs/serving.md)
    code = f"import runpy, sys; sys.argv = ['harness', sys.argv[1]]; runpy.run_path({__file__!r}, run_name='__main__')"
    # cwd outside the checkout: a stale torchtpu.egg-info there would hide the installed entry points
    # its own session: on a timeout the whole group (tensor-parallel worker processes included) is killed
    env = {**env_for(spec.get("platform", "tpu")), **spec.get("env", {})}
    proc = subprocess.Popen([sys.executable, "-c", code, json.dumps(spec)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tempfile.gettempdir(), start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise RuntimeError(f"harness run timed out after {timeout} s:\n{stdout[-3000:]}\n{stderr[-6000:]}") from None
    proc.stdout, proc.stderr = stdout, stderr  # type: ignore[assignment]
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("HARNESS_RESULT "):
            return json.loads(line[len("HARNESS_RESULT "):])
    raise RuntimeError(f"harness run failed (rc={proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")


def _main(spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    from vllm import LLM

    torch.set_num_threads(int(spec.get("threads", 1)))
    if spec.get("platform", "tpu") == "cpu":  # vLLM's own platform hits the same vLLM bug: compat.py
        import importlib.util

        loc = importlib.util.spec_from_file_location("_torchtpu_vllm_compat", os.path.join(HERE, "compat.py"))
        compat = importlib.util.module_from_spec(loc)
        loc.loader.exec_module(compat)
        compat.patch_kernel_registration()
    kwargs = {**DEFAULT_LLM, **spec.get("llm", {})}
    t0 = time.perf_counter()
    llm = LLM(model=spec["model"], **kwargs)
    out: dict[str, Any] = {"init_s": time.perf_counter() - t0,
                           "platform": type(__import__("vllm.platforms").platforms.current_platform).__name__}
    try:
        _generate(llm, spec, out)
    finally:
        out["shutdown_s"] = _shutdown(llm)
    return out


def _generate(llm: Any, spec: dict[str, Any], out: dict[str, Any]) -> None:
    from vllm import SamplingParams

    params = SamplingParams(**{"temperature": 0.0, "max_tokens": spec.get("max_tokens", 8), **spec.get("sampling", {})})
    prompts = spec["prompts"]
    t1 = time.perf_counter()
    first = llm.generate(prompts[:1], SamplingParams(temperature=0.0, max_tokens=1), use_tqdm=False)
    out["first_request_s"] = time.perf_counter() - t1
    del first
    runs = []
    for _ in range(int(spec.get("repeats", 1))):
        t2 = time.perf_counter()
        res = llm.generate(prompts, params, use_tqdm=False)
        runs.append(time.perf_counter() - t2)
    out["generate_s"] = sorted(runs)[len(runs) // 2]
    out["tokens"] = [list(r.outputs[0].token_ids) for r in res]
    out["texts"] = [r.outputs[0].text for r in res]
    out["generated"] = sum(len(t) for t in out["tokens"])
    if spec.get("kill_rank") is not None:
        out["after_kill"] = _kill_rank_during_generate(llm, prompts, int(spec["kill_rank"]),
                                                       float(spec.get("kill_after_s", 2.0)))
        return
    if spec.get("platform", "tpu") == "tpu":
        # every rank's worker (in this process, or one process per rank under tensor parallelism)
        out["ranks"] = llm.collective_rpc("serving_stats")
        out["serving"] = out["ranks"][0]
        out["sim"] = out["ranks"][0]["sim"]
        if spec.get("phases"):
            out["phases"] = _sim_phases(llm, prompts, int(spec.get("max_tokens", 8)))


def _kill_rank_during_generate(llm: Any, prompts: list[str], rank: int, after_s: float) -> dict[str, Any]:
    """SIGKILLs tensor-parallel rank `rank`'s worker process `after_s` seconds into a long generate; returns what
    the generate raised (type, message) and how long it took to raise, or "error": None if it finished."""
    import signal
    import threading

    from vllm import SamplingParams

    pids = [r["pid"] for r in llm.collective_rpc("serving_stats")]
    victim = pids[rank]
    threading.Timer(after_s, os.kill, (victim, signal.SIGKILL)).start()
    t0 = time.perf_counter()
    try:
        llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=200, ignore_eos=True), use_tqdm=False)
        error = None
    except Exception as exc:  # noqa: BLE001 - reported to the test
        error = {"type": type(exc).__name__, "message": str(exc)[:2000]}
    return {"pids": pids, "victim": victim, "error": error, "seconds": time.perf_counter() - t0}


def _sim_phases(llm: Any, prompts: list[str], max_tokens: int) -> dict[str, float]:
    """Simulated device seconds of the batch's prefill step and of one decode step of the whole batch: a
    generate of 1 token (one prefill step) and one of `max_tokens` (prefill + max_tokens - 1 decode steps). Needs
    prefix caching off and every prompt prefilled in one step (batch x prompt <= max_num_batched_tokens)."""
    from vllm import SamplingParams

    from torchtpu.runtime import driver

    def device_s(n: int) -> float:
        before = driver().stats()["device_seconds"]
        llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True), use_tqdm=False)
        return driver().stats()["device_seconds"] - before

    prefill = device_s(1)
    full = device_s(max_tokens)
    return {"prefill_s": prefill, "decode_step_s": (full - prefill) / max(1, max_tokens - 1)}


def _shutdown(llm: Any) -> float:
    """Stops the engine and its worker processes (vLLM's own shutdown: the executor waits for its workers, then
    terminates and kills the ones left); returns the seconds it took."""
    t0 = time.perf_counter()
    llm.llm_engine.engine_core.shutdown()
    return time.perf_counter() - t0


if __name__ == "__main__":
    result = _main(json.loads(sys.argv[1]))
    print("HARNESS_RESULT " + json.dumps(result), flush=True)
    sys.stdout.flush()
    os._exit(0)  # vLLM's atexit teardown is not needed for a one-shot run


def hf_greedy(model_dir: str, prompt: str, max_tokens: int) -> list[int]:
    """The reference: Hugging Face `generate` on CPU in float32, greedy, the new token ids of one prompt."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    ids = torch.tensor([tok(prompt)["input_ids"]])
    with torch.no_grad():
        out = model.generate(ids, do_sample=False, max_new_tokens=max_tokens, pad_token_id=3)
    return out[0, ids.shape[1]:].tolist()
