"""Element-wise values PyTorch's test_unary_ufuncs.py / test_binary_ufuncs.py found wrong on tpu, against CPU
PyTorch in every eager mode (DEFER_NEVER, LAUNCH_BLOCKING, DEFER_AND_FUSE), bit-identical across the modes."""

from __future__ import annotations

import pytest
import torch

import torchtpu  # noqa: F401

NAN, INF = float("nan"), float("inf")
MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]

# erfcx of a large negative x overflows to inf on CPU; the split square exp(hi) * exp(lo) made it inf * 0 = NaN
ERFCX_INPUT = [-3e38, -1e20, -1e10, -30.0, -27.5, -26.0, -10.5, -9.5, -9.3, -5.0, 0.0, 5.0, 1e20, -INF, INF, NAN]
CASES = {
    "erfcx_large_negative": (torch.special.erfcx, ERFCX_INPUT),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_cpu_in_every_mode(tpu, name, dtype):
    fn, values = CASES[name]
    x = torch.tensor(values, dtype=dtype)
    want = fn(x)
    got = {}
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got[mode] = fn(x.to("tpu")).cpu()
    assert torch.equal(got["DEFER_NEVER"].isnan(), want.isnan())
    assert torch.equal(got["DEFER_NEVER"].isinf(), want.isinf())
    torch.testing.assert_close(got["DEFER_NEVER"], want, equal_nan=True, rtol=1e-5 if dtype == torch.float32
                               else 1e-13, atol=0)
    for mode in MODES[1:]:
        assert torch.equal(got[mode].view(-1).view(torch.uint8), got["DEFER_NEVER"].view(-1).view(torch.uint8)), mode


SIGNS = [-2.0, 0.0, -0.0, 3.0, NAN, -NAN, INF, -INF]
BINARY = {
    # a CPU 0-dim operand is a scalar (upstream's decomposition refused it: "Expected divisor (b) to be on ...")
    "copysign_cpu_scalar_self": (lambda y: torch.copysign(torch.tensor(1.0), y), torch.float32),
    "copysign_int_to_float": (lambda y: torch.copysign(torch.arange(8, device=y.device) - 3, y), torch.float64),
    "copysign_scalar": (lambda y: torch.copysign(y, -2), torch.float32),
    "heaviside_nan_is_zero": (lambda y: torch.heaviside(y, torch.full((1,), 7.0, dtype=y.dtype, device=y.device)),
                              torch.float32),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_matches_cpu_in_every_mode(tpu, name):
    fn, dtype = BINARY[name]
    want = fn(torch.tensor(SIGNS, dtype=dtype))
    for mode in MODES:
        with torch.tpu.eager_mode(getattr(torch.tpu.EagerMode, mode)):
            got = fn(torch.tensor(SIGNS, dtype=dtype).to("tpu")).cpu()
        assert got.dtype == want.dtype, mode
        assert torch.equal(torch.signbit(got), torch.signbit(want)), mode  # -0.0 and NaN signs too
        torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)


def test_heaviside_refuses_mixed_dtypes_as_cpu(tpu):
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with different dtypes"):
            torch.heaviside(torch.ones(2, device=device), torch.ones(2, device=device, dtype=torch.float64))


def test_compiled_matches_cpu(tpu):
    def fn(x: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.heaviside(x, v), torch.copysign(x, -2.0), torch.special.erfcx(x)

    x, v = torch.tensor([-2.0, 0.0, -0.0, 3.0, NAN, -1e20, -INF]), torch.tensor([7.0])
    got = torch.compile(fn, backend="tpu")(x.to("tpu"), v.to("tpu"))
    for g, w in zip(got, fn(x, v)):
        torch.testing.assert_close(g.cpu(), w, equal_nan=True, rtol=1e-5, atol=0)
