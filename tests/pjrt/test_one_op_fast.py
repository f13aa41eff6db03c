"""pjrt(cpu) DEFER_NEVER: a repeated cached op runs by its prepared launch (execution/one_op_fast.py,
drivers/pjrt/one_op.py) with CPU PyTorch's results: fresh, in-place and view writes, changing scalar values,
fresh input storages each call, a storage read through another dtype (declined: the long way), two outputs, and
an op that fails on a prepared launch raises its own error at its call (a subprocess: the driver is per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import json, torch, torchtpu
    from torchtpu.execution import one_op_fast
    out = {"bad": []}
    def check(name, got, want):
        if not torch.equal(got.cpu(), want):
            out["bad"].append(name)
    a, b = torch.randn(6, 5), torch.randn(6, 5)
    ta, tb = a.to("tpu"), b.to("tpu")
    for i in range(6):
        s = 0.25 * i
        check(f"fresh{i}", ta * tb + s, a * b + s)
        ta.mul_(1.5 - s); a.mul_(1.5 - s)
        ta[:, 1:3].add_(s); a[:, 1:3].add_(s)
        check(f"inplace{i}", ta, a)
        x = torch.randn(7, 3)
        check(f"new_storage{i}", x.to("tpu").relu(), x.relu())
        v, j = ta.max(1)
        vc, jc = a.max(1)
        check(f"max_values{i}", v, vc); check(f"max_indices{i}", j, jc)
    f = torch.randn(8)
    tf = f.to("tpu")
    for i in range(4):  # the float storage read as int32: its buffer is float32, the prepared launch declines
        check(f"reinterpret{i}", tf.view(torch.int32) + 1, f.view(torch.int32) + 1)
        tf = tf.view(torch.int32).add(i).view(torch.float32); f = f.view(torch.int32).add(i).view(torch.float32)
    out["launches"] = one_op_fast.launches
    table, good, bad = torch.randn(5, 3), torch.tensor([0, 4]), torch.tensor([0, 5])
    tt, tg, tbad = table.to("tpu"), good.to("tpu"), bad.to("tpu")
    for _ in range(5):  # a miss, then the long way twice (the second prepares the launch), then prepared
        check("index_select", tt.index_select(0, tg), table.index_select(0, good))
    before = one_op_fast.launches
    try:
        tt.index_select(0, tbad)  # LINE
        out["error"] = None
    except IndexError as exc:
        out["error"] = str(exc)
    except RuntimeError as exc:
        out["error"] = str(exc)
    out["prepared_before_error"] = before > out["launches"]
    check("after", tt.index_select(0, tg), table.index_select(0, good))
    print(json.dumps(out))
''')


def test_prepared_one_op_launches_match_cpu_and_raise_at_the_call():
    env = {**os.environ, "TORCHTPU_DRIVER": "pjrt", "TORCHTPU_PJRT_PLATFORM": "cpu"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["bad"] == []
    assert out["launches"] >= 20  # most repeated ops took the prepared launch
    assert out["prepared_before_error"]
    line = next(i for i, text in enumerate(SCRIPT.splitlines(), 1) if "# LINE" in text)
    assert out["error"] is not None and "index_select" in out["error"] and f"<string>:{line}" in out["error"]
