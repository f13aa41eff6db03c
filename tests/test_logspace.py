"""logspace as CPU computes it, bit for bit for real dtypes (ATen's RangeFactories.cpp: start and end in the output
type, step = double(end - start) / (steps - 1), pow(base, start + step * i) below steps // 2 and pow(base, end -
step * (steps - 1 - i)) above, libm's double pow, narrowed to the output type; integers truncated as x86
converts), in every eager mode and under torch.compile; steps 0 and 1 (fill's overflow check), negative bases,
dtype inference from complex bounds, bool refused as CPU does (out=: tests/test_linspace.py)."""

from __future__ import annotations

import math

import pytest
import torch

import torchtpu  # noqa: F401

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE", "compile"]
CASES = [  # (start, end, steps, base, dtype)
    (-0.0316082797944545745849609375, 0.0315315723419189453125, 257, 10.0, torch.float32),
    (0.123, 1.789, 137, 10.0, torch.float32),
    (3.7, -12.25, 1000, 2.0, torch.float64),
    (0.0, 6.0, 49, 2.0, torch.float64),
    (0.123, 1.789, 137, math.e, torch.bfloat16),
    (-3.0, 4.5, 101, 3.7, torch.float16),
    (0.46, 1.12, 137, 10.0, torch.int16),
    (0.46, 1.12, 137, 10.0, torch.uint8),
    (-3, 5, 91, 3.0, torch.int8),
    (1, 40, 77, 3.0, torch.int32),
    (1, 60, 64, 2.0, torch.int64),
    (-2, 40, 100, 1.5, torch.uint8),  # negative bounds wrap; overflowing powers as x86 converts them
    (0.5, 7.25, 11, -2.0, torch.float32),  # a negative base: NaN but at integer exponents
    (1.0, 400.0, 9, 10.0, torch.float64),  # overflows to inf
    (2.5, 9.0, 1, 10.0, torch.float32),
    (2.5, 9.0, 0, 10.0, torch.int64),
    (0.5, 2.0, 1, 10.0, torch.int32),
]


def _run(mode: str, fn):
    if mode == "compile":
        return torch.compile(fn, backend="tpu", dynamic=False)()
    with torch.tpu.eager_mode(mode):
        return fn().cpu()


@pytest.mark.parametrize("mode", MODES)
def test_logspace_matches_cpu_bit_for_bit(mode: str) -> None:
    for start, end, steps, base, dtype in CASES:
        want = torch.logspace(start, end, steps, base, dtype=dtype)
        got = _run(mode, lambda s=start, e=end, n=steps, b=base, d=dtype:
                   torch.logspace(s, e, n, b, dtype=d, device="tpu"))
        assert got.dtype == want.dtype, (start, end, steps, dtype)
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True,
                                   msg=lambda m, c=(start, end, steps, base, dtype): f"{c}: {m}")


def test_logspace_checks_as_cpu() -> None:
    assert torch.logspace(0.0, 2j, 10, device="tpu").dtype == torch.complex64
    with pytest.raises(RuntimeError, match=r"torch.logspace\(\): inferred dtype ComplexFloat can't be safely cast"):
        torch.logspace(0j, 1, 5, device="tpu", dtype=torch.float32)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        torch.logspace(0, 1, -1, device="tpu")
    with pytest.raises(NotImplementedError, match="\"logspace_cpu\" not implemented for 'Bool'"):
        torch.logspace(0, 1, 5, dtype=torch.bool, device="tpu")
    for dtype, c_type in ((torch.int16, "int16_t"), (torch.float32, "float")):  # steps=1: fill_'s checked value
        with pytest.raises(RuntimeError, match=f"value cannot be converted to type {c_type} without overflow"):
            torch.logspace(40, 1, 1, dtype=dtype, device="tpu")
    assert torch.logspace(400, 1, 1, dtype=torch.float32, device="tpu").cpu().isinf().all()  # inf is no overflow
    assert torch.logspace(400, 1, 1, dtype=torch.bfloat16, device="tpu").cpu().isinf().all()
