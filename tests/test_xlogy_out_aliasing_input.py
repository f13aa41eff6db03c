"""xlogy_ / xlog1py with out= one of the inputs, in float16/bfloat16: decomposition_values' reduced-type log
recomputed CPU's values from self after the decomposition had written its result there (xlogy_ reaches the out=
kernel as xlogy.out(self, other, out=self)), so log(y) was applied twice and x.xlogy_(y) returned a tensor other
than self (PyTorch's test_binary_ufuncs test_xlogy_xlog1py_float16_float32). Bit-identical to CPU in every eager
mode and compiled."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _inplace_tensor(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x.clone().xlogy_(y)


def _inplace_number(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x.clone().xlogy_(3.0)


def _out_is_self(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    z = x.clone()
    return torch.xlogy(z, y, out=z)


def _xlog1py_out_is_other(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    z = y.clone()
    return torch.special.xlog1py(x, z, out=z)


CALLS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "inplace_tensor": _inplace_tensor, "inplace_number": _inplace_number, "out_is_self": _out_is_self,
    "xlog1py_out_is_other": _xlog1py_out_is_other,
}


def _inputs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.tensor([2.0, 3.0, 0.0, 517.0, 0.5, 7.0], dtype=dtype)
    y = torch.tensor([4.0, 5.0, float("nan"), 611.0, 0.0, -0.5], dtype=dtype)
    return x, y


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("mode", [*MODES, "compile"])
def test_out_aliasing_an_input_as_cpu(mode: str, name: str, dtype: torch.dtype) -> None:
    x, y = _inputs(dtype)
    expected = CALLS[name](x, y)
    if mode == "compile":
        got = torch.compile(CALLS[name], backend="tpu", dynamic=False)(x.to("tpu"), y.to("tpu")).cpu()
    else:
        with torch.tpu.eager_mode(mode):
            got = CALLS[name](x.to("tpu"), y.to("tpu")).cpu()
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("mode", MODES)
def test_inplace_returns_self(mode: str) -> None:
    x, y = (t.to("tpu") for t in _inputs(torch.float16))
    with torch.tpu.eager_mode(mode):
        assert x.xlogy_(y) is x
