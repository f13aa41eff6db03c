#!/usr/bin/env bash
# The README's main command: set up the environment, then train a small model on the simulated TPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_env.sh
. .venv/bin/activate
torchtpu demo "$@"
