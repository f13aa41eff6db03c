#!/usr/bin/env bash
# The README's test command: set up the environment, build the C++ shim, run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_env.sh
. .venv/bin/activate
ruff check .
# two pytest workers (pytest-xdist), one per core; a file's tests stay on one worker (its fixtures are built once)
python -m pytest -q -m "not slow" -p no:cacheprovider -n 2 --dist loadfile "$@"
# The device, training, compile and bounded conformance tests again on the PJRT driver (JAX's CPU client compiles
# with real XLA); the conformance sample must keep every entry's status recorded by the sim's full sweep.
TORCHTPU_DRIVER=pjrt TORCHTPU_PJRT_PLATFORM=cpu python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile \
  tests/test_device.py tests/test_training.py tests/test_ops.py tests/test_compile.py tests/test_opinfo.py \
  tests/test_device_asserts.py
# Custom kernels (JAX/Pallas through the driver's PJRT client) on the same driver
TORCHTPU_DRIVER=pjrt TORCHTPU_PJRT_PLATFORM=cpu python -m pytest -q -m "not slow" -p no:cacheprovider -n 2 \
  --dist loadfile tests/test_custom_kernels.py tests/test_kernels_examples.py
# The install users get: a wheel built from this checkout, installed into a fresh venv outside it with the tested
# pins, the device tests run against the installed package with no compiler and an empty shim cache.
scripts/wheel_smoke.sh
