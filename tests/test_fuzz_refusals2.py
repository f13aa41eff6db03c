"""The schema fuzzer's seed-2 findings of issue 17, second round: inputs CPU refuses that tpu computed silently
(`cpu_raises`), and inputs CPU computes that tpu refused (`tpu_raises`). Each refused call raises CPU's exception
class with CPU's words on tpu in every eager mode (a check on values raises when the program runs) and, where
the op reaches a compiled graph, under torch.compile(backend="tpu"); each computed call equals CPU."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu, assert_refused_as_cpu_compiled, ones

import torchtpu  # noqa: F401

aten = torch.ops.aten
F16, F32, F64, I64, U8 = torch.float16, torch.float32, torch.float64, torch.int64, torch.uint8


_f = ones


def _t(values: list, dtype: torch.dtype, d: str) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=d)


# name -> fn(device): raises on CPU.
CASES: dict[str, Callable[[str], object]] = {
    "embedding_bag_per_sample_weights_backward_mean": lambda d: aten._embedding_bag_per_sample_weights_backward.default(
        _f(2, 2, d=d), _f(5, 2, d=d), _t([0, 1, 2, 3], I64, d), _t([0, 2], I64, d), _t([0, 0, 1, 1], I64, d), 1, -1),
    "log_softmax_out_float_half_to_float": lambda d: aten._log_softmax.out(_f(2, d=d), -1, True, out=_f(0, d=d)),
    "softmax_out_float_half_to_float": lambda d: aten._softmax.out(_f(1, 1, d=d), 1, True, out=_f(4, 1, d=d)),
    "softmax_double_half_to_float": lambda d: aten._softmax.default(_f(3, dtype=F64, d=d), 0, True),
    "log_softmax_0d_dim_out_of_range": lambda d: aten._log_softmax.default(_f(d=d), 1, True),
    "batch_norm_legit_2d_running_mean": lambda d: aten._native_batch_norm_legit.default(
        _f(1, 3, d=d), _f(3, d=d), None, _f(1, 3, d=d), _f(3, d=d), False, 0.676, 1e-05),
    "pdist_out_non_contiguous": lambda d: aten._pdist_forward.out(_f(2, 3, d=d).t(), 2.0, out=_f(0, d=d)),
    "pdist_non_contiguous": lambda d: aten._pdist_forward.default(_f(2, 3, d=d).t(), 2.0),
    "prelu_kernel_backward_dtypes": lambda d: aten._prelu_kernel_backward.default(
        _f(3, 4, dtype=F64, d=d), _f(3, 4, dtype=U8, d=d), _f(3, 4, dtype=U8, d=d)),
    "prelu_kernel_backward_uint8": lambda d: aten._prelu_kernel_backward.default(
        _f(2, dtype=U8, d=d), _f(2, dtype=U8, d=d), _f(2, dtype=U8, d=d)),
    "bce_backward_grad_input_dtypes": lambda d: aten.binary_cross_entropy_backward.grad_input(
        _f(1, 1, 1, dtype=U8, d=d), _f(1, 1, 1, dtype=U8, d=d), _f(1, 1, 1, dtype=I64, d=d), _f(1, dtype=U8, d=d), 0,
        grad_input=_f(1, 1, 1, dtype=U8, d=d)),
    "bce_backward_uint8": lambda d: aten.binary_cross_entropy_backward.default(
        _f(2, dtype=U8, d=d), _f(2, dtype=U8, d=d), _f(2, dtype=U8, d=d)),
    "count_nonzero_out_half": lambda d: aten.count_nonzero.out(_f(5, dtype=F64, d=d), None, out=_f(0, dtype=F16, d=d)),
    "count_nonzero_dim_out_float": lambda d: aten.count_nonzero.dim_IntList_out(_f(2, 3, d=d), [1], out=_f(2, d=d)),
    "flip_0d_dim_out_of_range": lambda d: aten.flip.default(_f(d=d), [-2]),
    "flip_0d_repeated_dim": lambda d: aten.flip.default(_f(d=d), [-1, 0]),
    "flip_out_0d_dim_out_of_range": lambda d: aten.flip.out(_f(dtype=F64, d=d), [-2], out=_f(5, 2, dtype=F64, d=d)),
    "glu_backward_grad_input_bool_self": lambda d: aten.glu_backward.grad_input(
        _f(d=d), _f(4, 0, 5, dtype=torch.bool, d=d), -3, grad_input=_f(4, 0, 5, d=d)),
    "glu_backward_double_grad": lambda d: aten.glu_backward.default(_f(1, dtype=F64, d=d), _f(2, d=d), 0),
    "glu_backward_complex": lambda d: aten.glu_backward.default(_f(1, dtype=torch.complex64, d=d),
                                                                _f(2, dtype=torch.complex64, d=d), 0),
    "log_sigmoid_backward_dtypes": lambda d: aten.log_sigmoid_backward.default(
        _f(4, 1, dtype=torch.int8, d=d), _f(4, 1, d=d), _f(4, 1, dtype=torch.int32, d=d)),
    "log_sigmoid_backward_int": lambda d: aten.log_sigmoid_backward.default(
        _f(2, dtype=torch.int32, d=d), _f(2, dtype=torch.int32, d=d), _f(2, dtype=torch.int32, d=d)),
    "mode_values_float_indices": lambda d: aten.mode.values(_f(d=d), -1, True, values=_f(0, d=d), indices=_f(d=d)),
    "mode_values_double_values": lambda d: aten.mode.values(_f(4, d=d), values=_f(0, dtype=F64, d=d),
                                                            indices=_f(0, dtype=I64, d=d)),
    "nanmedian_dim_values_float_indices": lambda d: aten.nanmedian.dim_values(
        _f(2, 4, d=d), 1, values=_f(0, d=d), indices=_f(0, d=d)),
    "median_dim_values_double_values": lambda d: aten.median.dim_values(
        _f(2, 4, d=d), 1, values=_f(0, dtype=F64, d=d), indices=_f(0, dtype=I64, d=d)),
    "nan_to_num_out_dtype": lambda d: aten.nan_to_num.out(_f(5, 1, 2, 4, dtype=I64, d=d), None, float("nan"), 0.5,
                                                          out=_f(5, 2, 2, 4, dtype=torch.int8, d=d)),
    "searchsorted_out_float": lambda d: aten.searchsorted.Tensor_out(_f(4, d=d), _f(3, d=d), out=_f(0, d=d)),
    "searchsorted_out_int32_flag": lambda d: aten.searchsorted.Tensor_out(_f(4, d=d), _f(3, d=d), out_int32=True,
                                                                          out=_f(0, dtype=I64, d=d)),
    "segment_reduce_offsets_decreasing": lambda d: aten.segment_reduce.default(
        _f(2, d=d), "sum", offsets=_t([0, 2, 1], I64, d)).cpu(),
    "segment_reduce_lengths_negative": lambda d: aten.segment_reduce.default(
        _f(2, d=d), "sum", lengths=_t([3, -1], I64, d)).cpu(),
    "segment_reduce_lengths_sum": lambda d: aten.segment_reduce.default(
        _f(3, d=d), "max", lengths=_t([1, 1], I64, d)).cpu(),
    "slice_scatter_src_size": lambda d: aten.slice_scatter.default(_f(1, 4, 3, dtype=F64, d=d),
                                                                   _f(1, 4, 1, dtype=F64, d=d), 2),
    "slice_scatter_out_src_size": lambda d: aten.slice_scatter.out(
        _f(1, 4, 3, dtype=F64, d=d), _f(1, 4, 1, dtype=F64, d=d), 2, None, None, 1, out=_f(1, 4, 3, dtype=F64, d=d)),
    "cumsum_out_bool": lambda d: aten.cumsum.out(_f(3, dtype=torch.bool, d=d), 0, out=_f(3, dtype=torch.bool, d=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)



# ops that reach a compiled graph as themselves or as the decomposition that the checks guard
COMPILED = ["flip_0d_dim_out_of_range", "glu_backward_double_grad", "log_sigmoid_backward_dtypes",
            "prelu_kernel_backward_dtypes", "slice_scatter_src_size", "bce_backward_uint8",
            "segment_reduce_offsets_decreasing"]


@pytest.mark.parametrize("name", COMPILED)
def test_refused_as_cpu_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(CASES[name])


@pytest.mark.parametrize("mode", MODES)
def test_accepted_as_cpu(mode: str) -> None:
    """What CPU computes, tpu computes: a LENIENT reduction into an out= dtype the default result cannot be cast
    to (the meta computes in the out's dtype), smooth_l1_loss of int8 and float32 (promoted), normal's out= forms
    with an integer mean or an empty uint8 out, flip of a 0-d tensor by dim -1."""
    with torch.tpu.eager_mode(mode):
        x = torch.tensor([[True], [False], [True]])
        for fn in (lambda d: aten.sum.IntList_out(x.to(d), [1], out=torch.empty(3, 1, dtype=torch.bool, device=d)),
                   lambda d: aten.prod.int_out(torch.tensor([[2, 3], [0, 1]], device=d), 1,
                                               out=torch.empty(2, dtype=torch.bool, device=d)),
                   lambda d: aten.sum.IntList_out(torch.tensor([[0.6, 0.7], [1.5, 2.5]], device=d), [1],
                                                  out=torch.empty(2, dtype=torch.int32, device=d)),
                   lambda d: aten.smooth_l1_loss.out(torch.tensor([[1, -2], [3, 4]], dtype=torch.int8, device=d),
                                                     torch.tensor([[0.5, 1.0], [2.0, 3.5]], device=d), beta=0.974,
                                                     out=torch.empty(0, device=d)),
                   lambda d: aten.flip.default(torch.tensor(2.0, device=d), [-1]),
                   lambda d: aten.normal.Tensor_float_out(torch.ones((), dtype=U8, device=d), 3.0,
                                                          out=torch.empty(0, dtype=U8, device=d))):
            expected, got = fn("cpu"), fn("tpu")
            assert got.dtype == expected.dtype and torch.equal(got.cpu(), expected), (got, expected)
        out = aten.normal.Tensor_float_out(torch.ones(2, 3, dtype=torch.int16, device="tpu"), 0.0,
                                           out=torch.empty(2, 3, device="tpu"))
        assert out.dtype == F32 and torch.equal(out.cpu(), torch.ones(2, 3))


def test_half_to_float_as_cuda() -> None:
    """_softmax / _log_softmax with half_to_float and a Half input compute a float32 result, as CUDA's kernel
    does (CPU's refuses half_to_float for every input; tpu refuses it, as both do, for any other dtype)."""
    x = torch.tensor([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5]], dtype=F16)
    y = aten._softmax.default(x.to("tpu"), 1, True)
    assert y.dtype == F32 and torch.allclose(y.cpu(), torch.softmax(x.float(), 1), atol=1e-6)
    z = aten._log_softmax.default(x.to("tpu"), 1, True)
    assert z.dtype == F32 and torch.allclose(z.cpu(), torch.log_softmax(x.float(), 1), atol=1e-6)
