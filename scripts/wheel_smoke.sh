#!/usr/bin/env bash
# Installs torchtpu the way users do and checks it: builds the wheel (the C++ shim compiled in), installs it into
# a fresh venv outside the checkout with the tested pins, hides the compiler and the shim cache (a JIT build would
# fail), and runs the device tests against the installed package. Run from .venv (its torch builds the wheel).
# Usage: scripts/wheel_smoke.sh [workdir]   (default: a new temporary directory, removed afterwards)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${1:-$(mktemp -d)}"
[ $# -ge 1 ] || trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK"
PY=${PYTHON:-python}
t0=$(date +%s)
"$PY" -m pip wheel -q --no-build-isolation --no-deps -w "$WORK/dist" "$REPO"
t1=$(date +%s)
WHEEL=$(ls "$WORK"/dist/torchtpu-*.whl)
"$PY" - "$WHEEL" <<'PYEOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
need = ["torchtpu/csrc/fast_launch_key.h", "torchtpu/csrc/tpu_shim.cpp", "torchtpu/sim/data/chips.json",
        "torchtpu/fuzz/known.json"]
missing = [n for n in need if n not in names] + ([] if any(n.startswith("torchtpu/_shim") and n.endswith(".so")
                                                        for n in names) else ["torchtpu/_shim*.so"])
lic = [n for n in names if n.endswith(".dist-info/METADATA")]
meta = zipfile.ZipFile(sys.argv[1]).read(lic[0]).decode()
if "License-Expression: BSD-3-Clause" not in meta:
    missing.append("License-Expression: BSD-3-Clause in METADATA")
if missing:
    sys.exit(f"wheel {sys.argv[1]} lacks: {', '.join(missing)}")
print(f"wheel ok: {sys.argv[1].rsplit('/', 1)[-1]} ({len(names)} files)")
PYEOF
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q -c "$REPO/constraints.txt" "$WHEEL" pytest
t2=$(date +%s)
cd "$WORK"  # outside the checkout: `import torchtpu` must find the installed package
env -u PYTHONPATH CXX=no-such-compiler TORCHTPU_CACHE_DIR="$WORK/empty-cache" \
  "$WORK/venv/bin/python" -c "import torch, torchtpu, torchtpu._native as n; assert n._prebuilt() is not None; \
assert '/venv/' in torchtpu.__file__, torchtpu.__file__; print(torch.ones(2, device='tpu').sum().item())"
env -u PYTHONPATH CXX=no-such-compiler TORCHTPU_CACHE_DIR="$WORK/empty-cache" \
  "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$WORK" -c /dev/null "$REPO/tests/test_device.py"
t3=$(date +%s)
echo "wheel smoke: build $((t1 - t0)) s, venv + install $((t2 - t1)) s, tests $((t3 - t2)) s"
