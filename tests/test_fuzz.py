"""The schema fuzzer (torchtpu/fuzz): its classifier, its argument generator, and a bounded seeded budget over
every registered overload that fails on any mismatch torchtpu/fuzz/known.json does not list."""

from __future__ import annotations

import zlib

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchtpu.fuzz import known, run
from torchtpu.fuzz.args import TensorArg, make_call
from torchtpu.fuzz.outcome import Outcome, classify
from torchtpu.fuzz.overloads import registered
from torchtpu.fuzz.runner import Report, call_rng, fuzz_one

aten = torch.ops.aten


def _verdict(cpu, tpu, op=aten.add.Tensor):
    call = make_call(op, call_rng(0, str(op), 0))
    return classify(call, cpu, tpu).cls


def _ok(*leaves):
    return Outcome(leaves=list(leaves), args_after=[])


def test_classifier_names_each_class():
    a = torch.tensor([1.0, 2.0, 3.0])
    assert _verdict(_ok(a), _ok(a.clone())) == "ok"
    assert _verdict(_ok(a), _ok(a + 1e-7)) == "ok"  # within float32 tolerance
    assert _verdict(_ok(a), _ok(torch.tensor([1.0, 2.5, 3.0]))) == "value"
    assert _verdict(_ok(a), _ok(torch.tensor([1.0, float("nan"), 3.0]))) == "nan_inf"
    assert _verdict(_ok(torch.tensor([float("inf")])), _ok(torch.tensor([3.0e38]))) == "nan_inf"
    assert _verdict(_ok(a), _ok(a.double())) == "dtype"
    assert _verdict(_ok(a), _ok(a[:2])) == "shape"
    assert _verdict(_ok(a), _ok(1.0)) == "type"
    assert _verdict(_ok(torch.tensor([1, 2])), _ok(torch.tensor([1, 3]))) == "value"
    err, other = Outcome(error=RuntimeError("x")), Outcome(error=ValueError("y"))
    assert _verdict(err, Outcome(error=RuntimeError("z"))) == "both_raise"
    assert _verdict(err, other) == "error_class"
    assert _verdict(err, _ok(a)) == "cpu_raises"
    assert _verdict(_ok(a), err) == "tpu_raises"
    assert _verdict(Outcome(error=NotImplementedError('"foo" not implemented for \'Short\'')), _ok(a)) == \
        "cpu_unsupported"


def test_classifier_takes_a_launch_error_as_the_builtin_it_subclasses():
    """A device-side check raises the launch's ExecutionError class for the builtin CPU raises (IndexExecutionError
    is an IndexError, ExecutionError a RuntimeError): the same class as CPU's, never a looser match."""
    from torchtpu.drivers.base import ExecutionError

    index = Outcome(error=ExecutionError(0, "check_index", IndexError("index 5 is out of range")))
    runtime = Outcome(error=ExecutionError(0, "check_index", RuntimeError("index 5 is out of bounds")))
    assert type(index.error).__name__ == "IndexExecutionError" and index.error.builtin is IndexError
    assert _verdict(Outcome(error=IndexError("index out of range in self")), index) == "both_raise"
    assert _verdict(Outcome(error=RuntimeError("index 5 is out of bounds")), runtime) == "both_raise"
    assert _verdict(Outcome(error=RuntimeError("index 5 is out of bounds")), index) == "error_class"
    assert _verdict(Outcome(error=IndexError("index out of range in self")), runtime) == "error_class"
    assert _verdict(Outcome(error=NotImplementedError("x")), runtime) == "error_class"


def test_classifier_compares_arguments_after_the_call():
    a = torch.zeros(2)
    cpu = Outcome(leaves=[], args_after=[torch.tensor([1.0, 1.0])])
    assert _verdict(cpu, Outcome(leaves=[], args_after=[a])) == "value"  # an in-place write that was dropped


