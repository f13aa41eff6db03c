"""Calls CPU computes that tpu refused (fuzz seeds 9 and 10), now computed as on CPU in every eager mode: the random
samplers of an empty tensor of a dtype they refuse (no element, no kernel dispatch), complex scatter_reduce mean."""

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

aten = torch.ops.aten

SAMPLERS = {
    "normal.Tensor_float": lambda t: aten.normal.Tensor_float(t, 3.0),
    "normal.float_Tensor": lambda t: aten.normal.float_Tensor(1.0, t),
    "normal.Tensor_Tensor": lambda t: aten.normal.Tensor_Tensor(t, t),
    "normal_": lambda t: aten.normal_(t),
    "geometric_": lambda t: aten.geometric_(t, 0.5),
    "exponential_": lambda t: aten.exponential_(t),
    "log_normal_": lambda t: aten.log_normal_(t),
    "random_": lambda t: aten.random_(t),
    "bernoulli_": lambda t: aten.bernoulli_(t, 0.5),
}
REFUSED = {"normal.Tensor_float": torch.uint8, "normal.float_Tensor": torch.bool, "normal.Tensor_Tensor": torch.int64,
           "normal_": torch.uint8, "geometric_": torch.bool, "exponential_": torch.int64, "log_normal_": torch.int32,
           "random_": torch.complex64, "bernoulli_": torch.complex64}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SAMPLERS)
def test_sampler_of_empty_refused_dtype_computes(name: str, mode: str) -> None:
    fn, dtype = SAMPLERS[name], REFUSED[name]
    with pytest.raises((NotImplementedError, RuntimeError)):
        fn(torch.ones(2, dtype=dtype))  # CPU refuses the dtype for a tensor with elements
    with torch.tpu.eager_mode(mode):
        got = fn(torch.ones(0, 2, dtype=dtype, device="tpu"))
        torch.tpu.synchronize()
    want = fn(torch.ones(0, 2, dtype=dtype))
    assert (got.shape, got.dtype) == (want.shape, want.dtype)


def _scatter_mean(d: str) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    s, src = (torch.randn(3, n, generator=gen, dtype=torch.complex64).to(d) for n in (4, 5))
    idx = torch.randint(0, 4, (3, 5), generator=gen).to(d)
    return [s.scatter_reduce(1, idx, src, "mean", include_self=inc) for inc in (True, False)]


@pytest.mark.parametrize("mode", MODES)
def test_complex_scatter_reduce_mean(mode: str) -> None:
    assert_exactly_cpu(_scatter_mean, mode)
