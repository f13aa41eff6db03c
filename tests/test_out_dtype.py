"""out= dtype strictness (torchtpu/ops/out_rules.py): the yaml rule matches a yaml parse, CPU's raise/accept on a
castable-but-different out dtype agrees with the table for every registered out= overload the probe can call, and
tpu raises or accepts as CPU does."""

from __future__ import annotations

import json
import os
import warnings

import pytest
import torch

from torchtpu.fuzz.args import Unsupported, make_call
from torchtpu.fuzz.overloads import registered
from torchtpu.fuzz.runner import call_rng
from torchtpu.ops import out_rules, registry

aten = torch.ops.aten

# Same kind, castable, different: the out dtype the probe substitutes for the one CPU accepted.
_OTHER = {torch.bool: torch.uint8, torch.uint8: torch.int16, torch.int8: torch.int16, torch.int16: torch.int32,
          torch.int32: torch.int64, torch.int64: torch.int32, torch.float16: torch.float32,
          torch.bfloat16: torch.float32, torch.float32: torch.float64, torch.float64: torch.float32,
          torch.complex64: torch.complex128, torch.complex128: torch.complex64}
_DTYPE_WORDS = ("dtype", "type", "Found dtype", "scalar type", "non-boolean")


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


def _probe(op: torch._ops.OpOverload) -> list | None:
    """[cpu refuses, dtype accepted, dtype tried, message] for the first fuzzer call CPU accepts, or None."""
    names = registry._out_args(op)
    for seed in range(16):
        try:
            call = make_call(op, call_rng(seed, str(op), 0), seed)
        except Unsupported:
            return None
        except Exception:
            continue
        args, kw = call.materialize("cpu")
        first = kw[names[0]]
        if isinstance(first, list) and not first:
            continue
        try:
            op(*args, **kw)
        except Exception:
            continue
        accepted = (first[0] if isinstance(first, list) else first).dtype
        if accepted not in _OTHER:
            continue
        args, kw = call.materialize("cpu")
        other = torch.empty(0, dtype=_OTHER[accepted])
        kw[names[0]] = [other, *kw[names[0]][1:]] if isinstance(kw[names[0]], list) else other
        try:
            op(*args, **kw)
            return [False, str(accepted), str(other.dtype), ""]
        except Exception as e:  # a raise about something else than the dtype proves nothing
            msg = str(e)
            return [True, str(accepted), str(other.dtype), msg] if any(w in msg for w in _DTYPE_WORDS) else None
    return None


def _forked(op: torch._ops.OpOverload) -> list | None:
    """`_probe` in a child process: some CPU kernels crash on fuzzed arguments (a segfault is not a verdict)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                data = json.dumps(_probe(op))
        except BaseException:
            data = "null"
        os.write(w, data.encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data) if data else None


def test_table_predicts_cpu_for_each_out_overload():
    outs = [op for op in registered() if registry.schema_kind(op) == "out"]
    verdicts = {op: _forked(op) for op in outs}
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


def test_exact_rule_is_not_bypassed_by_the_launch_cache():
    x = torch.randn(1, 2, 4, 4, device="tpu")
    for _ in range(3):  # cached with a float32 out
        aten.replication_pad2d.out(x, [1, 1, 1, 1], out=torch.empty(1, 2, 6, 6, device="tpu"))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        aten.replication_pad2d.out(x, [1, 1, 1, 1], out=torch.empty(1, 2, 6, 6, dtype=torch.float64, device="tpu"))


def test_exact_set_size():
    strict = [op for op in registered() if registry.schema_kind(op) == "out" and out_rules.requires_exact(op)]
    assert len(strict) > 200
