"""Device-side asserts (ops/device_asserts.py): torch._assert_async checked where the program runs, without a read
back, and binary_cross_entropy's element range checked through it as CPU's kernel checks it."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

import torchtpu
from torchtpu.execution import deferred

F = torch.nn.functional
aten = torch.ops.aten


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("value", [1, True, 0.5, -3, float("nan")])
def test_a_nonzero_value_passes(mode: str, value: object) -> None:
    with torch.tpu.eager_mode(mode):
        torch._assert_async(torch.tensor(value, device="tpu"), "unused")
        torch._assert_async(torch.tensor([value], device="tpu"))
        torch.tpu.synchronize()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("value", [0, False, 0.0, -0.0])
def test_a_zero_raises_cpus_error(mode: str, value: object) -> None:
    assert_refused_as_cpu(lambda d: torch._assert_async(torch.tensor(value, device=d), "step {3}: loss diverged"), mode)
    assert_refused_as_cpu(lambda d: torch._assert_async(torch.tensor(value, device=d)), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(0,), (2,), (1, 3)])
def test_not_one_value_raises_at_the_call(mode: str, shape: tuple[int, ...]) -> None:
    assert_refused_as_cpu(lambda d: torch._assert_async(torch.ones(shape, device=d), "m"), mode)


def test_asserting_neither_reads_back_nor_flushes() -> None:
    torchtpu.reset_fallback_counts()
    x = torch.tensor([1.0, 2.0], device="tpu")
    with torch.tpu.eager_mode("DEFER_AND_FUSE"):
        y = x * 2
        torch._assert_async((y > 0).all(), "positive")
        assert deferred.pending()  # the assert is recorded into the region, not a host read of its condition
        torch.tpu.synchronize()
    assert torchtpu.fallback_counts() == {}
    assert y.cpu().tolist() == [2.0, 4.0]


def test_a_failed_assert_fails_its_region_from_there() -> None:
    x = torch.tensor([1.0, -2.0], device="tpu")
    with torch.tpu.eager_mode("DEFER_AND_FUSE"):
        y = x * 2
        torch._assert_async((y > 0).all(), "positive")
        z = y + 1
        with pytest.raises(RuntimeError, match="positive"):
            torch.tpu.synchronize()
    assert y.cpu().tolist() == [2.0, -4.0]  # recorded before the assert: written, as in DEFER_NEVER
    with pytest.raises(RuntimeError, match="has no value"):
        z.cpu()


def test_compiled_assert_runs_in_the_graph() -> None:
    torchtpu.reset_fallback_counts()
    torch._dynamo.reset()
    f = torch.compile(lambda t: (torch._assert_async((t > 0).all(), "positive"), t + 1)[1], backend="tpu",
                      fullgraph=True)
    assert f(torch.ones(2, device="tpu")).cpu().tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="positive"):
        f(-torch.ones(2, device="tpu")).cpu()
    assert torchtpu.fallback_counts() == {}


def _bce(x: list[float], t: list[float], **kwargs: object):
    return lambda d: F.binary_cross_entropy(torch.tensor(x, device=d), torch.tensor(t, device=d), **kwargs)


OUT_OF_RANGE = {  # the first pair with a bad element decides which message, the input's checked first
    "input_above": _bce([0.5, 1.5], [1.0, 1.0]),
    "input_below": _bce([-0.25, 0.5], [1.0, 1.0], reduction="none"),
    "input_nan": _bce([float("nan"), 0.5], [1.0, 1.0], reduction="sum"),
    "target_above": _bce([0.5, 0.5], [1.0, 2.0]),
    "target_nan": _bce([0.5, 0.5], [float("nan"), 1.0]),
    "both_in_one_pair": _bce([1.5, 0.5], [2.0, 1.0]),
    "target_first": _bce([0.5, 1.5], [2.0, 1.0]),
    "input_first": _bce([0.5, 1.5, 0.5], [1.0, 1.0, 3.0]),
    "squeezed_target": lambda d: aten.binary_cross_entropy.default(torch.full((2, 1), 0.5, device=d),
                                                                   torch.tensor([1.0, -1.0], device=d)),
    "out": lambda d: aten.binary_cross_entropy.out(torch.tensor([0.5, 2.0], device=d), torch.ones(2, device=d),
                                                   None, 0, out=torch.empty(2, device=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(OUT_OF_RANGE))
def test_bce_out_of_range_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(OUT_OF_RANGE[name], mode)


@pytest.mark.parametrize("name", ["input_above", "target_first", "input_first"])
def test_bce_out_of_range_refused_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(OUT_OF_RANGE[name])


@pytest.mark.parametrize("mode", MODES)
def test_bce_in_range_unchanged(mode: str) -> None:
    x, t = [0.0, 0.25, 1.0, 0.75], [1.0, 0.0, 1.0, 0.5]
    assert_exactly_cpu(lambda d: [F.binary_cross_entropy(torch.tensor(x, device=d), torch.tensor(t, device=d),
                                                         reduction=r) for r in ("none", "mean", "sum")]
                       + [F.binary_cross_entropy(torch.empty(0, device=d), torch.empty(0, device=d))], mode)


@pytest.mark.parametrize("mode", MODES)
def test_bce_checks_the_squeezed_shapes_before_the_dtype(mode: str) -> None:
    """[5, 1, 1] and [4, 2] broadcast, but CPU's iterator reads their squeeze()s, [5] and [4, 2] (fuzz seed 3)."""
    assert_refused_as_cpu(lambda d: aten.binary_cross_entropy.out(
        torch.ones(5, 1, 1, dtype=torch.int32, device=d), torch.ones(4, 2, dtype=torch.int32, device=d),
        reduction=0, out=torch.empty(5, 3, 5, dtype=torch.int32, device=d)), mode)
