#!/usr/bin/env bash
# Creates .venv (if missing) and installs torchtpu with the tested pins. Used by the README's commands and CI.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
python -m pip install -q -c constraints.txt -e ".[dev,notebooks,models,ecosystem,quant,pjrt,ray,kernels,helion]"
# TorchRec (tests/test_torchrec*.py, docs/ecosystem.md; about 50 MB): torchrec requires the CUDA build `fbgemm-gpu`,
# which the CPU build of the same operators replaces, so those two install without dependencies, after torchrec's others.
python -m pip install -q -c constraints.txt tensordict torchmetrics pyre-extensions
python -m pip install -q -c constraints.txt --no-deps torchrec fbgemm-gpu-cpu
