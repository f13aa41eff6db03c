"""The C++ cached one-op launch path (csrc/fast_launch.cpp, execution/fast_launch.py): a repeated call is
launched from the C++ cache with the same result as the Python kernel; anything the key does not determine
(precision, eager mode, argument values and kinds) takes the Python path; TORCHTPU_FAST_LAUNCH=0 turns it off."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import torchtpu
from torchtpu.execution import deferred, fast_launch

pytestmark = [pytest.mark.sim_only("the cache serves drivers whose memory is host memory (the sim)"),
              pytest.mark.usefixtures("launch_cache_live")]


def _hits() -> int:
    return fast_launch.counters()["hits"]


def _twice(fn):
    first = fn()
    before = _hits()
    second = fn()
    return first, second, _hits() - before


def test_a_repeated_op_is_launched_from_the_cache_with_the_same_result(tpu):
    a, b = torch.randn(4, 5), torch.randn(4, 5)
    ta, tb = a.to(tpu), b.to(tpu)
    first, second, hits = _twice(lambda: torch.clamp(ta * tb, min=-0.5, max=0.25))
    assert hits >= 1
    want = torch.clamp(a * b, min=-0.5, max=0.25)
    assert torch.equal(first.cpu(), want) and torch.equal(second.cpu(), want)
    values, indices = torch.max(ta, dim=1)  # two outputs
    values2, indices2 = torch.max(ta, dim=1)
    assert torch.equal(values2.cpu(), a.max(dim=1).values) and torch.equal(indices2.cpu(), a.max(dim=1).indices)


def test_in_place_ops_write_their_first_argument(tpu):
    x = torch.zeros(3, 4, device=tpu)
    y = torch.ones(3, 4, device=tpu)
    before = _hits()
    for _ in range(3):
        out = x.add_(y, alpha=2.0)
        assert out is x
    assert _hits() - before >= 1
    assert torch.equal(x.cpu(), torch.full((3, 4), 6.0))
    assert x._version >= 3  # autograd's version counter still sees each write


def test_argument_values_and_kinds_select_the_entry(tpu):
    x = torch.randn(6).to(tpu)
    c = x.cpu()
    for alpha in (1, 2, 2.5, -0.0, 2.5):  # int, float and the sign of zero are all in the key
        first, second, hits = _twice(lambda alpha=alpha: torch.add(x, x, alpha=alpha).cpu())
        assert torch.equal(first, second) and hits == 1
        torch.testing.assert_close(second, torch.add(c, c, alpha=alpha))
    flags = torch.tensor([True, False, True]).to(tpu)
    for other in (True, 1, True):  # a bool and an int scalar of equal value are different keys
        got = torch.add(flags, other).cpu()
        assert torch.equal(got, torch.add(flags.cpu(), other)) and got.dtype == torch.add(flags.cpu(), other).dtype
    for approximate in ("none", "tanh", "none"):  # string arguments
        got = torch.nn.functional.gelu(x, approximate=approximate).cpu()
        torch.testing.assert_close(got, torch.nn.functional.gelu(c, approximate=approximate))
    for scalar in (0.5, 3.0, 0.5):  # a host 0-d tensor argument is keyed by its value
        got = (x * torch.tensor(scalar)).cpu()
        assert torch.equal(got, c * scalar)
    first, second, hits = _twice(lambda: torch.sum(x, dtype=torch.float64).cpu())  # a dtype argument
    assert hits == 1 and torch.equal(first, second) and second.dtype == torch.float64
    torch.testing.assert_close(second, torch.sum(c, dtype=torch.float64))


def test_precision_is_part_of_the_key(tpu):
    torch.manual_seed(0)
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    ta, tb = a.to(tpu), b.to(tpu)
    results = {}
    for p in ("DEFAULT", "HIGHEST", "DEFAULT", "HIGHEST"):
        with torchtpu.precision(p):
            results.setdefault(p, []).append((ta @ tb).cpu())
    assert torch.equal(results["DEFAULT"][0], results["DEFAULT"][1])
    assert torch.equal(results["HIGHEST"][0], results["HIGHEST"][1])
    assert not torch.equal(results["DEFAULT"][0], results["HIGHEST"][0])
    torch.testing.assert_close(results["HIGHEST"][0], a @ b, rtol=1e-6, atol=1e-5)


def test_deferred_mode_is_not_served_from_the_cache(tpu):
    x = torch.randn(8).to(tpu)
    (x + x).cpu()
    (x + x).cpu()  # cached now
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        before = _hits()
        y = x + x
        assert deferred.pending() and _hits() == before
        assert torch.equal(y.cpu(), (x.cpu() * 2))
    before = _hits()
    (x + x).cpu()
    assert _hits() == before + 1


def test_deferred_mode_records_from_the_cache_with_the_same_results(tpu):
    """In DEFER_AND_FUSE a cached op is recorded into the region by the C++ path (a hit, no Python kernel);
    results and the replayed region match DEFER_NEVER bit for bit."""
    torch.manual_seed(0)
    a, w = torch.randn(6, 5), torch.randn(5, 5)
    ta, tw = a.to(tpu), w.to(tpu)

    def step(x):
        y = torch.tanh(x @ tw) * 0.5
        y.add_(x, alpha=0.25)
        return y.sum(1)

    with torchtpu.eager_mode("DEFER_NEVER"):
        want = [step(ta).cpu() for _ in range(3)]
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        step(ta).cpu()  # the misses store the recording entries
        before, replays = _hits(), deferred.stats.replays
        got = []
        for _ in range(3):
            out = step(ta)
            assert deferred.pending()
            got.append(out.cpu())
        assert _hits() - before >= 3 * 5  # every op of every step (mm, tanh, mul, add_, sum)
        assert deferred.stats.replays - replays >= 2
    assert all(torch.equal(g, w_) for g, w_ in zip(got, want))


@pytest.mark.usefixtures("one_op_regions_kept")  # (a streak left by an earlier test would launch y at once)
def test_a_cached_record_the_region_refuses_runs_the_python_kernel(tpu):
    """A storage the region already holds under another dtype cannot be deferred: the C++ hit hands the call to
    the Python kernel, which flushes the region and runs the op eagerly."""
    x = torch.arange(8, dtype=torch.float32).to(tpu)
    bits = torch.arange(8, dtype=torch.int32).to(tpu)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        (bits + 1).cpu()
        (bits + 1).cpu()  # the int32 add's recording entry is stored
        y = x * 2  # the region holds x's storage as float32
        before = fast_launch.counters()["misses"]
        z = x.view(torch.int32) + 1  # the same storage as int32: refused, run by the Python kernel
        assert fast_launch.counters()["misses"] == before + 1 and not deferred.pending()
        assert torch.equal(z.cpu(), torch.arange(8, dtype=torch.float32).view(torch.int32) + 1)
        assert torch.equal(y.cpu(), torch.arange(8, dtype=torch.float32) * 2)


@pytest.mark.usefixtures("one_op_regions_kept")
def test_an_error_of_a_cached_record_names_the_users_line(tpu):
    table, good, bad = torch.randn(5, 3).to(tpu), torch.tensor([0, 4]).to(tpu), torch.tensor([0, 5]).to(tpu)
    with torchtpu.eager_mode("DEFER_AND_FUSE"):
        table.index_select(0, good).cpu()
        table.index_select(0, good).cpu()
        before = _hits()
        out = table.index_select(0, bad)  # the line the error names
        assert _hits() == before + 1
        line = sys._getframe().f_lineno - 2
        with pytest.raises(RuntimeError, match=rf"index_select.*test_dispatch_cache.py:{line}"):
            out.cpu()


def test_autograd_runs_through_the_cache_on_its_device_thread(tpu):
    torch.manual_seed(0)
    w = torch.randn(5, 3, requires_grad=True)
    tw = w.detach().to(tpu).requires_grad_()
    x = torch.randn(4, 5)
    for _ in range(3):
        tw.grad = None
        (x.to(tpu) @ tw).tanh().sum().backward()
    (x @ w).tanh().sum().backward()
    with torchtpu.precision("HIGHEST"):
        tw.grad = None
        (x.to(tpu) @ tw).tanh().sum().backward()
    torch.testing.assert_close(tw.grad.cpu(), w.grad, rtol=1e-5, atol=1e-6)


def test_errors_still_come_from_the_python_kernel(tpu):
    x = torch.randn(3).to(tpu)
    (x + x).cpu()
    with pytest.raises(RuntimeError, match="broadcast"):
        x + torch.randn(4).to(tpu)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.zeros(3, dtype=torch.int64, device=tpu).add_(x)


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def test_the_path_can_be_turned_off_and_a_bad_value_is_named():
    code = ("import torch, torchtpu\nfrom torchtpu.execution import fast_launch\nx = torch.ones(3, device='tpu')\n"
            "for _ in range(3): y = x + x\nprint(fast_launch.counters()['hits'], y.cpu().tolist())")
    off = _run(code, TORCHTPU_FAST_LAUNCH="0")
    assert off.returncode == 0 and off.stdout.split()[0] == "0", off.stderr
    on = _run(code, TORCHTPU_FAST_LAUNCH="1")
    assert on.returncode == 0 and int(on.stdout.split()[0]) >= 1, on.stderr
    bad = _run("import torchtpu", TORCHTPU_FAST_LAUNCH="yes", TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert bad.returncode != 0 and "TORCHTPU_FAST_LAUNCH='yes'" in bad.stderr and "valid values: 0" in bad.stderr


def test_cached_launches_read_strided_views_and_narrow_dtypes(tpu):
    base = torch.randn(6, 8)
    view = base.to(tpu)[1:5, ::2].t()  # an offset, strided, transposed view
    first, second, hits = _twice(lambda: (view * 2.0).cpu())
    assert hits == 1 and torch.equal(first, second) and torch.equal(second, base[1:5, ::2].t() * 2.0)
    for dtype in (torch.bfloat16, torch.int32, torch.bool, torch.complex64):
        x = torch.randn(5).to(dtype) if dtype is not torch.bool else torch.tensor([True, False, True, True, False])
        tx = x.to(tpu)
        first, second, hits = _twice(lambda tx=tx: (tx + tx).cpu())
        assert hits == 1 and torch.equal(first, second) and torch.equal(second, x + x), dtype
    empty = torch.zeros(0, 3, device=tpu)
    _, second, hits = _twice(lambda: (empty + 1).cpu())
    assert hits == 1 and second.shape == (0, 3)


def test_foreach_ops_are_served_with_their_lists(tpu):
    cpu = [torch.rand(3, 2) + 0.5, torch.rand(4) + 0.5]
    xs = [t.to(tpu) for t in cpu]
    ys = [t.to(tpu) for t in cpu]
    first, second, hits = _twice(lambda: torch._foreach_sqrt(xs))  # returns a new list
    assert hits == 1 and type(second) is type(torch._foreach_sqrt(cpu)) and len(second) == 2
    for f, s, c in zip(first, second, cpu):
        assert torch.equal(f.cpu(), s.cpu())
        torch.testing.assert_close(s.cpu(), c.sqrt())
    before = _hits()
    for _ in range(3):
        torch._foreach_add_(ys, xs, alpha=0.5)  # writes every tensor of the first list
        torch._foreach_mul_(ys, [2.0, 3.0])  # a Scalar[] argument
    assert _hits() - before >= 4
    for y, c in zip(ys, cpu):
        want = c.clone()
        for _ in range(3):
            want = (want + 0.5 * c) * (2.0 if c.dim() == 2 else 3.0)
        torch.testing.assert_close(y.cpu(), want, rtol=1e-6, atol=1e-6)
