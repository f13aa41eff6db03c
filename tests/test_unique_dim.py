"""`torch.unique(dim=)` against CPU, values, inverse and counts exactly, in every eager mode and under compile:
without NaN (the device's lexicographic sort) and with NaN slices, whose order is whatever ATen's std::sort leaves
with a comparator NaN breaks (ops/dynamic.py takes CPU's kernel for that case)."""

from __future__ import annotations

import re

import pytest
import torch

import torchtpu  # noqa: F401

NAN = float("nan")
MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE", "compile"]


def _rand_with_nan() -> torch.Tensor:
    x = torch.randn(40, generator=torch.Generator().manual_seed(3)).round()
    x[::7] = NAN
    return x


CASES = {
    "nan_1d": (torch.tensor([NAN, 0, 0, NAN, NAN, 1]), 0),  # PyTorch's test_unique_dim
    "nan_jumps_first": (torch.tensor([5.0, NAN, 1.0]), 0),
    "nan_rows": (torch.tensor([[1.0, NAN], [1.0, NAN], [0.0, 2.0], [0.0, 2.0], [-1.0, 3.0]]), 0),
    "nan_columns_bf16": (torch.tensor([[1.0, NAN, 1.0], [2.0, 0.0, 2.0]], dtype=torch.bfloat16), 1),
    "nan_past_insertion_sort": (_rand_with_nan(), 0),  # 40 > 16: std::sort's introsort, not its insertion sort
    "no_nan": (torch.tensor([[3.0, 1.0], [0.0, 2.0], [3.0, 1.0], [0.0, -2.0]]), 0),
    "no_nan_int": (torch.tensor([[3, 1, 3], [0, 2, 0]]), 1),
}


def _unique(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, ...]:
    return torch.unique(x, dim=dim, return_inverse=True, return_counts=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_unique_dim_matches_cpu(name: str, mode: str) -> None:
    x, dim = CASES[name]
    want = _unique(x, dim)
    t = x.to("tpu")
    if mode == "compile":
        torch._dynamo.reset()
        got = torch.compile(_unique, backend="tpu")(t, dim)
    else:
        with torch.tpu.eager_mode(mode):
            got = _unique(t, dim)
    for g, w in zip(got, want, strict=True):
        assert g.device.type == "tpu" and g.dtype == w.dtype
        torch.testing.assert_close(g.cpu(), w, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("op", ["unique_dim", "unique_consecutive"])
@pytest.mark.parametrize("name", ["nan_rows", "no_nan", "empty"])
def test_inverse_and_counts_always_returned(op: str, name: str) -> None:
    """ATen's kernels over slices return the inverse and the counts even when not asked for (as CPU)."""
    x, dim = CASES[name] if name != "empty" else (torch.zeros(0, 2), 0)
    call = (lambda t: torch.ops.aten.unique_dim(t, dim)) if op == "unique_dim" else \
        (lambda t: torch.ops.aten.unique_consecutive(t, dim=dim))
    for g, w in zip(call(x.to("tpu")), call(x), strict=True):
        torch.testing.assert_close(g.cpu(), w, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("op", ["unique_dim", "unique_consecutive"])
@pytest.mark.parametrize(("shape", "dim"), [((5, 0, 0), 1), ((5, 0, 5), 2), ((2, 0), 0), ((0, 2, 0), 1), ((3, 0, 2), 1),
                                            ((3, 0, 2), -2)])
def test_empty_input_checks(op: str, shape: tuple[int, ...], dim: int) -> None:
    """An empty input: CPU's errors for more than one zero-sized dim or a zero-sized dim not selected."""
    call = (lambda t: torch.ops.aten.unique_dim(t, dim, True, True, True)) if op == "unique_dim" else \
        (lambda t: torch.ops.aten.unique_consecutive(t, True, True, dim))
    try:
        want = call(torch.empty(shape))
    except RuntimeError as exc:
        with pytest.raises(RuntimeError, match=re.escape(str(exc).strip())):
            call(torch.empty(shape, device="tpu"))
        return
    for g, w in zip(call(torch.empty(shape, device="tpu")), want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype


@pytest.mark.parametrize("op", ["unique_dim", "unique_consecutive"])
@pytest.mark.parametrize("dim", [0, -1])
def test_zero_dim_input_with_dim(op: str, dim: int) -> None:
    """A 0-dim input with dim= given: CPU's IndexError (the fuzzer's finding: tpu raised a ValueError or ran)."""
    call = (lambda t: torch.ops.aten.unique_dim(t, dim)) if op == "unique_dim" else \
        (lambda t: torch.ops.aten.unique_consecutive(t, dim=dim))
    with pytest.raises(IndexError, match=re.escape(f"Dimension specified as {dim} but tensor has no dimensions")):
        call(torch.tensor(1.5))
    with pytest.raises(IndexError, match=re.escape(f"Dimension specified as {dim} but tensor has no dimensions")):
        call(torch.tensor(1.5, device="tpu"))
