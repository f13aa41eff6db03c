#!/usr/bin/env bash
# PyTorch's own device-generic tests on "tpu" and on CPU, pass rates per file on the same tests.
#
#   scripts/pytorch_device_tests.sh PYTORCH_SRC [test_file.py ...]
#
# PYTORCH_SRC is a PyTorch source checkout (or any folder with a test/ subfolder holding PyTorch's test files) at a
# commit matching the installed torch (torch 2.13 ships no test files; nothing here is vendored). The files
# (default: the device-generic ones named below) are copied to a temporary folder and run with pytest; torch's
# backend autoload registers "tpu", so instantiate_device_type_tests makes a CPU and a PrivateUse1 copy of each
# class. A test counts for the comparison only where both copies ran (neither skipped); the report gives, per file,
# passed / compared on CPU and on tpu, and lists the tpu-only failures with the first line of their error; where
# some of them are refusals by design (torchtpu.dtypes' refusal of a dtype the device does not hold; the device-mix
# error for a non-0-dim CPU operand, which CUDA raises for the same call), it also gives the rates on the tests
# left without those (both figures are reported).
# Environment: TIMEOUT (seconds per file, default 1500; then pytest is interrupted and the tests it finished are
# reported, marked "partial"), PYTEST_ARGS (extra pytest arguments, split on spaces, e.g. "-k flip"), PYTEST_K (one -k expression,
# passed whole: PYTEST_K="memory_format or channels_last").
set -euo pipefail

if [ $# -lt 1 ] || [ ! -d "$1/test" ]; then
    echo "usage: $0 PYTORCH_SRC [test_file.py ...]  (PYTORCH_SRC/test/ must hold PyTorch's test files)" >&2
    exit 2
fi
src="$1/test"
shift
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    files=(test_view_ops.py test_indexing.py test_shape_ops.py test_sort_and_select.py
           test_tensor_creation_ops.py test_type_promotion.py)
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# compatibility of the April 2023 files with the installed harness (setUp recursion): see the file
cp "$(dirname "$0")/pytorch_device_tests_conftest.py" "$work/conftest.py"
status=0
for f in "${files[@]}"; do
    if [ ! -f "$src/$f" ]; then
        echo "$f: not in $src (skipped)"
        continue
    fi
    cp "$src/$f" "$work/$f"
    xml="$work/${f%.py}.xml"
    # pytest's exit status is 1 whenever a test fails; the report below is the result. 124: timed out.
    rc=0
    (cd "$work" && PYTORCH_TESTING_DEVICE_ONLY_FOR="cpu,privateuse1" timeout -s INT -k 120 "${TIMEOUT:-1500}" \
        python -m pytest -q -p no:cacheprovider --junitxml="$xml" ${PYTEST_ARGS:-} ${PYTEST_K:+-k "$PYTEST_K"} "$f" >"$work/${f%.py}.log" 2>&1) \
        || rc=$?
    if [ ! -s "$xml" ]; then
        echo "$f: no result (collection failed or timed out); last lines:"
        tail -5 "$work/${f%.py}.log"
        status=1
        continue
    fi
    label="$f"
    [ "$rc" -eq 124 ] && label="$f (partial: stopped after ${TIMEOUT:-1500} s)"
    python - "$xml" "$label" <<'PY'
import re
import sys
import xml.etree.ElementTree as ET

xml, name = sys.argv[1], sys.argv[2]
runs: dict[str, dict[str, tuple[str, str]]] = {"cpu": {}, "tpu": {}}
for case in ET.parse(xml).iter("testcase"):
    cls, test = case.get("classname", ""), case.get("name", "")
    device = "cpu" if cls.endswith("CPU") else "tpu" if re.search(r"(PRIVATEUSE1|TPU)$", cls) else None
    if device is None:
        continue
    key = re.sub(r"_(cpu|tpu|privateuse1)(?=_|$)", "", test, count=1)
    key = re.sub(r"(CPU|PRIVATEUSE1|TPU)$", "", cls.rsplit(".", 1)[-1]) + "." + key
    outcome, message = "passed", ""
    for child in case:
        if child.tag in ("failure", "error"):
            outcome, message = "failed", (child.get("message") or child.text or "").strip().splitlines()[:1]
            message = message[0] if message else ""
        elif child.tag == "skipped":
            outcome = "xfail" if "xfail" in (child.get("type") or "") or "expected" in (child.get("message") or "")\
                else "skipped"
    runs[device][key] = (outcome, message)
both = [k for k in runs["cpu"] if k in runs["tpu"] and "skipped" not in (runs["cpu"][k][0], runs["tpu"][k][0])]
if not both:
    print(f"{name}: no test ran on both devices")
    sys.exit(0)
passed = {d: sum(runs[d][k][0] in ("passed", "xfail") for k in both) for d in runs}
rate = {d: 100.0 * passed[d] / len(both) for d in runs}
print(f"{name}: compared {len(both)}  cpu {passed['cpu']} ({rate['cpu']:.1f}%)  tpu {passed['tpu']} "
      f"({rate['tpu']:.1f}%)  gap {rate['cpu'] - rate['tpu']:.1f} points")
BY_DESIGN = ("is not supported on the tpu device", "Expected all tensors to be on the same device")
refused = [k for k in both if runs["tpu"][k][0] == "failed" and runs["cpu"][k][0] != "failed"
           and any(words in runs["tpu"][k][1] for words in BY_DESIGN)]
if refused:  # a dtype the device does not hold, a CPU operand CUDA refuses too: by design, counted apart
    rest = [k for k in both if k not in refused]
    kept = {d: sum(runs[d][k][0] in ("passed", "xfail") for k in rest) for d in runs}
    print(f"  without the {len(refused)} refusals by design: compared {len(rest)}  cpu {kept['cpu']} "
          f"({100.0 * kept['cpu'] / max(len(rest), 1):.1f}%)  tpu {kept['tpu']} "
          f"({100.0 * kept['tpu'] / max(len(rest), 1):.1f}%)")
for k in sorted(both):
    if runs["tpu"][k][0] == "failed" and runs["cpu"][k][0] != "failed":
        print(f"  tpu only: {k}: {runs['tpu'][k][1][:160]}")
PY
done
exit $status
