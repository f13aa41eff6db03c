"""out= dtype strictness (torchtpu/ops/out_rules.py): the yaml rule matches a yaml parse, CPU's raise/accept on a
castable-but-different out dtype agrees with the table for every registered out= overload the probe can call, and
tpu raises or accepts as CPU does."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from pathlib import Path

import out_probe_worker
import pytest
import torch

from torchtpu.ops import out_rules

aten = torch.ops.aten
HERE = Path(__file__).resolve().parent

def test_scan_matches_a_yaml_parse():
    yaml = pytest.importorskip("yaml")
    with open(out_rules.yaml_path(), encoding="utf-8") as f:
        entries = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    expected = set()
    for e in entries:
        name, _, rest = e["func"].partition("(")
        name = name if "." in name else f"{name}.default"
        if e.get("structured") and e.get("structured_inherits") != "TensorIteratorBase":
            expected.add(name)
        for auto in str(e.get("autogen", "")).split(","):
            if auto.strip():
                expected.add(auto.strip() if "." in auto else f"{auto.strip()}.default")
    assert out_rules.yaml_exact() == expected
    assert "replication_pad2d.out" in expected and "add.out" not in expected


def _probe_all() -> dict[str, list | None]:
    """Every out= overload's CPU verdict from tests/out_probe_worker.py; an overload that crashes CPU or stalls
    (no verdict in 60 s) gets None and the worker restarts after it."""
    total = len(out_probe_worker.out_overloads())
    verdicts: dict[str, list | None] = {}
    start = 0
    while start < total:
        proc = subprocess.Popen([sys.executable, str(HERE / "out_probe_worker.py"), str(start)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            while select.select([proc.stdout], [], [], 60)[0] and (line := proc.stdout.readline()):
                i, name, verdict = json.loads(line)
                verdicts[name] = verdict
                start = i + 1
        finally:
            proc.kill()
            proc.wait()
        if start < total and str(out_probe_worker.out_overloads()[start]) not in verdicts:
            verdicts[str(out_probe_worker.out_overloads()[start])] = None  # it crashed or stalled CPU
            start += 1
    return verdicts


def test_table_predicts_cpu_for_each_out_overload():
    outs = {str(op): op for op in out_probe_worker.out_overloads()}
    verdicts = {outs[name]: v for name, v in _probe_all().items()}
    probed = {op: v for op, v in verdicts.items() if v is not None}
    wrong = [f"{op}: cpu {'refuses' if v[0] else 'accepts'} {v[2]} for {v[1]} ({v[3][:80]}), table says "
             f"{'exact' if out_rules.requires_exact(op) else 'castable'}"
             for op, v in probed.items() if v[0] != out_rules.requires_exact(op)]
    assert len(probed) > 350, len(probed)
    assert sum(v[0] for v in probed.values()) > 150
    assert not wrong, "\n".join(wrong)


def test_tpu_follows_the_rule():
    x = torch.randn(1, 2, 4, 4)
    for device in ("cpu", "tpu"):
        d = x.to(device)
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double instead"):
            aten.replication_pad2d.out(d, [1, 1, 1, 1], out=torch.empty(0, dtype=torch.float64, device=device))
        out = torch.empty(0, dtype=torch.float64, device=device)
        torch.add(d, 1, out=out)  # TensorIterator: castable is enough
        assert out.dtype == torch.float64
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
            aten.isnan.out(d, out=torch.empty(0, dtype=torch.float32, device=device))
        summed = torch.empty(0, dtype=torch.float64, device=device)
        torch.sum(d, 1, out=summed)  # structured, but the meta takes the out dtype (LENIENT)
        torch.testing.assert_close(summed.cpu(), x.double().sum(1))


@pytest.mark.parametrize("call", [
    lambda x, **kw: torch.mean(x, 1, **kw), lambda x, **kw: torch.sum(x, 1, **kw),
    lambda x, **kw: torch.prod(x, 1, **kw), lambda x, **kw: torch.ops.aten.cumsum.out(x, 1, **kw),
], ids=["mean", "sum", "prod", "cumsum"])
def test_lenient_reductions_are_exact_when_dtype_is_given(call):
    # The meta takes the out dtype as the result dtype only with dtype=None; with dtype= CPU checks out against it.
    x = torch.randn(2, 3)
    for device in ("cpu", "tpu"):
        d = x.to(device)
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype c10::Half, but got float instead"):
            call(d, dtype=torch.float16, out=torch.empty(0, device=device))
        out = torch.empty(0, dtype=torch.float16, device=device)
        call(d, out=out)
        assert out.dtype == torch.float16


def test_exact_rule_is_not_bypassed_by_the_launch_cache():
    x = torch.randn(1, 2, 4, 4, device="tpu")
    for _ in range(3):  # cached with a float32 out
        aten.replication_pad2d.out(x, [1, 1, 1, 1], out=torch.empty(1, 2, 6, 6, device="tpu"))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        aten.replication_pad2d.out(x, [1, 1, 1, 1], out=torch.empty(1, 2, 6, 6, dtype=torch.float64, device="tpu"))


def test_exact_set_size():
    strict = [op for op in out_probe_worker.out_overloads() if out_rules.requires_exact(op)]
    assert len(strict) > 200


@pytest.mark.parametrize("call", [
    lambda d: torch.eye(3, out=torch.empty(0, dtype=torch.bool, device=d)),
    lambda d: torch.eye(2, 3, out=torch.empty(0, dtype=torch.uint8, device=d)),
    lambda d: torch.ops.aten.full.out([3, 1, 1], -1, out=torch.empty(1, 1, 5, dtype=torch.bool, device=d)),
    lambda d: torch.ops.aten.full.out([2], -1.5, out=torch.empty(0, dtype=torch.int8, device=d)),
    lambda d: torch.ops.aten._efficientzerotensor.out([3, 4, 2], out=torch.empty(3, 3, dtype=torch.uint8, device=d)),
])
def test_factories_fill_an_out_tensor_of_any_dtype(call):
    """eye/full/_efficientzerotensor out= fill the out tensor in its dtype on CPU: a bool or uint8 out= where the
    promotion rule's float/int64 "can't be cast" (the tpu raised; issue 17's fuzzer)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a resized non-empty out=
        want, got = call("cpu"), call("tpu").cpu()
    assert got.dtype == want.dtype and torch.equal(got, want)