def test_generator_follows_the_schema():
    seen_views, seen_special = set(), False
    for i in range(60):
        call = make_call(aten.index_select.default, call_rng(3, "x", i))
        cpu_args, _ = call.materialize("cpu")
        assert isinstance(call.args[0], TensorArg) and isinstance(cpu_args[0], torch.Tensor)
        index = call.args[2] if len(call.args) > 2 else call.kwargs["index"]
        assert index.base.dtype in (torch.int64, torch.int32)
        seen_views.add(call.args[0].view)
        seen_special |= bool(cpu_args[0].is_floating_point() and (~cpu_args[0].isfinite()).any())
        tpu_args, _ = call.materialize("tpu")
        assert tpu_args[0].device.type == "tpu" and tpu_args[0].stride() == cpu_args[0].stride()
        torch.testing.assert_close(tpu_args[0].cpu(), cpu_args[0], rtol=0, atol=0, equal_nan=True)
    assert len(seen_views) >= 3 and seen_special  # non-contiguous views and NaN/inf values occur


def test_known_entries_have_reasons():
    entries = known.entries()
    assert entries and all(g["reason"] and g["class"] and g["ops"] for g in entries)
    assert known.reason("aten.no_such_op.default", "value", "DEFER_NEVER") is None


def test_budget_has_no_new_findings():
    """One seeded call of every registered overload (DEFER_NEVER; DEFER_AND_FUSE, LAUNCH_BLOCKING and compile
    for a sample): a mismatch known.json does not list fails, with a command that reproduces it."""
    report = run(seed=0, calls_per_op=1)
    assert report.calls > 1000 and len(report.ops) > 1000
    assert report.classes["ok"] > 500
    new = report.new()
    assert not new, "new fuzzer findings (fix them or list them in torchtpu/fuzz/known.json with a reason):\n" + \
        "\n".join(f"{f.op} {f.cls} [{f.mode}]: {f.message}\n  {f.call}\n  {f.repro()}" for f in new)


_OPS = [op for op in registered()]


def _drawn_op(key: int) -> torch._ops.OpOverload:
    """The op a drawn key picks by rendezvous hashing over op names: an op added to or removed from the registered
    list changes only the draws it wins or held (about 1 in len(_OPS)), not every draw after its position."""
    return min(_OPS, key=lambda op: zlib.crc32(f"{op}/{key}".encode()))


def test_hypothesis_drawn_calls():
    """Calls hypothesis draws (op key, seed), derandomized so the budget is the same on every run; every new finding
    among them is reported at once."""
    report = Report()

    @settings(derandomize=True, max_examples=40, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.integers(0, 2**31 - 1), st.integers(1000, 10**6))
    def one(op_key, seed):
        fuzz_one(_drawn_op(op_key), seed, 0, report, {"DEFER_NEVER": 1.0})

    one()
    assert report.calls >= 30
    new = report.new()
    assert not new, "\n".join(f"{f.op} {f.cls}: {f.message}\n  {f.call}\n  {f.repro()}" for f in new)


@pytest.mark.slow
def test_three_calls_per_op_all_modes():
    report = run(seed=2, calls_per_op=3, rates={"DEFER_NEVER": 1.0, "DEFER_AND_FUSE": 1.0, "compile": 0.05})
    assert not report.new(), [f"{f.op} {f.cls}" for f in report.new()]


def test_calls_cpu_crashes_on_are_not_run(monkeypatch):
    """CPU's _segment_reduce_backward aborts the process on integer tensors (seed 2 of the slow test): such calls
    are counted as cpu_crash_skipped and never reach the CPU kernel; float calls of the same overload still run."""
    from torchtpu.fuzz import runner
    from torchtpu.fuzz.overloads import cpu_crashes

    op = aten._segment_reduce_backward.out
    calls = [(i, make_call(op, call_rng(2, str(op), i), 2)) for i in range(40)]
    integer = [i for i, c in calls if cpu_crashes(c)]
    floating = [c for _, c in calls if not cpu_crashes(c)]
    assert integer and floating

    def no_cpu(call, upcast=False):
        raise AssertionError(f"CPU kernel called for {call!r}")

    monkeypatch.setattr(runner, "run_cpu", no_cpu)
    report = Report()
    fuzz_one(op, 2, integer[0], report, {"DEFER_NEVER": 1.0})
    assert report.classes["cpu_crash_skipped"] == 1 and report.calls == 0
