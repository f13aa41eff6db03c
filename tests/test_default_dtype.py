"""torch.set_default_dtype between calls: an integer op's float result (div, true_divide, sqrt, int * float) and a
factory without dtype= take the default dtype of the call, in every eager mode and under torch.compile; the traced
programs, the promotion memo and the C++ launch cache are keyed by it (a program traced under float32 was replayed
under float64)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE", "compile"]
CASES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "div": torch.div,
    "true_divide": torch.true_divide,
    "div_scalar": lambda a, b: torch.div(a, 2.0),
    "sqrt_int": lambda a, b: torch.sqrt(a),
    "mul_python_float": lambda a, b: a * 1.5,
    "arange_float_step": lambda a, b: torch.arange(0, 1, 0.25, device=a.device) + a[0],
    "full_no_dtype": lambda a, b: torch.full((2,), 1.5, device=a.device) + b,
}


@pytest.fixture
def restore_default_dtype():
    saved = torch.get_default_dtype()
    yield
    torch.set_default_dtype(saved)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_result_follows_default_dtype(name: str, mode: str, restore_default_dtype: None) -> None:
    fn = CASES[name]
    a, b = torch.tensor([3, 4]), torch.tensor([2, 3])
    for default in (torch.float32, torch.float64, torch.float32, torch.float64):
        torch.set_default_dtype(default)
        want = fn(a, b)
        if mode == "compile":
            got = torch.compile(fn, backend="tpu")(a.to("tpu"), b.to("tpu")).cpu()
        else:
            with torch.tpu.eager_mode(mode):
                got = fn(a.to("tpu"), b.to("tpu")).cpu()
        assert got.dtype == want.dtype == default, f"{name} under {default}: {got.dtype}"
        torch.testing.assert_close(got, want, rtol=0, atol=0)
