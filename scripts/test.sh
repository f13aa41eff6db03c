#!/usr/bin/env bash
# The README's test command: set up the environment, build the C++ shim, run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_env.sh
. .venv/bin/activate
ruff check .
python -m pytest -q -m "not slow" -p no:cacheprovider "$@"
# The same device, training and compile tests on the PJRT driver (JAX's CPU client compiles with real XLA).
TORCHTPU_DRIVER=pjrt TORCHTPU_PJRT_PLATFORM=cpu python -m pytest -q -p no:cacheprovider \
  tests/test_training.py tests/test_ops_basic.py tests/test_compile.py
