"""Shared by the refusal tests (test_fuzz_refusals*.py, test_spatial_checks.py): a call given as fn(device) that CPU
refuses must raise on tpu too, in CPU's class with CPU's first line of words, in the given eager mode; and by the
value tests: calls given as fn(device) -> tensors must equal CPU's exactly (NaN where CPU's NaN is)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def ones(*shape: int, dtype: torch.dtype = torch.float32, d: str = "cpu") -> torch.Tensor:
    return torch.ones(*shape, dtype=dtype, device=d)


def results_in_every_mode(fn: Callable[..., torch.Tensor], *cpu_args: torch.Tensor) -> dict[str, torch.Tensor]:
    """fn of the arguments moved to tpu, in each eager mode and compiled, brought back to CPU."""
    results = {}
    for mode in MODES:
        with torch.tpu.eager_mode(mode):
            results[mode] = fn(*(a.to("tpu") for a in cpu_args)).cpu()
    torch._dynamo.reset()
    results["compile"] = torch.compile(fn, backend="tpu")(*(a.to("tpu") for a in cpu_args)).cpu()
    return results


def assert_refused_as_cpu(case: Callable[[str], object], mode: str) -> None:
    with pytest.raises(Exception) as cpu:
        case("cpu")
    with torch.tpu.eager_mode(mode), pytest.raises(type(cpu.value)) as tpu:
        case("tpu")
        torch.tpu.synchronize()
    assert str(cpu.value).split("\n")[0].strip() in str(tpu.value)


def assert_exactly_cpu(calls: Callable[[str], list[torch.Tensor]], mode: str) -> None:
    with torch.tpu.eager_mode(mode):
        got = calls("tpu")
        torch.tpu.synchronize()
    for g, c in zip(got, calls("cpu"), strict=True):
        torch.testing.assert_close(g.cpu(), c, rtol=0, atol=0, equal_nan=True)


def assert_close_to_cpu(calls: Callable[[str], list[torch.Tensor]], mode: str) -> None:
    """As assert_exactly_cpu within assert_close's default tolerance of each dtype: for a factorization whose last
    bits depend on the LAPACK path (blocking, threads) on either side."""
    with torch.tpu.eager_mode(mode):
        got = calls("tpu")
        torch.tpu.synchronize()
    for g, c in zip(got, calls("cpu"), strict=True):
        torch.testing.assert_close(g.cpu(), c, equal_nan=True)


def exception_chain(exc: BaseException | None) -> list[BaseException]:
    """`exc` and the exceptions it was raised from or during, outermost first."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def assert_refused_as_cpu_compiled(case: Callable[[str], object], words: bool = True) -> None:
    """`case` under torch.compile(backend="tpu") raises CPU's class somewhere in its chain (Dynamo wraps it), with
    CPU's first line of words unless `words` is False (PyTorch's own meta function refused first, in its words)."""
    with pytest.raises(Exception) as cpu:
        case("cpu")
    torch._dynamo.reset()
    with pytest.raises(Exception) as tpu:
        torch.compile(lambda: case("tpu"), backend="tpu")()
        torch.tpu.synchronize()
    first = str(cpu.value).split("\n")[0].strip() if words else ""
    assert any(isinstance(e, type(cpu.value)) and first in str(e) for e in exception_chain(tpu.value)), tpu.value


def parity_tests(
    refused: dict[str, Callable[[str], object]],
    compiled: list[str],
    same: dict[str, Callable[[str], list[torch.Tensor]]],
) -> tuple[Callable[..., None], Callable[..., None], Callable[..., None]]:
    """The three tests of an error-parity file: each `refused` case raises as CPU in every eager mode, the `compiled`
    ones also under torch.compile, and each `same` case (valid calls beside the new checks) equals CPU exactly.
    Bind them to module names starting with test_ for pytest to collect."""

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("name", sorted(refused))
    def refused_as_cpu(name: str, mode: str) -> None:
        assert_refused_as_cpu(refused[name], mode)

    @pytest.mark.parametrize("name", compiled)
    def refused_as_cpu_compiled(name: str) -> None:
        assert_refused_as_cpu_compiled(refused[name])

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("name", sorted(same))
    def same_as_cpu(name: str, mode: str) -> None:
        assert_exactly_cpu(same[name], mode)

    return refused_as_cpu, refused_as_cpu_compiled, same_as_cpu
