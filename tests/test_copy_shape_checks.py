"""Issue 17 (test_torch's test_broadcast_fn_copy): `dst.copy_(src)` whose src does not broadcast to dst's shape
raises CPU's RuntimeError and words (ops/copy.check_copy_shapes) in every eager mode, for tpu->tpu and cpu->tpu
copies; before, a tpu->tpu copy raised a ValueError from inside its lowering. Valid broadcasts still equal CPU's."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu

import torchtpu  # noqa: F401

BAD = [((1,), (2, 1, 2, 1)), ((3,), (2,)), ((2, 3), (4, 1, 3)), ((2, 0), (3,)), ((), (2,)), ((2,), (0,))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src_on", ["same", "cpu"])
@pytest.mark.parametrize("dst_shape,src_shape", BAD)
def test_refused_as_cpu(dst_shape: tuple, src_shape: tuple, src_on: str, mode: str) -> None:
    def case(d: str) -> object:
        src = torch.ones(src_shape, device=d if src_on == "same" else "cpu")
        return torch.zeros(dst_shape, device=d).copy_(src)

    assert_refused_as_cpu(case, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dst_shape,src_shape", [((2, 3), (3,)), ((4, 2, 3), (2, 1)), ((0,), (1,)), ((2,), ())])
def test_broadcast_equals_cpu(dst_shape: tuple, src_shape: tuple, mode: str) -> None:
    src = torch.arange(torch.Size(src_shape).numel(), dtype=torch.float32).reshape(src_shape)
    expected = torch.zeros(dst_shape).copy_(src)
    with torch.tpu.eager_mode(mode):
        got = torch.zeros(dst_shape, device="tpu").copy_(src.to("tpu")).cpu()
    assert torch.equal(got, expected)
