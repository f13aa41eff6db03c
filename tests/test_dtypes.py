"""torchtpu.dtypes: one table of what the tpu device holds and computes on; every other dtype is refused at
`.to("tpu")` or at the op with an error naming the dtype, the op and the supported set."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from torchtpu import dtypes
from torchtpu.ops.tracing import TORCH_TO_IR

UNHELD = [torch.float8_e4m3fnuz, torch.float8_e5m2fnuz, torch.float8_e8m0fnu, torch.bits8]


def test_the_compute_set_is_the_ir_dtype_table():
    # fp8: converts and the MXU only; complex32: CPU's ComplexHalf op set
    assert set(dtypes.COMPUTE) | set(dtypes.FLOAT8) | {torch.complex32} == set(TORCH_TO_IR)
    assert not set(dtypes.STORAGE_ONLY) & set(dtypes.COMPUTE) and not set(dtypes.FLOAT8) & set(dtypes.COMPUTE)
    for family, members in dtypes.FAMILIES.items():
        assert set(members) <= set(dtypes.STORAGE), family


@pytest.mark.parametrize("dtype", UNHELD, ids=str)
def test_to_tpu_refuses_a_dtype_the_device_cannot_hold(tpu, dtype):
    x = torch.zeros(3, dtype=dtype)
    with pytest.raises(TypeError, match=rf"a new tpu tensor .*: dtype {dtype} is not supported .*supported: float32, "):
        x.to(tpu)
    assert x.device.type == "cpu" and x.shape == (3,)


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64], ids=str)
def test_unsigned_wide_dtypes_are_storage_only(tpu, dtype):
    x = torch.tensor([1, 2, 40000], dtype=dtype)
    y = x.to(tpu)
    assert torch.equal(y.cpu(), x)  # bytes round-trip
    with pytest.raises(NotImplementedError, match=rf"dtype {dtype} .*stored as bytes only.*supported: float32"):
        y + y
    with pytest.raises(NotImplementedError, match=rf"aten.*sum.*dtype {dtype}"):
        y.sum()


def test_an_op_asked_for_an_unsupported_dtype_names_the_op(tpu):
    x = torch.ones(3, device=tpu)
    with pytest.raises(NotImplementedError, match=r"aten.sum.*dtype torch.uint32 is not supported"):
        x.sum(dtype=torch.uint32)
    with pytest.raises(TypeError, match=r"dtype torch.float8_e4m3fnuz"):
        x.to(torch.float8_e4m3fnuz)
    assert torch.equal(x.cpu(), torch.ones(3))
    assert x.to(torch.float8_e4m3fn).dtype == torch.float8_e4m3fn  # a storage dtype since issue 24 (converts)
    assert x.to(torch.complex128).dtype == torch.complex128  # a compute dtype since issue 17
    assert x.to(torch.complex32).dtype == torch.complex32  # CPU's ComplexHalf op set (tests/test_complex32.py)


def test_a_factory_or_view_of_an_unheld_dtype_is_refused_where_it_is_made(tpu):
    # The C++ factories check the dtype against dtypes.STORAGE, as `.to` does: no tensor of an unheld dtype exists
    # on the device to be read later.
    for make in (lambda: torch.empty(3, dtype=torch.float8_e8m0fnu, device=tpu),
                 lambda: torch.zeros(3, dtype=torch.float8_e5m2fnuz, device=tpu),
                 lambda: torch.empty_strided((2, 2), (1, 2), dtype=torch.float8_e4m3fnuz, device=tpu),
                 lambda: torch.empty_like(torch.ones(2, dtype=torch.float8_e5m2fnuz), device=tpu)):
        with pytest.raises(TypeError, match=r"a new tpu tensor .*: dtype torch.(float8_e5m2fnuz|float8_e4m3fnuz|"
                                            r"float8_e8m0fnu) is not supported on the tpu device .*supported: "
                                            r"float32, .*complex64, complex128"):
            make()
    assert torch.empty(3, dtype=torch.uint16, device=tpu).dtype == torch.uint16
    assert torch.equal(torch.zeros(3, dtype=torch.float8_e5m2, device=tpu).cpu().float(), torch.zeros(3))
    assert torch.empty(3, dtype=torch.complex128, device=tpu).dtype == torch.complex128
    assert torch.view_as_complex(torch.ones(3, 2, dtype=torch.float64, device=tpu)).dtype == torch.complex128
    assert torch.view_as_complex(torch.ones(3, 2, device=tpu)).dtype == torch.complex64


@pytest.mark.parametrize("dtype", list(dtypes.COMPUTE), ids=str)
def test_every_compute_dtype_round_trips_and_adds_as_on_cpu(tpu, dtype):
    x = (torch.arange(6) % 2).to(dtype) if dtype == torch.bool else torch.arange(6).to(dtype)
    y = x.to(tpu)
    assert torch.equal(y.cpu(), x)
    expected = x | x if dtype == torch.bool else x + x
    assert torch.equal((y | y if dtype == torch.bool else y + y).cpu(), expected)


def test_float64_is_exact_elementwise(tpu):
    x = torch.tensor([1.0 + 2**-40, 1e300, -3.25], dtype=torch.float64)
    assert torch.equal((x.to(tpu) * 3 + 1).cpu(), x * 3 + 1)


def test_complex128_is_exact_elementwise(tpu):
    x = torch.tensor([1.0 + 2**-40 - 1j, 1e300j, -3.25 + 2**-45j], dtype=torch.complex128)
    assert torch.equal((x.to(tpu) * 3 + 1j).cpu(), x * 3 + 1j)


def test_docs_show_the_same_table():
    text = (Path(__file__).resolve().parents[1] / "docs" / "install.md").read_text()
    for family, names in dtypes.table():
        assert f"| {family} | {names} |" in text, family


@pytest.mark.parametrize("dtype", dtypes.FAMILIES["matmul, conv (MXU)"], ids=str)
def test_the_matmul_family_matches_cpu(tpu, dtype):
    a = torch.arange(12).reshape(3, 4).to(dtype)
    b = (torch.arange(8).reshape(4, 2) - 3).to(dtype)
    if dtype == torch.uint8:
        b = torch.arange(8).reshape(4, 2).to(dtype)
    with torch.tpu.precision("HIGHEST"):
        got = (a.to(tpu) @ b.to(tpu)).cpu()
    want = (a.to(torch.float64) @ b.to(torch.float64)).to(dtype) if dtype in (torch.float16, torch.bfloat16) else a @ b
    assert got.dtype == dtype and torch.equal(got, want)


_MXU_OPS = {
    "aten::mm": lambda b: torch.mm(b, b),
    "aten::bmm": lambda b: torch.bmm(b[None], b[None]),
    "aten::addmm": lambda b: torch.addmm(b, b, b),
    "aten::mv": lambda b: torch.mv(b, b[0]),
    "aten::dot": lambda b: torch.dot(b[0], b[0]),
    "aten::convolution": lambda b: torch.nn.functional.conv1d(b[None], b[:1, :, None]),
}


@pytest.mark.parametrize("op", sorted(_MXU_OPS))
def test_the_matmul_family_refuses_other_dtypes_at_the_op(tpu, op):
    b = torch.ones(2, 2, dtype=torch.bool)
    with pytest.raises(NotImplementedError) as cpu:  # "addmm_impl_cpu_" not implemented for 'Bool'
        _MXU_OPS[op](b)
    with pytest.raises(NotImplementedError) as raised:  # CPU's words (ops/dtype_refusals.py), before the family's
        _MXU_OPS[op](b.to(tpu)).cpu()
    assert str(raised.value).split('" ')[-1] == str(cpu.value).split('" ')[-1]  # "... not implemented for 'Bool'"
