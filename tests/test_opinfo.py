"""OpInfo conformance, bounded for CI: the harness itself (fallback and mismatch detection, tie and random
handling), and a fixed sample of PyTorch's op_db that must keep the status recorded in docs/op-coverage.json.
The full sweep is `python -m torchtpu.conformance` (docs/op-coverage.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from torch.testing._internal.opinfo.core import OpInfo, SampleInput

from torchtpu.conformance import harness, skips

COVERAGE = Path(__file__).resolve().parents[1] / "docs" / "op-coverage.json"
RANK = {"native": 0, "fallback": 1, "skip": 1, "fail": 2}


def _samples(op, device, dtype, requires_grad, **kwargs):
    for shape in ((3,), (2, 4)):
        yield SampleInput(torch.linspace(-2, 2, int(torch.tensor(shape).prod()), dtype=dtype)
                          .reshape(shape).requires_grad_(requires_grad))


def _info(name, fn, **kwargs):
    return OpInfo(name, op=fn, sample_inputs_func=_samples, dtypes=(torch.float32, torch.int64), **kwargs)


@pytest.fixture(scope="module")
def cpu_only_op():
    lib = torch.library.Library("tputest", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    yield torch.ops.tputest.twice.default
    lib._destroy()


def test_native_entry(tpu):
    r = harness.run_entry(_info("tanh_like", torch.tanh), "float32")
    assert (r.status, r.samples, r.grad_samples, r.fallback_ops) == ("native", 2, 2, {})


def test_fallback_is_detected(tpu, cpu_only_op):
    r = harness.run_entry(_info("cpu_only", cpu_only_op, supports_autograd=False), "float32")
    assert r.status == "fallback" and r.fallback_ops == {"tputest.twice.default": 2}


def test_mismatch_is_a_failure(tpu):
    wrong = lambda x: x + 1 if x.device.type == "tpu" else x  # noqa: E731
    r = harness.run_entry(_info("wrong", wrong), "float32")
    assert r.status == "fail" and "sample 0" in r.reason and "not close" in r.reason


def test_gradient_mismatch_is_a_failure(tpu):
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.tpu = x.device.type == "tpu"
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * (4 if ctx.tpu else 3)

    r = harness.run_entry(_info("bad_grad", Bad.apply), "float32")
    assert r.status == "fail" and "grad[0]" in r.reason


def test_integer_outputs_compare_exactly(tpu):
    off_by_one = lambda x: x + 1 if x.device.type == "tpu" and x.dtype == torch.int64 else x  # noqa: E731
    assert harness.run_entry(_info("off", off_by_one), "int64").status == "fail"


def test_skips_have_reasons():
    for name, reason in skips.SKIP_ALL.items():
        assert reason and len(reason) > 10, name
    assert not skips.RANDOM & set(skips.SKIP_ALL)


def test_ties_pick_equal_elements():
    x = torch.tensor([1.0, 2.0, 1.0])
    ours = torch.return_types.sort((x.sort().values.to("tpu"), torch.tensor([2, 0, 1]).to("tpu")))
    assert harness.ties_only(x, ours, torch.return_types.sort((x.sort().values, torch.tensor([0, 2, 1]))))
    wrong = torch.return_types.sort((x.sort().values.to("tpu"), torch.tensor([1, 0, 2]).to("tpu")))
    assert not harness.ties_only(x, wrong, torch.return_types.sort((x.sort().values, torch.tensor([0, 2, 1]))))


def test_ks_statistic():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(4000, generator=g), torch.randn(4000, generator=g)
    assert harness._ks_statistic(a, b) < 0.05
    assert harness._ks_statistic(a, b + 0.5) > 0.15


def _recorded() -> dict[tuple[str, str], dict]:
    data = json.loads(COVERAGE.read_text())
    return {(r["name"], r["dtype"]): r for r in data["results"]}


def test_coverage_table_is_complete():
    """Every op_db entry and CPU-supported dtype has a recorded status; skips carry a reason."""
    recorded = _recorded()
    missing = [(harness.entry_name(op), d) for op, d in harness.tasks_for(harness.load_op_db(), list(harness.DTYPES))
               if (harness.entry_name(op), d) not in recorded]
    assert not missing, missing[:10]
    assert all(r["reason"] for r in recorded.values() if r["status"] in ("skip", "fail"))


# Every 12th entry (about 60), float32 and int64, at most 3 samples each: a CI-sized slice of the sweep.
CI_EVERY, CI_SAMPLES = 12, 3


def test_bounded_sweep_keeps_recorded_status(tpu):
    recorded = _recorded()
    ops = harness.select(harness.load_op_db(), every=CI_EVERY)
    tasks = harness.tasks_for(ops, ["float32", "int64"])
    start = time.perf_counter()
    results = harness.run_many(tasks, max_samples=CI_SAMPLES, timeout=60, progress=False)
    elapsed = time.perf_counter() - start
    worse = []
    for r in results:
        before = recorded.get((r.name, r.dtype))
        if before is not None and RANK[r.status] > RANK[before["status"]]:
            worse.append(f"{r.name} {r.dtype}: {before['status']} -> {r.status} ({r.reason or r.fallback_ops})")
    assert not worse, "\n".join(worse)
    native = sum(r.status == "native" for r in results)
    assert native >= 0.8 * len(results), f"only {native} of {len(results)} native"
    assert elapsed < 600, f"bounded sweep took {elapsed:.0f} s"  # about 130 s on two quiet cores
