#!/usr/bin/env bash
# TorchTitan CI step: creates .venv-titan (torchtitan 0.3.0 + triton, pinned in constraints.txt and constraints-torchtitan.txt, beside torch 2.13
# and torchtpu) and runs tests/test_torchtitan.py: TorchTitan's own `torchrun -m torchtitan.train` on "tpu" (1 chip,
# HSDP across 2 torchrun nodes of 2 chips with checkpoint resume).
# Kept apart from .venv: torchtitan's dependencies (triton is 1 GB) are not the project's.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export TORCHTPU_CACHE_DIR=${TORCHTPU_CACHE_DIR:-$PWD/.cache/torchtpu}
start=$(date +%s)
if [ ! -x .venv-titan/bin/python ]; then
  "$PY" -m venv .venv-titan
fi
# --prepare: only the third-party packages, torchtpu's own dependencies among them (not -e ., which writes into
# the checkout), then exit; .ci/run runs it in the background during the main suite. pip byte-compiles there:
# skipped, the tests' first imports compiled torch and vLLM in every worker at once (vLLM's tests 7 -> 11 min).
# With torchtpu's build requirements present, its editable install below needs no isolated build environment.
deps=$(.venv-titan/bin/python -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')
.venv-titan/bin/python -m pip install -q -c constraints.txt -c constraints-torchtitan.txt torch==2.13.0 \
  torchtitan==0.3.0 triton pytest tokenizers $deps 'setuptools>=77' wheel
if [ "${1:-}" = "--prepare" ]; then
  echo "ci_torchtitan: third-party packages ready in $(( $(date +%s) - start )) s"
  exit 0
fi
.venv-titan/bin/python -m pip install -q --no-build-isolation -c constraints.txt -c constraints-torchtitan.txt torch==2.13.0 -e .
echo "ci_torchtitan: venv ready in $(( $(date +%s) - start )) s"
start=$(date +%s)
# -m "not slow": FSDP2 on 2/4/8, FSDP2 x TP on 4/8, HSDP on 2 x 4 run by hand (`scripts/ci_torchtitan.sh -m slow`)
timeout 1800 .venv-titan/bin/python -m pytest -q -p no:cacheprovider -m "not slow" tests/test_torchtitan.py "$@"
echo "ci_torchtitan: tests ran in $(( $(date +%s) - start )) s"
