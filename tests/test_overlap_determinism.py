"""ATen's input/output memory-overlap refusals (execution/overlap.py) and its nondeterminism alerts
(execution/determinism.py) on tpu as on CPU: same exception class and words, in every eager mode, and also when the
same call (same shapes, strides and offsets) was first cached by the C++ launch path with tensors that do not
share memory, or with deterministic algorithms off (csrc/fast_launch.cpp must not serve such a call)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
OVERLAP = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single"


def _buf(device: str, n: int = 12, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.arange(n, device=device).to(dtype)


# name -> fn(a, b): `a` the storage written, `b` the storage of the other input. Called with a is b (overlap:
# CPU raises) and with distinct storages of the same layout (no overlap: CPU's result).
CASES: dict[str, Callable[[torch.Tensor, torch.Tensor], object]] = {
    "add_out": lambda a, b: torch.add(b[1:6], 1.0, out=a[0:5]),
    "mul_partial": lambda a, b: a[0:5].mul_(b[1:6]),
    "copy_partial": lambda a, b: a[0:5].copy_(b[1:6]),
    "copy_transposed": lambda a, b: a[:9].view(3, 3).t().copy_(b[:9].view(3, 3)),
    "neg_out_transposed": lambda a, b: torch.neg(b[:9].view(3, 3), out=a[:9].view(3, 3).t()),
    "lshift_partial": lambda a, b: a[0:5].__ilshift__(b[1:6]),
    "index_add_source": lambda a, b: a[:6].index_add_(0, torch.tensor([2, 1, 0], device=a.device), b[:3]),
    "index_copy_source": lambda a, b: a[:6].index_copy_(0, torch.tensor([2, 1, 0], device=a.device), b[:3]),
    "scatter_src": lambda a, b: a[:6].scatter_(0, torch.tensor([2, 1, 0], device=a.device), b[:6]),
    "put_source": lambda a, b: a[:6].put_(torch.tensor([2, 1, 0], device=a.device), b[:3]),
    "index_put_values": lambda a, b: a[:6].index_put_((torch.tensor([2, 1, 0], device=a.device),), b[:3]),
}
INT_CASES = {"lshift_partial"}


def _outcome(fn: Callable[[], object]) -> tuple[str, str]:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - compared with CPU's
        return type(exc).__name__, str(exc).split("\n")[0]
    return "ok", ""


def _run(name: str, device: str, aliased: bool) -> tuple[tuple[str, str], torch.Tensor]:
    dtype = torch.int64 if name in INT_CASES else torch.float32
    a = _buf(device, dtype=dtype)
    b = a if aliased else _buf(device, dtype=dtype) + 1
    outcome = _outcome(lambda: CASES[name](a, b))
    return outcome, a.cpu()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_overlap_raises_as_on_cpu_even_after_a_cached_call(name: str, mode: str) -> None:
    want_clean, want_a = _run(name, "cpu", aliased=False)
    want_aliased, want_alias_a = _run(name, "cpu", aliased=True)
    assert want_clean == ("ok", "") and want_aliased[0] == "RuntimeError" and OVERLAP in want_aliased[1]
    with torch.tpu.eager_mode(mode):
        for _ in range(2):  # the second call may be served by the C++ launch cache
            got_clean, got_a = _run(name, "tpu", aliased=False)
            assert got_clean == want_clean and torch.equal(got_a, want_a)
        got_aliased, got_alias_a = _run(name, "tpu", aliased=True)
    assert got_aliased == want_aliased
    assert torch.equal(got_alias_a, want_alias_a)  # nothing written


# full overlap where ATen allows it: the same view read and written (an in-place op reading self twice, an out=
# tensor that is the input itself, a copy onto the same view): CPU's result, also after a cached call
ALLOWED: dict[str, Callable[[torch.Tensor, torch.Tensor], object]] = {
    "add_self": lambda a, b: a[0:5].add_(b[0:5]),
    "mul_out_self": lambda a, b: torch.mul(b[1:6], 2.0, out=a[1:6]),
    "copy_same_view": lambda a, b: a[2:7].copy_(b[2:7]),
    "add_out_disjoint_views": lambda a, b: torch.add(b[6:9], 1.0, out=a[0:3]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_full_or_disjoint_overlap_runs_as_on_cpu(name: str, mode: str) -> None:
    a_cpu = _buf("cpu")
    ALLOWED[name](a_cpu, a_cpu)
    with torch.tpu.eager_mode(mode):
        for _ in range(2):
            ALLOWED[name](_buf("tpu"), _buf("tpu") + 1)
        a = _buf("tpu")
        ALLOWED[name](a, a)
    assert torch.equal(a.cpu(), a_cpu)


STRICT: dict[str, Callable[[torch.Tensor], object]] = {  # ATen's assert_no_overlap: even the same tensor
    "put_index_self": lambda i: i.put_(i, i),
    "scatter_src_self": lambda i: i.scatter_(0, i, i),
    "index_add_index_self": lambda i: i.index_add_(0, i, i.clone()),
    "index_fill_index_self": lambda i: i.index_fill_(0, i, 0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(STRICT))
def test_no_overlap_ops_refuse_the_same_tensor(name: str, mode: str) -> None:
    want = _outcome(lambda: STRICT[name](torch.tensor([2, 1, 0])))
    assert want[0] == "RuntimeError" and OVERLAP in want[1]
    with torch.tpu.eager_mode(mode):
        got = _outcome(lambda: STRICT[name](torch.tensor([2, 1, 0], device="tpu")))
    assert got == want


@pytest.mark.parametrize("name", ["masked_fill", "index_fill", "index_put"])
def test_expanded_writes_warn_as_on_cpu(name: str) -> None:
    def call(device: str) -> list[str]:
        x = torch.rand(1, device=device).expand(6)
        mask = torch.tensor([True, False, True, True, False, False], device=device)
        ind = torch.tensor([2, 1, 0], device=device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if name == "masked_fill":
                x.masked_fill_(mask, 0.0)
            elif name == "index_fill":
                x.index_fill_(0, ind, 1.0)
            else:
                x.index_put_((ind,), torch.rand(1, device=device))
        # (CPU's TORCH_WARN adds where in ATen it was raised)
        return [str(w.message).split(" (Triggered internally")[0] for w in caught
                if issubclass(w.category, UserWarning)]

    want = [m for m in call("cpu") if "expanded tensors" in m]
    assert want
    assert [m for m in call("tpu") if "expanded tensors" in m] == want


# --- nondeterminism alerts -------------------------------------------------------------------------------------

def _unpool(device: str, dim: int) -> torch.Tensor:
    module = {1: torch.nn.MaxUnpool1d, 2: torch.nn.MaxUnpool2d, 3: torch.nn.MaxUnpool3d}[dim](3, 1)
    x = torch.randn(1, 1, *([7] * dim), device=device)
    return module(x, torch.zeros_like(x, dtype=torch.long))


ALERTS: dict[str, Callable[[str], object]] = {
    "put_": lambda d: torch.zeros(10, device=d).put_(torch.tensor([0, 0], device=d),
                                                     torch.tensor([0.0, 1.0], device=d)),
    "put": lambda d: torch.zeros(10, device=d).put(torch.tensor([0, 0], device=d),
                                                   torch.tensor([0.0, 1.0], device=d), accumulate=False),
    "put_accumulate": lambda d: torch.zeros(10, device=d).put_(torch.tensor([0, 0], device=d),
                                                               torch.tensor([0.0, 1.0], device=d), accumulate=True),
    "max_unpool1d": lambda d: _unpool(d, 1),
    "max_unpool2d": lambda d: _unpool(d, 2),
    "max_unpool3d": lambda d: _unpool(d, 3),
    "add": lambda d: torch.ones(3, device=d) + torch.ones(3, device=d),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(ALERTS))
def test_nondeterministic_alerts_as_on_cpu_even_after_a_cached_call(name: str, mode: str) -> None:
    fn = ALERTS[name]
    was = torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        want = _outcome(lambda: fn("cpu"))
        with torch.tpu.eager_mode(mode):
            torch.use_deterministic_algorithms(False)
            for _ in range(2):  # cached by the C++ launch path where it may be
                assert _outcome(lambda: fn("tpu")) == ("ok", "")
            torch.use_deterministic_algorithms(True)
            got = _outcome(lambda: fn("tpu"))
            torch.use_deterministic_algorithms(True, warn_only=True)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fn("tpu")
    finally:
        torch.use_deterministic_algorithms(was)
    assert got == want
    alerted = [str(w.message) for w in caught if "does not have a deterministic" in str(w.message)]
    if want[0] == "ok":
        assert not alerted
    else:
        assert want[0] == "RuntimeError" and "does not have a deterministic implementation" in want[1]
        assert alerted and alerted[0].split(",")[0] == want[1].split(",")[0]


@pytest.mark.sim_only("the C++ launch cache serves drivers whose memory is host memory (the sim)")
@pytest.mark.usefixtures("launch_cache_live")
def test_disjoint_views_of_one_storage_are_still_served_from_the_launch_cache() -> None:
    from torchtpu.execution import fast_launch

    a_cpu = _buf("cpu")
    a = _buf("tpu")
    with torch.tpu.eager_mode("DEFER_NEVER"):
        for _ in range(3):
            a[0:4].add_(a[6:10])
            a_cpu[0:4].add_(a_cpu[6:10])
        before = fast_launch.counters()["hits"]
        a[0:4].add_(a[6:10])
        a_cpu[0:4].add_(a_cpu[6:10])
        hits = fast_launch.counters()["hits"] - before
    assert hits == 1
    assert torch.equal(a.cpu(), a_cpu)


@pytest.mark.parametrize("mode", MODES)
def test_out_partially_overlapping_the_input_of_an_op_cpu_does_not_check_is_refused(mode: str) -> None:
    """CPU's sum/mm out= kernels do not check: CPU returns what its loop order left, which tpu (reading its inputs
    before writing) cannot reproduce; tpu refuses with ATen's words rather than return other values."""
    with torch.tpu.eager_mode(mode):
        for call in (lambda a, b: torch.sum(b[0:6].view(2, 3), 0, out=a[1:4]),
                     lambda a, b: torch.mm(b[0:4].view(2, 2), b[4:8].view(2, 2), out=a[2:6].view(2, 2))):
            for _ in range(2):  # disjoint storages first: cached where they may be
                call(_buf("tpu"), _buf("tpu"))
            x = _buf("tpu")
            with pytest.raises(RuntimeError, match=OVERLAP):
                call(x, x)
            assert torch.equal(x.cpu(), _buf("cpu"))
