"""Calls CPU computes where tpu raised (fuzz seeds 3-5, issue 17): each is compared with CPU in every eager mode
and under torch.compile; the refusals that stay (CPU refuses too) in CPU's class and words."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu

import torchtpu  # noqa: F401

A = torch.ops.aten


def _t(values: list, dtype: torch.dtype, d: str) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=d)


CASES: dict[str, Callable[[str], object]] = {
    "nanmedian_int8_empty": lambda d: A.nanmedian(torch.zeros(4, 0, dtype=torch.int8, device=d)),
    "nanmedian_int32_empty": lambda d: A.nanmedian(torch.zeros(4, 0, dtype=torch.int32, device=d)),
    "median_int64_empty": lambda d: A.median(torch.zeros(0, dtype=torch.int64, device=d)),
    "median_int16_empty": lambda d: A.median(torch.zeros(0, 3, dtype=torch.int16, device=d)),
    "lu_factor_ex_empty_no_pivot": lambda d: A.linalg_lu_factor_ex(torch.zeros(0, 3, device=d), pivot=False),
    "lu_unpack_int16": lambda d: A.lu_unpack(torch.arange(15, device=d).reshape(3, 5).to(torch.int16),
                                             _t([1, 2, 3], torch.int32, d), unpack_pivots=False),
    "lu_unpack_out_int16": lambda d: A.lu_unpack.out(
        torch.arange(15, device=d).reshape(3, 5).to(torch.int16), _t([1, 2, 3], torch.int32, d),
        unpack_pivots=False, P=torch.zeros(0, dtype=torch.int16, device=d),
        L=torch.zeros(0, dtype=torch.int16, device=d), U=torch.zeros(3, 5, dtype=torch.int16, device=d)),
    "bucketize_bool_float_boundaries": lambda d: A.bucketize.Tensor(_t([True, False, True], torch.bool, d),
                                                                    _t([-1.0, 0.5, 0.75, 2.0], torch.float32, d)),
    "addcmul_int_float_value": lambda d: A.addcmul(torch.ones(3, dtype=torch.int64, device=d),
                                                   _t([3, -4, 5], torch.int64, d), _t([5, 5, 7], torch.int64, d),
                                                   value=-1.858),
    "addcmul__int_float_value": lambda d: A.addcmul_(torch.ones(3, dtype=torch.int64, device=d),
                                                     _t([3, -4, 5], torch.int64, d), _t([5, 5, 7], torch.int64, d),
                                                     value=2.9),
    "addcmul_out_int8_float_value": lambda d: A.addcmul.out(
        torch.ones(3, dtype=torch.int8, device=d), _t([3, 3, -3], torch.int8, d), _t([5, 5, 5], torch.int8, d),
        value=-1.5, out=torch.zeros(3, dtype=torch.int8, device=d)),
}

REFUSED: dict[str, Callable[[str], object]] = {
    "lu_factor_ex_no_pivot": lambda d: A.linalg_lu_factor_ex(torch.ones(2, 3, device=d), pivot=False),
    "bucketize_bool_bool": lambda d: A.bucketize.Tensor(_t([True], torch.bool, d), _t([False, True], torch.bool, d)),
}


def _cpu(value: object) -> object:
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, tuple | list):
        return type(value)(_cpu(v) for v in value)
    return value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CASES))
def test_matches_cpu(name: str, mode: str) -> None:
    expected = CASES[name]("cpu")
    with torch.tpu.eager_mode(mode):
        got = _cpu(CASES[name]("tpu"))
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", [n for n in CASES if not n.endswith("_out_int16") and "addcmul_" not in n])
def test_matches_cpu_compiled(name: str) -> None:
    expected = CASES[name]("cpu")
    torch._dynamo.reset()
    got = _cpu(torch.compile(lambda: CASES[name]("tpu"), backend="tpu")())
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[name], mode)


EMPTY_SOFTMAX: dict[str, Callable[[str], object]] = {
    "softmax_out_bool_empty": lambda d: A._softmax.out(torch.zeros(1, 0, dtype=torch.bool, device=d), -1, False,
                                                       out=torch.zeros(1, 0, dtype=torch.bool, device=d)),
    "softmax_int_empty": lambda d: A._softmax(torch.zeros(0, 3, dtype=torch.int32, device=d), -1, False),
    "log_softmax_bool_empty": lambda d: A._log_softmax(torch.zeros(2, 0, dtype=torch.bool, device=d), 1, False),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(EMPTY_SOFTMAX))
def test_empty_softmax_matches_cpu(name: str, mode: str) -> None:
    expected = EMPTY_SOFTMAX[name]("cpu")
    with torch.tpu.eager_mode(mode):
        got = EMPTY_SOFTMAX[name]("tpu").cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape


@pytest.mark.parametrize("mode", MODES)
def test_nonempty_bool_softmax_still_refused(mode: str) -> None:
    assert_refused_as_cpu(lambda d: A._softmax(torch.ones(1, 2, dtype=torch.bool, device=d), -1, False), mode)
