"""linspace as CPU computes it, bit for bit (ATen's RangeFactoriesKernel.cpp: start + step * i below steps // 2,
end - step * (steps - 1 - i) above, each a fused multiply-add in the output's type; integer outputs step in double
and truncate; complex per component), in every eager mode and under torch.compile; dtype inference from complex
bounds, steps 0 and 1, and out= of linspace and logspace (computed in the out tensor's dtype, written in its shape,
overlap refused)."""

from __future__ import annotations

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE", "compile"]
CASES = [  # (start, end, steps, dtype)
    (-0.0316082797944545745849609375, 0.0315315723419189453125, 257, torch.float32),
    (0.123, 91.789, 137, torch.float32),
    (3.7, -12.25, 1000, torch.float64),
    (0.123, 91.789, 137, torch.bfloat16),
    (-100, 100, 401, torch.float16),
    (1, 127, 50, torch.int8),
    (0, 200, 137, torch.uint8),
    (0, 9000, 9000, torch.int32),
    (torch.iinfo(torch.int64).min, torch.iinfo(torch.int64).max & ~0xfff, 15, torch.int64),
    (0.5 + 0.8888888888j, 7.25 - 0.444444444444j, 11, torch.complex64),
    (2.5, 9.0, 1, torch.float32),
    (2.5, 9.0, 0, torch.int64),
    (float("inf"), -0.597, 6, torch.float32),  # an infinite step: CPU's fma gives inf or NaN per element
    (-0.597, float("inf"), 7, torch.float64),
]


def _run(mode: str, fn, *args):
    if mode == "compile":
        return torch.compile(fn, backend="tpu", dynamic=False)(*args)
    with torch.tpu.eager_mode(mode):
        return fn(*args).cpu()


@pytest.mark.parametrize("mode", MODES)
def test_linspace_matches_cpu_bit_for_bit(mode: str) -> None:
    for start, end, steps, dtype in CASES:
        want = torch.linspace(start, end, steps, dtype=dtype)
        got = _run(mode, lambda s=start, e=end, n=steps, d=dtype: torch.linspace(s, e, n, dtype=d, device="tpu"))
        assert got.dtype == want.dtype, (start, end, steps, dtype)
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True,
                                   msg=lambda m, c=(start, end, steps, dtype): f"{c}: {m}")


OUT_CASES = {  # op: (bounds, out dtypes, the (0, 3, 4) call's extra arguments, its values)
    "linspace": ((0.3, 90.7), (torch.int16, torch.float64, torch.complex64), {}, [0.0, 1, 2, 3]),
    "logspace": ((0.3, 1.7), (torch.int16, torch.float64, torch.bfloat16), {"base": 2}, [1.0, 2, 4, 8]),
}


@pytest.mark.parametrize("mode", ["DEFER_NEVER", "DEFER_AND_FUSE"])
@pytest.mark.parametrize("op", sorted(OUT_CASES))
def test_out_in_out_dtype_and_shape(mode: str, op: str) -> None:
    """linspace and logspace out=: computed in the out tensor's dtype, written in its shape, overlap refused."""
    fn, ((lo, hi), dtypes, extra, values) = getattr(torch, op), OUT_CASES[op]
    with torch.tpu.eager_mode(mode):
        for dtype in dtypes:
            want, got = torch.empty(0, dtype=dtype), torch.empty(0, dtype=dtype, device="tpu")
            fn(lo, hi, 137, out=want)
            fn(lo, hi, 137, out=got)
            assert torch.equal(got.cpu(), want), dtype
        x = torch.zeros(2, 3, device="tpu")
        fn(0, 3, 4, **extra, out=x.narrow(1, 1, 2))
        assert torch.equal(x.cpu(), torch.tensor([[0.0, values[0], values[1]], [0, values[2], values[3]]]))
        with pytest.raises(RuntimeError, match="unsupported operation"):
            fn(1, 10, 10, out=torch.rand(1, device="tpu").expand(10))


def test_linspace_dtype_inference_and_checks() -> None:
    assert torch.linspace(0.0, 2j, 100, device="tpu").dtype == torch.complex64
    assert torch.linspace(1, 2, 100, device="tpu").dtype == torch.float32
    with pytest.raises(RuntimeError, match=r"torch.linspace\(\): inferred dtype ComplexFloat can't be safely cast"):
        torch.linspace(0j, 1, 5, device="tpu", dtype=torch.float32)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        torch.linspace(0, 1, -1, device="tpu")
