"""pjrt(cpu) DEFER_NEVER through the C++ launch cache (deferred.record_cached, _launch_one): a repeated op runs as
its cached one-op region with CPU PyTorch's results, in-place and view writes included, and an op that fails on a
cached launch raises its own error at its call, naming the user's line (a subprocess: the driver is per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import json, sys, torch, torchtpu
    from torchtpu.execution import deferred, fast_launch
    out = {}
    a, b = torch.randn(6, 5), torch.randn(6, 5)
    ta, tb = a.to("tpu"), b.to("tpu")
    for _ in range(4):
        ta[:, 1:3].add_(1.0)
        a[:, 1:3].add_(1.0)
        r = ta * tb + 0.5
    out["equal"] = torch.equal(r.cpu(), a * b + 0.5) and torch.equal(ta.cpu(), a)
    out["values"] = torch.equal((ta * tb + 0.5).cpu(), a * b + 0.5)
    out["one_ops"] = len(deferred._one_ops)
    out["hits"] = fast_launch.counters()["hits"]
    table, good, bad = torch.randn(5, 3).to("tpu"), torch.tensor([0, 4]).to("tpu"), torch.tensor([0, 5]).to("tpu")
    for _ in range(3):
        table.index_select(0, good)
    try:
        table.index_select(0, bad)  # LINE
        out["error"] = None
    except RuntimeError as exc:
        out["error"] = str(exc)
    out["after"] = torch.equal(table.index_select(0, good).cpu(), table.cpu().index_select(0, good.cpu()))
    print(json.dumps(out))
''')


def test_cached_one_op_regions_match_cpu_and_raise_at_the_call():
    env = {**os.environ, "TORCHTPU_DRIVER": "pjrt", "TORCHTPU_PJRT_PLATFORM": "cpu"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["equal"] and out["values"] and out["after"]
    assert out["one_ops"] >= 3 and out["hits"] >= 6  # mul, add, add_ served from the cache, as one-op regions
    line = next(i for i, text in enumerate(SCRIPT.splitlines(), 1) if "# LINE" in text)
    assert out["error"] is not None and "index_select" in out["error"] and f"<string>:{line}" in out["error"]
