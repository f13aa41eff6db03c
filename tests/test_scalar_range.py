"""A Python scalar stored into a tensor of a narrower type raises as on CPU ("value cannot be converted to type
int8_t without overflow"), never wraps: fill_/full/new_full/full_like, masked_fill, index_fill, scatter's value,
clamp's bounds, where's scalar operand, add/sub's alpha, addcmul's value, setitem; in every eager mode and under
torch.compile. Arithmetic with a wrapped scalar (`int8 + 1000`) wraps on CPU too, and must keep doing so."""

from __future__ import annotations

import pytest
import torch

import torchtpu  # noqa: F401
from torchtpu import dtypes

MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]


def _z(dt: torch.dtype, device: str) -> torch.Tensor:
    return torch.zeros(2, dtype=dt, device=device)


def _mask(device: str) -> torch.Tensor:
    return torch.tensor([True, False], device=device)


def _idx(device: str) -> torch.Tensor:
    return torch.tensor([0], device=device)


def _setitem(x: torch.Tensor, key: object, v: object) -> torch.Tensor:
    x[key] = v
    return x


# name -> fn(device); each raises on CPU.
OVERFLOWS = {
    "full_u8_300": lambda d: torch.full((2,), 300, dtype=torch.uint8, device=d),
    "full_int64_2**63": lambda d: torch.full((2,), 2**63, device=d),
    "fill_i8_200": lambda d: _z(torch.int8, d).fill_(200),
    "fill_i8_1e10": lambda d: _z(torch.int8, d).fill_(1e10),
    "fill_u8_-1.0": lambda d: _z(torch.uint8, d).fill_(-1.0),
    "fill_i32_nan": lambda d: _z(torch.int32, d).fill_(float("nan")),
    "fill_f16_1e6": lambda d: _z(torch.float16, d).fill_(1e6),
    "fill_f32_1e39": lambda d: _z(torch.float32, d).fill_(1e39),
    "fill_real_complex": lambda d: _z(torch.float32, d).fill_(1 + 2j),
    "new_full_u8": lambda d: _z(torch.uint8, d).new_full((2,), 256),
    "full_like_u8": lambda d: torch.full_like(_z(torch.uint8, d), 256),
    "masked_fill_i8": lambda d: _z(torch.int8, d).masked_fill(_mask(d), 1000),
    "masked_fill_f16": lambda d: _z(torch.float16, d).masked_fill(_mask(d), 1e6),
    "index_fill_i8": lambda d: _z(torch.int8, d).index_fill(0, _idx(d), 1000),
    "scatter_value_i8": lambda d: _z(torch.int8, d).scatter(0, _idx(d), 1000),
    "scatter_reduce_value_i8": lambda d: _z(torch.int8, d).scatter(0, _idx(d), 1000, reduce="add"),
    "clamp_i8": lambda d: _z(torch.int8, d).clamp(-1000, 1000),
    "clamp_max_i8": lambda d: _z(torch.int8, d).clamp(max=1000),
    "clamp_min_i8": lambda d: _z(torch.int8, d).clamp_min(300),
    "clamp_f16": lambda d: _z(torch.float16, d).clamp(max=1e6),
    "hardtanh_i8": lambda d: torch.nn.functional.hardtanh(_z(torch.int8, d), -1000, 1000),
    "where_other_i8": lambda d: torch.where(_mask(d), _z(torch.int8, d), 1000),
    "where_self_i8": lambda d: torch.where(_mask(d), 1000, _z(torch.int8, d)),
    "threshold_value_i8": lambda d: torch.nn.functional.threshold(_z(torch.int8, d), 1, 1000),
    "add_alpha_i8": lambda d: torch.add(_z(torch.int8, d), _z(torch.int8, d), alpha=1000),
    "sub_alpha_i8": lambda d: torch.sub(_z(torch.int8, d), _z(torch.int8, d), alpha=1000),
    "add_alpha_f16": lambda d: torch.add(_z(torch.float16, d), _z(torch.float16, d), alpha=1e6),
    "addcmul_value_i8": lambda d: torch.addcmul(_z(torch.int8, d), _z(torch.int8, d), _z(torch.int8, d), value=1000),
    "setitem_int_i8": lambda d: _setitem(_z(torch.int8, d), 0, 1000),
    "setitem_slice_i8": lambda d: _setitem(_z(torch.int8, d), slice(None), 1000),
    "setitem_mask_i8": lambda d: _setitem(_z(torch.int8, d), _mask(d), 1000),
    "index_fill_empty_index_i8": lambda d: _z(torch.int8, d).index_fill(0, torch.tensor([], dtype=torch.long,
                                                                                          device=d), 1000),
    "fill_empty_i8": lambda d: torch.zeros(0, dtype=torch.int8, device=d).fill_(1000),
    "fill_diagonal_i8": lambda d: torch.zeros(2, 2, dtype=torch.int8, device=d).fill_diagonal_(1000),
}

