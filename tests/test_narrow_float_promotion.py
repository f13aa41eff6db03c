"""A float16/bfloat16 common dtype: TensorIterator casts each operand of another dtype to it before the kernel
widens them to float32, so an integer past float16's precision or range is rounded (or made inf) first, as on CPU
(int32 2049 + float16 0.5 is 2048 on CPU: 2048 + 0.5 rounded; tpu gave 2050; 70000 * 0.0 is NaN). A 0-d operand
is cast as well, and a Python scalar, except the second operand of mul and true division, whose original value
ATen's kernels read (prims.prepare, via_common)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

INTS = [2049, 70000, -3, 4097, 65519, 65520, -70000, 3]


def _calls(d: str) -> list[torch.Tensor]:
    out = []
    for dtype in (torch.int32, torch.int64, torch.int16):
        i = torch.tensor(INTS).clamp(-30000, 30000).to(dtype).to(d)
        for narrow in (torch.float16, torch.bfloat16):
            h = torch.tensor([0.5, 0.0, 1.5, 0.25, 1.0, 1.0, 0.0, -2.0], dtype=narrow, device=d)
            out += [i + h, h + i, torch.add(h, i, alpha=3), torch.sub(i, h, alpha=2), i - h, i * h, h * i, i / h,
                    torch.remainder(i, h), torch.maximum(i, h), torch.atan2(h, i), i == h, h < i,
                    torch.where(h > 0.3, i, h)]
    for narrow in (torch.float16, torch.bfloat16):
        h = torch.tensor([0.5, 1.0, 0.0], dtype=narrow, device=d)
        big, odd = torch.tensor(70000, device=d), torch.tensor(2049, dtype=torch.int32, device=d)
        # add/sub cast a scalar operand too; mul and true division read a scalar `other`'s original value, a
        # scalar `self` is cast
        out += [h + odd, odd + h, h + 2049, h - 2049, 2049 - h, torch.add(h, 257, alpha=2), h * big, big * h,
                h * 70000, 70000 * h, h / big, big / h, h / 70000.0, torch.maximum(h, big), torch.remainder(h, odd)]
    return out


@pytest.mark.parametrize("mode", MODES)
def test_integer_operands_rounded_to_the_narrow_common_dtype_first(mode: str) -> None:
    assert_exactly_cpu(_calls, mode)


def test_compiled_as_cpu() -> None:
    i = torch.tensor(INTS, dtype=torch.int32)
    h = torch.tensor([0.5, 0.0, 1.5, 0.25, 1.0, 1.0, 0.0, -2.0], dtype=torch.float16)

    def f(a, b):
        return a + b, a * b, torch.sub(a, b, alpha=2)

    got = torch.compile(f, backend="tpu")(i.to("tpu"), h.to("tpu"))
    for g, c in zip(got, f(i, h), strict=True):
        torch.testing.assert_close(g.cpu(), c, rtol=0, atol=0, equal_nan=True)
