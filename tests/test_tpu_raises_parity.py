"""Issue 17, the fuzzer's tpu_raises class (tpu raised where CPU computes): each call here computes on tpu exactly
CPU's result in every eager mode, and where CPU refuses, tpu refuses in CPU's class and first line of words.

addcmul/addcdiv of float16/bfloat16 convert `value` to float32 (CPU's kernel: `value.to<float>()`), so a value past
float16's range is no error (the result overflows to inf) and only a value past float32's is refused."""

from __future__ import annotations

import warnings

import pytest
import torch
from refusal_cases import MODES, assert_close_to_cpu, assert_exactly_cpu, assert_refused_as_cpu

aten = torch.ops.aten
HALVES = [torch.float16, torch.bfloat16]


def _operands(dtype: torch.dtype, d: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(16, generator=g) * 10).to(dtype)
    y = torch.randn(16, generator=g).to(dtype)
    return x.to(d), (x * 0.5).to(d), y.to(d)


# past float16's range (65504), within float32's; 3.4e38 is within float32's, past bfloat16's largest finite
VALUES = [1e6, 2.0 ** 40, -123456.789, 3.4e38]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("value", VALUES)
def test_addcmul_addcdiv_value_in_float32(value: float, dtype: torch.dtype, mode: str) -> None:
    def calls(d: str) -> list[torch.Tensor]:
        s, t1, t2 = _operands(dtype, d)
        return [torch.addcmul(s, t1, t2, value=value), torch.addcdiv(s, t1, t2, value=value),
                s.clone().addcdiv_(t1, t2, value=value),
                torch.addcmul(s, t1, t2, value=value, out=torch.empty(16, dtype=dtype, device=d)),
                *torch._foreach_addcdiv([s], [t1], [t2], value=value)]
    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("op", [torch.addcmul, torch.addcdiv])
def test_addcmul_addcdiv_value_past_float32_refused(op: object, dtype: torch.dtype, mode: str) -> None:
    assert_refused_as_cpu(lambda d: op(*_operands(dtype, d), value=3.5e38), mode)


