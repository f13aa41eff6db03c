"""A complex tensor constant inside a compiled function (a lifted constant the graph holds) equals CPU's result."""

import pytest
import torch


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_tensor_constant_in_compiled_fn(dtype: torch.dtype) -> None:
    def fn(t: torch.Tensor) -> torch.Tensor:
        return t * (1 + 2j) + torch.tensor([1j, 2, 3 - 1j, float("nan")], device=t.device, dtype=dtype)

    x = torch.randn(2, 4, dtype=dtype)
    got = torch.compile(fn, backend="tpu")(x.to("tpu"))
    torch.testing.assert_close(got.cpu(), fn(x), equal_nan=True)
    torch.testing.assert_close(got.cpu(), fn(x.to("tpu")).cpu(), rtol=0, atol=0, equal_nan=True)