# name -> fn(device); each succeeds on CPU (wrapping or in range) and must give CPU's values.
FITS = {
    "add_scalar_wraps": lambda d: torch.add(_z(torch.int8, d), 1000),
    "mul_scalar_wraps": lambda d: torch.ones(2, dtype=torch.uint8, device=d) * 300,
    "sub_scalar_wraps": lambda d: _z(torch.uint8, d) - 300,
    "fill_u8_-1_wraps": lambda d: _z(torch.uint8, d).fill_(-1),
    "fill_u8_-255": lambda d: _z(torch.uint8, d).fill_(-255),
    "fill_i8_-128": lambda d: _z(torch.int8, d).fill_(-128),
    "fill_i8_127.0": lambda d: _z(torch.int8, d).fill_(127.0),
    "fill_bool_5": lambda d: _z(torch.bool, d).fill_(5),
    "fill_f16_inf": lambda d: _z(torch.float16, d).fill_(float("inf")),
    "fill_f16_65504": lambda d: _z(torch.float16, d).fill_(65504.0),
    "fill_i64_2.0**63": lambda d: _z(torch.float64, d).fill_(2.0**63),
    "clamp_i8_float_promotes": lambda d: _z(torch.int8, d).clamp(1000.5),
    "where_f16_1e6": lambda d: torch.where(_mask(d), _z(torch.float16, d), 1e6),
    "where_float_promotes": lambda d: torch.where(_mask(d), _z(torch.int8, d), 1000.5),
    "eq_scalar": lambda d: _z(torch.int8, d) == 1000,
    "add_alpha_u8_-1": lambda d: torch.add(_z(torch.uint8, d), torch.ones(2, dtype=torch.uint8, device=d), alpha=-1),
    "scatter_empty_index": lambda d: _z(torch.int8, d).scatter(0, torch.tensor([], dtype=torch.long, device=d), 1000),
    "masked_fill_u8_-1": lambda d: _z(torch.uint8, d).masked_fill(_mask(d), -1),
}


def _cpu_message(fn) -> str:
    with pytest.raises(RuntimeError) as info:
        fn("cpu")
    return str(info.value)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(OVERFLOWS))
def test_overflowing_scalar_raises_as_cpu(name: str, mode: str) -> None:
    fn = OVERFLOWS[name]
    prefix = _cpu_message(fn).split(" without overflow")[0]
    with pytest.raises(RuntimeError, match=f"^{prefix} without overflow") as info:
        with torch.tpu.eager_mode(mode):
            fn("tpu").cpu()
    assert " got " in str(info.value) and " tensor" in str(info.value)  # names the op, the value and the dtype


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(FITS))
def test_fitting_or_wrapping_scalar_matches_cpu(name: str, mode: str) -> None:
    fn = FITS[name]
    want = fn("cpu")
    with torch.tpu.eager_mode(mode):
        got = fn("tpu").cpu()
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, equal_nan=True)


def test_message_names_value_dtype_and_range() -> None:
    with pytest.raises(RuntimeError, match=r"uint8_t without overflow: full\(\) got 300 for a torch.uint8 tensor "
                                           r"\(valid range \[0, 255\]\)"):
        torch.full((2,), 300, dtype=torch.uint8, device="tpu")


@pytest.mark.parametrize("name", ["fill_i8_200", "masked_fill_i8", "clamp_i8", "where_other_i8", "full_u8_300",
                                  "index_fill_i8", "new_full_u8", "full_like_u8", "scatter_value_i8",
                                  "add_alpha_i8", "fill_f16_1e6", "setitem_mask_i8"])
def test_overflow_raises_under_compile(name: str) -> None:
    fn = OVERFLOWS[name]
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: fn(x.device.type), backend="tpu")
    with pytest.raises(RuntimeError, match="without overflow"):
        compiled(torch.zeros(1, device="tpu")).cpu()


def test_dim_check_comes_first() -> None:
    for device in ("cpu", "tpu"):
        with pytest.raises(IndexError, match="Dimension out of range"):
            _z(torch.int8, device).index_fill(3, _idx(device), 1000)
        with pytest.raises(IndexError, match="Dimension out of range"):
            _z(torch.int8, device).scatter(3, _idx(device), 1000)


def test_where_f16_fits_under_compile() -> None:
    torch._dynamo.reset()
    fn = FITS["where_f16_1e6"]
    got = torch.compile(lambda x: fn(x.device.type), backend="tpu")(torch.zeros(1, device="tpu"))
    torch.testing.assert_close(got.cpu(), fn("cpu"))


def test_scalar_overflows_matches_cpu_table() -> None:
    values = [-256, -255, -129, -128, -1, 127, 128, 255, 256, 2**31, 2**63 - 1, -2**63, -1.0, -0.5, 255.5, 256.0,
              -128.5, -129.0, 127.5, float("nan"), float("inf"), -float("inf"), 1e39, 3.5e38, 3.39e38, 65504.0,
              65520.0, 1e5, 1 + 2j, complex(1, 0), complex(1e39, 0), 2.0**63, 2.0**64]
    wrong = []
    for dt in dtypes.COMPUTE:
        for v in values:
            try:
                torch.zeros(2, dtype=dt).fill_(v)  # CPU skips the check for Half with one element
                cpu = False
            except RuntimeError:
                cpu = True
            if cpu != dtypes.scalar_overflows(v, dt):
                wrong.append((dt, v, cpu))
    assert not wrong
