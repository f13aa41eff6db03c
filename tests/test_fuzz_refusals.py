"""Inputs CPU refuses and torchtpu accepted silently (the schema fuzzer's `cpu_raises` findings, seed 2, issue
17): each call raises CPU's exception class with CPU's words on tpu in every eager mode (a check on values, such
as multinomial's, raises when the program runs; its message then carries the IR op as a suffix)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu, ones

import torchtpu  # noqa: F401

aten = torch.ops.aten


_f = ones


B, U8, I64 = torch.bool, torch.uint8, torch.int64


# name -> fn(device): raises on CPU.
CASES: dict[str, Callable[[str], object]] = {
    "where_float_condition": lambda d: aten.where.self(_f(4, 1, 1, d=d), _f(4, 1, 1, d=d), _f(1, d=d)),
    "where_out_half_condition": lambda d: aten.where.self_out(_f(2, 3, dtype=torch.float16, d=d), _f(3, d=d),
                                                              _f(2, 3, d=d), out=_f(0, d=d)),
    "fill_tensor_1d": lambda d: aten.fill_.Tensor(_f(3, dtype=torch.int64, d=d), _f(3, dtype=torch.int64, d=d)),
    "fill_functional_2d": lambda d: aten.fill.Tensor(_f(1, 1, d=d), _f(1, 2, d=d)),
    "masked_fill_tensor_1d": lambda d: aten.masked_fill.Tensor(_f(2, dtype=B, d=d), _f(2, dtype=B, d=d),
                                                               _f(2, dtype=B, d=d)),
    "masked_fill_out_3d": lambda d: aten.masked_fill.Tensor_out(_f(1, d=d), _f(dtype=torch.bool, d=d), _f(3, 3, 1, d=d),
                                                                out=_f(0, d=d)),
    "put_numel": lambda d: aten.put_.default(_f(4, 1, dtype=U8, d=d), torch.zeros(0, dtype=I64, device=d),
                                             _f(1, 1, dtype=U8, d=d), True),
    "put_dtype": lambda d: aten.put_.default(_f(dtype=torch.int8, d=d), torch.zeros(3, dtype=torch.int64, device=d),
                                             _f(3, dtype=torch.uint8, d=d)),
    "bernoulli_p_2": lambda d: aten.bernoulli_.float(_f(4, 4, 1, d=d), 2.0),
    "bernoulli_p_nan": lambda d: aten.bernoulli_.float(_f(3, d=d), float("nan")),
    "multinomial_negative": lambda d: aten.multinomial.default(torch.tensor([[1.0], [-1.0]], device=d), 1, False).cpu(),
    "multinomial_nan": lambda d: aten.multinomial.default(torch.tensor([1.0, float("nan")], device=d), 1, False).cpu(),
    "multinomial_zero_sum": lambda d: aten.multinomial.default(torch.zeros(2, device=d), 1, True).cpu(),
    "multinomial_replacement_inf": lambda d: aten.multinomial.default(torch.tensor([1.0, float("inf")], device=d), 3,
                                                                      True).cpu(),
    "histc_out_min_above_max": lambda d: aten.histc.out(_f(3, 1, d=d), 100, 4, 1.427, out=_f(3, 1, d=d)),
    "histc_min_above_max": lambda d: torch.histc(_f(3, d=d), 10, 4, 1),
    "histogramdd_min_above_max": lambda d: aten._histogramdd_from_bin_cts.default(_f(1, 1, 1, 1, d=d), [3, 1],
                                                                                 range=[1.0, 0.5]),
    "histogramdd_1d_input": lambda d: aten._histogramdd_from_bin_tensors.default(_f(3, dtype=torch.float64, d=d),
                                                                                [_f(3, dtype=torch.float64, d=d)]),
    "linspace_scalar_tensor_out_1d_end": lambda d: aten.linspace.Scalar_Tensor_out(-0.881, _f(1, d=d), 0,
                                                                                   out=_f(0, d=d)),
    "linspace_both_nd": lambda d: torch.linspace(_f(1, 1, d=d), _f(2, d=d), 3),
    "logspace_start_1d": lambda d: torch.logspace(_f(1, d=d), 2.0, 3),
    "native_dropout_long": lambda d: aten.native_dropout.default(_f(4, 1, 1, 5, dtype=torch.int64, d=d), 0.142, None),
    "channel_shuffle_2d": lambda d: aten.channel_shuffle.default(_f(3, 4, d=d), 4),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)


def test_valid_calls_still_compute() -> None:
    """The checks refuse only what CPU refuses: a uint8 where condition, 0-d fill values, p in [0, 1], an empty
    dropout of integers and eval-mode dropout run as on CPU."""
    x = torch.arange(6.0).reshape(2, 3)
    cond = torch.tensor([1, 0, 1], dtype=torch.uint8)
    assert torch.equal(torch.where(cond.to("tpu"), x.to("tpu"), -x.to("tpu")).cpu(), torch.where(cond, x, -x))
    assert torch.equal(x.to("tpu").fill_(torch.tensor(2.0, device="tpu")).cpu(), x.clone().fill_(2.0))
    assert torch.equal(x.to("tpu").bernoulli_(1.0).cpu(), torch.ones(2, 3))
    assert torch.equal(torch.histc(x.to("tpu"), 3, 0, 6).cpu(), torch.histc(x, 3, 0, 6))
    y = torch.arange(5)
    out, mask = aten.native_dropout.default(y.to("tpu"), 0.5, False)
    assert torch.equal(out.cpu(), y) and bool(mask.cpu().all())
    p = torch.tensor([[0.0, 1.0], [2.0, 0.0]])
    assert torch.equal(torch.multinomial(p.to("tpu"), 1).cpu(), torch.tensor([[1], [0]]))