@pytest.mark.parametrize("mode", MODES)
def test_addcmul_int_value_still_checked(mode: str) -> None:
    # integer tensors: value.to<int8_t>() is checked in the tensor's own type (unchanged)
    assert_refused_as_cpu(lambda d: torch.addcmul(torch.ones(3, dtype=torch.int8, device=d),
                                                  torch.ones(3, dtype=torch.int8, device=d),
                                                  torch.ones(3, dtype=torch.int8, device=d), value=300), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
def test_bitwise_out_of_range_scalar_wraps_as_cpu(dtype: torch.dtype, mode: str) -> None:
    # the known.json entry's bitwise_right_shift.Scalar_Tensor / bitwise_xor.Scalar_out: CPU wraps the scalar
    def calls(d: str) -> list[torch.Tensor]:
        x = torch.tensor([3, 100, 7], dtype=dtype, device=d)
        out = []
        for s in (300, -1, 2 ** 40, -(2 ** 40), 2 ** 63 - 1):
            out.append(torch.bitwise_right_shift(s, x))
            out.append(torch.bitwise_xor(x, s, out=torch.empty(3, dtype=dtype, device=d)))
        return out
    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
def test_log_softmax_backward_every_input_dtype(mode: str) -> None:
    # the known.json entry's bare KeyError from the dtype table: every ScalarType number as input_dtype
    g = torch.Generator().manual_seed(1)
    grad, out = torch.randn(2, 3, generator=g), torch.randn(2, 3, generator=g).log_softmax(1)
    for code in range(26):
        if code == 5:  # Half: CPU refuses a float32 grad (half_to_float)
            assert_refused_as_cpu(lambda d: aten._log_softmax_backward_data(grad.to(d), out.to(d), 1, 5), mode)
            continue
        assert_close_to_cpu(lambda d, c=code: [  # CPU's vectorized exp: last-bit differences
            aten._log_softmax_backward_data(grad.to(d), out.to(d), 1, c),
            aten._log_softmax_backward_data.out(grad.to(d), out.to(d), 1, c, out=torch.empty(0, device=d))], mode)


@pytest.mark.parametrize("mode", MODES)
def test_max_min_binary_out(mode: str) -> None:
    # the known.json entry's max.out / min.out (the binary overloads, CompositeImplicit into maximum/minimum.out)
    def calls(d: str) -> list[torch.Tensor]:
        a = torch.tensor([1.0, float("nan"), 3.0, -0.0], device=d)
        b = torch.tensor([4.0, 2.0, float("nan"), 0.0], device=d)
        return [torch.max(a, b, out=torch.empty(4, device=d)), torch.min(a, b, out=torch.empty(0, device=d)),
                torch.max(a.to(torch.int32), b.nan_to_num().to(torch.int32), out=torch.empty(0, dtype=torch.int32,
                                                                                          device=d))]
    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
def test_foreach_complex_scalar_on_half_is_complex32_as_cpu(mode: str) -> None:
    # CPU computes a complex32 list (ComplexHalf, held on tpu since issue 17): the same bits
    half = [torch.tensor([1.5, -2.25, 0.1], dtype=torch.float16)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn in (lambda t: torch._foreach_add(t, 0.1 + 1j), lambda t: torch._foreach_mul(t, [2 - 0.3j])):
            want = fn(half)[0]
            with torch.tpu.eager_mode(mode):
                got = fn([half[0].to("tpu")])[0].cpu()
            assert got.dtype == want.dtype == torch.complex32
            assert torch.equal(torch.view_as_real(got).view(torch.int16), torch.view_as_real(want).view(torch.int16))


CHOLESKY_EMPTY = [((3, 5, 0, 3), torch.int16), ((4, 0), torch.int32), ((0, 3), torch.float32),
                  ((2, 0, 3), torch.float64), ((0,), torch.float32), ((0, 0), torch.bool)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape_dtype", CHOLESKY_EMPTY, ids=str)
def test_cholesky_empty_any_shape(shape_dtype: tuple, mode: str) -> None:
    # ATen's deprecated cholesky returns empty_like(self) before its square and dtype checks (fuzz seeds 60, 61)
    shape, dtype = shape_dtype
    assert_exactly_cpu(lambda d: [aten.cholesky(torch.ones(shape, dtype=dtype, device=d), True),
                                  aten.cholesky(torch.ones(shape, dtype=dtype, device=d))], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool, torch.float16, torch.bfloat16])
def test_cholesky_dtype_refused_as_cpu(dtype: torch.dtype, mode: str) -> None:
    # cholesky_cpu dispatches on float and complex only: tpu computed a float factor of an int32 matrix
    assert_refused_as_cpu(lambda d: aten.cholesky(torch.eye(2, device=d).to(dtype)), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.complex64])
def test_histogramdd_bin_edges_with_range_or_empty(dtype: torch.dtype, mode: str) -> None:
    # the "histogramdd" dtype refusal is its min/max of an input with elements and no range (fuzz seed 60: bfloat16)
    def calls(d: str) -> list[torch.Tensor]:
        x = torch.arange(5).reshape(5, 1).to(dtype).to(d)
        return [*aten._histogramdd_bin_edges(x, [1], range=[0.5, 1.0]),
                *aten._histogramdd_bin_edges(x, [5], range=[-3.0, 7.0]),
                *aten._histogramdd_bin_edges(x[:0], [2])]
    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
def test_histogramdd_bin_edges_refusals(mode: str) -> None:
    x = torch.arange(5).reshape(5, 1)
    assert_refused_as_cpu(lambda d: aten._histogramdd_bin_edges(x.to(torch.bfloat16).to(d), [2]), mode)
    assert_refused_as_cpu(lambda d: aten._histogramdd_bin_edges(x.bool().to(d), [2], range=[0.5, 1.0]), mode)
    with torch.tpu.eager_mode(mode), pytest.raises(NotImplementedError, match="integer .* bin edges"):
        aten._histogramdd_bin_edges(x.to("tpu"), [2], range=[0.5, 1.0])  # CPU computes; tpu would round otherwise


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("value", [-0.95 + 1j, 1j, 0j, complex(float("nan"), 0), -0.0j], ids=str)
def test_full_out_complex_into_bool(value: complex, mode: str) -> None:
    # fill_'s Scalar::toBool(): z != 0 (fuzz seed 60: tpu refused the complex result's cast to Bool)
    assert_exactly_cpu(lambda d: [aten.full.out([4, 2], value, out=torch.empty(0, dtype=torch.bool, device=d))],
                       mode)


@pytest.mark.parametrize("mode", MODES)
def test_full_out_complex_into_real_still_refused(mode: str) -> None:
    assert_refused_as_cpu(lambda d: aten.full.out([2], 1 + 1j, out=torch.empty(0, device=d)), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_mode_of_a_0d_complex(dtype: torch.dtype, mode: str) -> None:
    # ATen returns a 0-d self as its own mode before the dtype dispatch (fuzz seed 61)
    assert_exactly_cpu(lambda d: [*aten.mode(torch.tensor(1 + 2j, dtype=dtype, device=d)),
                                  *aten.mode(torch.tensor(-3j, dtype=dtype, device=d), 0, True)], mode)
    assert_refused_as_cpu(lambda d: aten.mode(torch.ones(2, dtype=dtype, device=d)), mode)


@pytest.mark.parametrize("mode", MODES)
def test_embedding_bag_2d_indices(mode: str) -> None:
    # F.embedding_bag flattens 2-D input itself (computed); aten._embedding_bag's own 2-D reading is refused clearly
    w = torch.randn(6, 3, generator=torch.Generator().manual_seed(2))
    idx = torch.tensor([[1, 2], [3, 0], [5, 5]])
    assert_exactly_cpu(lambda d: [torch.nn.functional.embedding_bag(idx.to(d), w.to(d), mode="max")], mode)
    with torch.tpu.eager_mode(mode), pytest.raises(NotImplementedError, match="2-D indices are refused"):
        aten._embedding_bag(w.to("tpu"), idx.to("tpu"), torch.tensor([0, 2], device="tpu"), False, 0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape_dim", [((0,), -1), ((0, 5, 5, 0), -1), ((2, 0), 1), ((0, 2), 0)], ids=str)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int8, torch.complex64])
def test_mode_empty_reduced_dim_refused_as_cpu(dtype: torch.dtype, shape_dim: tuple, mode: str) -> None:
    # zero_numel_check_dims before the dispatch: tpu computed (cpu_raises, fuzz seeds 2, 3) or refused complex first
    shape, dim = shape_dim
    assert_refused_as_cpu(lambda d: aten.mode(torch.ones(shape, dtype=dtype, device=d), dim), mode)
