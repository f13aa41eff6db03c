"""Issue 17 (fuzz seed 2): upsampling and reflection/replication padding refuse what CPU refuses, with CPU's class
and words (ops/spatial_checks.py), in every eager mode; before, tpu computed a result (a silent wrong result) or
failed inside its lowering with an IndexError. Valid calls still equal CPU's."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu, ones

import torchtpu  # noqa: F401

aten = torch.ops.aten


_f = ones


# name -> fn(device): raises on CPU (the fuzzer's findings)
CASES: dict[str, Callable[[str], object]] = {
    "nearest_exact1d_bw_grad_input_4d": lambda d: aten._upsample_nearest_exact1d_backward.grad_input(
        _f(4, 1, 1, 3, dtype=torch.bfloat16, d=d), [1], [3, 1, 2],
        grad_input=_f(4, 1, 1, 3, dtype=torch.bfloat16, d=d)),
    "nearest_exact3d_bw_1d_grad": lambda d: aten._upsample_nearest_exact3d_backward.default(
        _f(3, d=d), [4, 2, 1], [1, 1, 3, 1, 1], None, None, None),
    "nearest1d_out_1d_input": lambda d: aten.upsample_nearest1d.out(_f(4, d=d), [2], out=_f(4, d=d)),
    "nearest1d_bw_wrong_batch": lambda d: aten.upsample_nearest1d_backward.default(_f(5, 3, 1, d=d), [1], [2, 3, 4]),
    "nearest1d_bw_0d_grad": lambda d: aten.upsample_nearest1d_backward.default(_f(d=d), [1], [2, 3, 4]),
    "nearest2d_3d_input": lambda d: aten.upsample_nearest2d.default(_f(2, 3, 0, d=d), [2, 2]),
    "nearest2d_zero_output": lambda d: aten.upsample_nearest2d.default(_f(1, 1, 5, 5, d=d), [0, 1]),
    "nearest2d_bw_0d_grad": lambda d: aten.upsample_nearest2d_backward.default(_f(d=d), [2, 2], [1, 1, 2, 2]),
    "bilinear2d_bool_0d": lambda d: aten.upsample_bilinear2d.default(_f(dtype=torch.bool, d=d), [2, 2], False),
    "bilinear2d_out_complex_1d": lambda d: aten.upsample_bilinear2d.out(
        _f(3, dtype=torch.complex64, d=d), [2, 2], False, out=_f(3, dtype=torch.complex64, d=d)),
    "bilinear2d_bw_zero_output": lambda d: aten.upsample_bilinear2d_backward.default(
        _f(1, 1, 0, 2, d=d), [0, 2], [1, 1, 3, 2], False),
    "linear1d_out_int_into_uint8": lambda d: aten.upsample_linear1d.out(
        _f(2, 3, 4, dtype=torch.int32, d=d), [5], False, out=_f(1, dtype=torch.uint8, d=d)),
    "trilinear3d_uint8_0d": lambda d: aten.upsample_trilinear3d.default(_f(dtype=torch.uint8, d=d), [2, 2, 2], False),
    "trilinear3d_bw_zero_output": lambda d: aten.upsample_trilinear3d_backward.default(
        _f(2, 1, 2, 4, 0, d=d), [2, 4, 0], [2, 1, 2, 2, 3], False),
    "reflection_pad1d_0d": lambda d: aten.reflection_pad1d.default(_f(d=d), [1, 1]),
    "reflection_pad2d_out_2d": lambda d: aten.reflection_pad2d.out(_f(5, 4, d=d), [1, 1, 1, 1], out=_f(5, 4, d=d)),
    "reflection_pad3d_out_0d": lambda d: aten.reflection_pad3d.out(_f(d=d), [1] * 6, out=_f(1, d=d)),
    "reflection_pad2d_h_too_large": lambda d: aten.reflection_pad2d.default(_f(3, 1, 4, d=d), [0, 2, 3, 4]),
    "replication_pad1d_1d": lambda d: aten.replication_pad1d.default(_f(4, d=d), [1, 1]),
    "replication_pad1d_out_1d": lambda d: aten.replication_pad1d.out(_f(1, d=d), [1, 1], out=_f(1, d=d)),
    "replication_pad3d_3d": lambda d: aten.replication_pad3d.default(_f(3, 4, 1, d=d), [1] * 6),
    "replication_pad2d_too_small": lambda d: aten.replication_pad2d.default(_f(1, 4, 5, d=d), [-9] * 4),
    "replication_pad1d_padding_length": lambda d: aten.replication_pad1d.default(_f(2, 3, d=d), [1, 1, 1]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)


@pytest.mark.parametrize("mode", MODES)
def test_valid_calls_still_equal_cpu(mode: str) -> None:
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
    calls = [
        lambda t: aten.upsample_nearest2d.default(t, [6, 7]),
        lambda t: aten.upsample_bilinear2d.default(t, [3, 9], True),
        lambda t: aten.upsample_nearest1d.default(t[0], [9]),
        lambda t: aten.upsample_nearest2d_backward.default(t, [4, 5], [2, 3, 2, 2]),
        lambda t: aten.reflection_pad2d.default(t, [1, 2, 3, 0]),
        lambda t: aten.replication_pad1d.default(t[0, 0], [2, 3]),
        lambda t: aten.replication_pad3d.default(t, [1, 0, 2, 1, 0, 1]),
        lambda t: aten.replication_pad2d.default(t[:0], [1, 1, 1, 1]),
    ]
    with torch.tpu.eager_mode(mode):
        for call in calls:
            assert torch.equal(call(x.to("tpu")).cpu(), call(x))
