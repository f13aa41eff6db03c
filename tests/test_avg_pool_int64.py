"""avg_pool2d/3d of int64 as CPU's kernel: the window sum in int64 (wrapping) and C's truncating division by the
count (tpu summed in float32 and multiplied by the reciprocal: fuzz seed 9, values near 2^60 off by 4.6e10), and the
sim's truncating integer division exact at INT64_MIN."""

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu

INPUTS = [[[100, 100, -7, -6, 9, 9, 9]], [[2**62, 2**62, 2**62, 5]],
          [[2**61 + 12345, 2**61 + 7, 3], [5, 2**60 + 1, -7]], [[-9, -9, -9, 10, -3, -3, -3, -3]]]
KWARGS = [dict(kernel_size=[1, 2], stride=[1, 1]), dict(kernel_size=[1, 3], stride=[1, 1], padding=[0, 1]),
          dict(kernel_size=[1, 3], stride=[1, 2], padding=[0, 1], ceil_mode=True, count_include_pad=False),
          dict(kernel_size=[1, 2], divisor_override=3)]


def _pools(d: str) -> list[torch.Tensor]:
    out = []
    for rows in INPUTS:
        x = torch.tensor([rows], device=d)
        out += [torch.nn.functional.avg_pool2d(x, **kw) for kw in KWARGS]
        out.append(torch.nn.functional.avg_pool3d(x[None], [1, 1, 2]))
    return out


def _divisions(d: str) -> list[torch.Tensor]:
    a = torch.tensor([-2**63, -2**63, 7, -7, 7, -7, 0, 2**63 - 1, -9, 9, 5, -5], device=d)
    b = torch.tensor([2, 3, 2, 2, -2, -2, 5, 2, 3, -3, 7, 7], device=d)
    return [torch.div(a, b, rounding_mode="trunc"),
            torch.div(a.to(torch.int8), b.to(torch.int8), rounding_mode="trunc")]


@pytest.mark.parametrize("mode", MODES)
def test_int64_avg_pool_as_cpu(mode: str) -> None:
    assert_exactly_cpu(_pools, mode)


@pytest.mark.parametrize("mode", MODES)
def test_truncating_integer_division_at_int64_min(mode: str) -> None:
    assert_exactly_cpu(_divisions, mode)
