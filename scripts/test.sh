#!/usr/bin/env bash
# The README's test command: set up the environment, build the C++ shim, run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_env.sh
. .venv/bin/activate
ruff check .
python -m pytest -q -m "not slow" -p no:cacheprovider "$@"
