"""Issue 17 (fuzz seed 2): max pooling's pad <= kernel/2 check and int64 indices, max_unpool2d/3d's argument
checks, fractional_max_pool2d/3d_backward's and reflection/replication_pad1d_backward's checks refuse what CPU
refuses, with CPU's class and words (ops/pool_checks.py, ops/fractional_checks.py, ops/spatial_checks.py), in every
eager mode; before, tpu computed a result (a silent wrong result) or failed inside its lowering. Valid calls still
equal CPU's."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu

import torchtpu  # noqa: F401

aten = torch.ops.aten
L = torch.int64


def t(*shape: int, dtype: torch.dtype = torch.float32, d: str = "cpu") -> torch.Tensor:
    return torch.ones(shape, dtype=dtype, device=d)


CASES: dict[str, Callable[[str], object]] = {
    "mp3d_pad_over_half_kernel": lambda d: aten.max_pool3d_with_indices.default(
        t(1, 1, 1, 5, dtype=torch.uint8, d=d), [2, 3, 2], padding=[1, 3, 1], dilation=[1, 3, 2], ceil_mode=True),
    "mp2d_pad_over_half_kernel": lambda d: aten.max_pool2d_with_indices.default(
        t(1, 1, 5, 5, d=d), [2, 2], padding=[1, 2], dilation=[3, 3]),
    "mp3d_bw_pad_over_half_kernel": lambda d: aten.max_pool3d_with_indices_backward.default(
        t(1, 1, 3, 3, 3, d=d), t(1, 1, 5, 5, 5, d=d), [2, 2, 2], [1, 1, 1], [1, 2, 1], [3, 3, 3], False,
        t(1, 1, 3, 3, 3, dtype=L, d=d)),
    "mp3d_out_uint8_indices": lambda d: aten.max_pool3d_with_indices.out(
        t(5, 4, 5, 3, dtype=torch.uint8, d=d), [3, 3, 2], dilation=[2, 1, 3], ceil_mode=True,
        out=t(0, dtype=torch.uint8, d=d), indices=t(0, dtype=torch.uint8, d=d)),
    "mp3d_out_wrong_out_dtype": lambda d: aten.max_pool3d_with_indices.out(
        t(1, 1, 5, 5, 5, d=d), [2, 2, 2], out=t(0, dtype=torch.int32, d=d), indices=t(0, dtype=torch.uint8, d=d)),
    "mp3d_bw_int32_indices": lambda d: aten.max_pool3d_with_indices_backward.default(
        t(1, 1, 2, 2, 2, d=d), t(1, 1, 5, 5, 5, d=d), [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False,
        t(1, 1, 2, 2, 2, dtype=torch.int32, d=d)),
    "mp3d_empty_channel_words": lambda d: aten.max_pool3d_with_indices.default(t(1, 0, 5, 5, 5, d=d), [2, 2, 2]),
    "unpool3d_2d_input": lambda d: aten.max_unpool3d.default(
        t(2, 2, dtype=torch.bfloat16, d=d), t(2, 2, dtype=L, d=d), [1, 2, 1], [1, 3, 1], [0, 2, 2]),
    "unpool3d_out_1d_input": lambda d: aten.max_unpool3d.out(
        t(4, d=d), t(4, dtype=L, d=d), [2, 1, 1], [2, 3, 3], [0, 1, 3], out=t(4, d=d)),
    "unpool3d_int32_indices": lambda d: aten.max_unpool3d.default(
        t(2, 2, d=d), t(2, 2, dtype=torch.int32, d=d), [1, 2, 1], [1, 3, 1], [0, 2, 2]),
    "unpool3d_stride_length": lambda d: aten.max_unpool3d.default(
        t(1, 2, 2, 2, d=d), t(1, 2, 2, 2, dtype=L, d=d), [1, 2, 2], [1], [0]),
    "unpool3d_indices_shape": lambda d: aten.max_unpool3d.default(
        t(1, 2, 2, 2, d=d), t(1, 2, 2, 1, dtype=L, d=d), [1, 2, 2], [1, 1, 1], [0, 0, 0]),
    "unpool3d_zero_stride": lambda d: aten.max_unpool3d.default(
        t(1, 1, 2, 2, d=d), t(1, 1, 2, 2, dtype=L, d=d), [1, 2, 2], [1, 0, 1], [0, 0, 0]),
    "unpool2d_2d_input": lambda d: aten.max_unpool2d.default(t(2, 2, d=d), t(2, 2, dtype=L, d=d), [1, 2]),
    "unpool2d_output_size_length": lambda d: aten.max_unpool2d.default(t(2, 2, d=d), t(2, 2, dtype=L, d=d), [1, 2, 3]),
    "unpool2d_empty_dim": lambda d: aten.max_unpool2d.default(t(2, 0, 2, d=d), t(2, 0, 2, dtype=L, d=d), [1, 2]),
    "fmp2d_bw_1d_input": lambda d: aten.fractional_max_pool2d_backward.default(
        t(1, d=d), t(1, d=d), [3, 2], [1, 4], t(1, dtype=L, d=d)),
    "fmp3d_bw_2d_input": lambda d: aten.fractional_max_pool3d_backward.default(
        t(5, 2, 2, d=d), t(1, 2, d=d).t(), [2, 1, 3], [1, 1, 1], t(0, dtype=L, d=d)),
    "fmp3d_bw_grad_input_1d": lambda d: aten.fractional_max_pool3d_backward.grad_input(
        t(1, dtype=L, d=d), t(1, dtype=L, d=d), [3, 1, 2], [1, 1, 1], t(1, dtype=L, d=d),
        grad_input=t(1, dtype=L, d=d)),
    "fmp3d_bw_grad_width": lambda d: aten.fractional_max_pool3d_backward.default(
        t(2, 1, 1, 2, d=d), t(2, 1, 3, 3, d=d), [2, 1, 3], [1, 1, 1], t(0, dtype=L, d=d)),
    "reflection_pad1d_bw_padding": lambda d: aten.reflection_pad1d_backward.grad_input(
        t(dtype=torch.int32, d=d), t(5, 3, 3, 5, dtype=torch.int32, d=d), [3, 1],
        grad_input=t(5, 3, 3, 5, dtype=torch.int32, d=d)),
    "reflection_pad1d_bw_grad_width": lambda d: aten.reflection_pad1d_backward.default(
        t(2, 3, 6, d=d), t(2, 3, 4, d=d), [1, 2]),
    "replication_pad1d_bw_1d_input": lambda d: aten.replication_pad1d_backward.grad_input(
        t(3, d=d), t(3, dtype=torch.int16, d=d), [0, 2], grad_input=t(0, d=d)),
    "replication_pad1d_bw_grad_width": lambda d: aten.replication_pad1d_backward.default(
        t(2, 3, 6, d=d), t(2, 3, 4, d=d), [1, 2]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)


@pytest.mark.parametrize("mode", MODES)
def test_valid_calls_still_equal_cpu(mode: str) -> None:
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
    idx = torch.tensor([[[[0, 1], [2, 3]]]])
    calls = [
        lambda d: aten.max_pool2d_with_indices.default(x.to(d), [3, 2], padding=[1, 1], dilation=[1, 2]),
        lambda d: aten.max_pool3d_with_indices.default(x.to(d), [2, 2, 2], padding=[1, 1, 0]),
        lambda d: aten.max_unpool3d.default(torch.ones(1, 1, 2, 2, device=d), idx.to(d), [1, 2, 2], [1, 1, 1],
                                            [0, 0, 0]),
        lambda d: aten.max_unpool2d.default(torch.ones(1, 1, 2, 2, device=d), idx.to(d), [2, 2]),
        lambda d: aten.reflection_pad1d_backward.default(torch.arange(32.).reshape(4, 8).to(d), x[0, 0].to(d),
                                                         [1, 2]),
        lambda d: aten.replication_pad1d_backward.default(torch.arange(32.).reshape(4, 8).to(d), x[0, 0].to(d),
                                                          [1, 2]),
    ]
    with torch.tpu.eager_mode(mode):
        for call in calls:
            want, got = call("cpu"), call("tpu")
            for a, b in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
                assert torch.equal(b.cpu(), a)
