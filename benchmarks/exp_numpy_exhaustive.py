"""All 2^32 float32 inputs: drivers/sim/exp_numpy.expf against the running np.exp, bit for bit.

Run: `.venv/bin/python benchmarks/exp_numpy_exhaustive.py`. Prints the numpy version, the dispatch target of its float32
exp, the number of differing inputs (with the first few) and the runtime. The module is loaded from its file, so
the check needs neither torch nor the shim.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import time

import numpy as np

CHUNK = 1 << 24


def main() -> int:
    path = pathlib.Path(__file__).resolve().parents[1] / "drivers" / "sim" / "exp_numpy.py"
    spec = importlib.util.spec_from_file_location("exp_numpy", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    print(f"numpy {np.__version__}, float32 exp target {mod._dispatch_target()}, self-check: {mod.REASON or 'ok'}")
    start = time.perf_counter()
    bad: list[int] = []
    count = 0
    for lo in range(0, 1 << 32, CHUNK):
        x = np.arange(lo, lo + CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32)
        with np.errstate(all="ignore"):
            expected = np.exp(x).view(np.uint32)
        got = mod.exp(x).view(np.uint32)
        diff = np.flatnonzero(expected != got)
        count += diff.size
        bad.extend(int(lo + i) for i in diff[: max(0, 10 - len(bad))])
    elapsed = time.perf_counter() - start
    print(f"{count} of 2^32 inputs differ ({', '.join(f'{b:#010x}' for b in bad) or 'none'}); {elapsed:.1f} s")
    return 1 if count else 0


if __name__ == "__main__":
    sys.exit(main())
