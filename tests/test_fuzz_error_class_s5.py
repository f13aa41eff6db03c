"""Calls both CPU and tpu refuse, where tpu refused in another class or words (fuzz seeds 5-7's error_class
findings) or computed what CPU refuses: refused in CPU's class and first line of words, in every eager mode."""

import pytest
import torch
from refusal_cases import MODES, assert_refused_as_cpu

aten = torch.ops.aten


def _t(*shape: int, dtype: torch.dtype = torch.float32, d: str = "cpu", fill: float = 1) -> torch.Tensor:
    return torch.full(shape, fill, dtype=dtype, device=d)


CASES = {
    # normal's std check comes before its kernel's dtype dispatch
    "normal_float_tensor_int16_negative_std": lambda d: aten.normal.float_Tensor(0.5, _t(4, 2, dtype=torch.int16,
                                                                                         d=d, fill=-1)),
    "normal_tensor_tensor_int64_negative_std": lambda d: aten.normal.Tensor_Tensor(_t(5, 1, dtype=torch.int64, d=d),
                                                                                   _t(5, 4, dtype=torch.int64, d=d,
                                                                                      fill=-2)),
    "normal_tensor_float_int8_negative_std": lambda d: aten.normal.Tensor_float(_t(3, dtype=torch.int8, d=d), -1.0),
    # padding: the input's rank and sizes before the kernel's dtype dispatch; the 2-D and 3-D backward's checks
    "reflection_pad1d_bool_1d": lambda d: aten.reflection_pad1d(_t(3, dtype=torch.bool, d=d), [1, 2]),
    "reflection_pad1d_out_bool_expanded_1d": lambda d: aten.reflection_pad1d.out(
        _t(1, dtype=torch.bool, d=d).expand(3), [1, 2], out=_t(dtype=torch.bool, d=d)),
    "replication_pad3d_backward_int16_3d": lambda d: aten.replication_pad3d_backward(
        _t(2, 3, 2, dtype=torch.int16, d=d), _t(2, 3, 2, dtype=torch.int16, d=d), [2, 1, 2, 2, 1, 0]),
    "replication_pad3d_backward_int8_2d": lambda d: aten.replication_pad3d_backward(
        _t(2, 3, dtype=torch.int8, d=d), _t(2, 3, dtype=torch.int8, d=d), [2, 3, 0, 2, 1, 0]),
    "replication_pad3d_backward_padding_length": lambda d: aten.replication_pad3d_backward(
        _t(1, 2, 3, 2, d=d), _t(1, 2, 3, 2, d=d), [2, 1, 2, 2]),
    "replication_pad3d_backward_grad_width": lambda d: aten.replication_pad3d_backward(
        _t(1, 2, 3, 2, d=d), _t(1, 2, 3, 2, d=d), [2, 1, 2, 2, 1, 0]),
    "replication_pad3d_backward_grad_height": lambda d: aten.replication_pad3d_backward(
        _t(1, 2, 4, 5, d=d), _t(1, 2, 3, 2, d=d), [2, 1, 2, 2, 1, 0]),
    "replication_pad2d_backward_grad_height": lambda d: aten.replication_pad2d_backward(
        _t(1, 2, 6, d=d), _t(1, 2, 3, d=d), [2, 1, 2, 2]),
    "replication_pad2d_backward_grad_rank": lambda d: aten.replication_pad2d_backward(
        _t(2, 6, d=d), _t(1, 2, 3, d=d), [2, 1, 2, 2]),
    "reflection_pad2d_backward_int16_1d": lambda d: aten.reflection_pad2d_backward(
        _t(2, dtype=torch.int16, d=d), _t(2, dtype=torch.int16, d=d), [2, 1, 2, 2]),
    "reflection_pad2d_backward_grad_width": lambda d: aten.reflection_pad2d_backward(
        _t(1, 4, 3, dtype=torch.int16, d=d), _t(1, 4, 3, dtype=torch.int16, d=d), [2, 1, 2, 2]),
    "reflection_pad3d_backward_rank": lambda d: aten.reflection_pad3d_backward(
        _t(2, 2, 2, 2, d=d), _t(2, 2, 2, d=d), [0] * 6),
    "reflection_pad3d_backward_grad_rank": lambda d: aten.reflection_pad3d_backward(
        _t(2, 2, 2, d=d), _t(2, 2, 2, 2, d=d), [0] * 6),
    "reflection_pad3d_backward_grad_depth": lambda d: aten.reflection_pad3d_backward(
        _t(2, 2, 2, 2, d=d), _t(2, 2, 2, 2, d=d), [0, 0, 0, 0, 1, 0]),
    # std / var family: the input's dtype, then the correction's conversion to double, before the dims
    "var_mean_correction_out_complex_correction": lambda d: aten.var_mean.correction_out(
        _t(1, d=d), [-1], correction=0.3 + 1j, keepdim=False, out0=_t(1, 4, 3, d=d), out1=_t(0, d=d)),
    "var_complex_correction": lambda d: aten.var.correction(_t(3, d=d), [-1], correction=0.3 + 1j),
    "std_complex_correction": lambda d: aten.std.correction(_t(3, d=d), [-1], correction=0.3 + 1j),
    "std_mean_complex_correction": lambda d: aten.std_mean.correction(_t(3, d=d), None, correction=0.3 + 1j),
    "std_uint8_bad_dim": lambda d: aten.std.correction(_t(1, dtype=torch.uint8, d=d), [-2], keepdim=False),
    "var_mean_uint8_complex_correction": lambda d: aten.var_mean.correction(_t(3, dtype=torch.uint8, d=d), [5],
                                                                            correction=1 + 1j),
    # mode.values: the outs' dtypes before the dim
    "mode_values_complex_indices_bad_dim": lambda d: aten.mode.values(
        _t(dtype=torch.complex64, d=d), 2, values=_t(0, dtype=torch.complex64, d=d),
        indices=_t(5, 2, dtype=torch.complex64, d=d)),
    "mode_values_bad_dim": lambda d: aten.mode.values(_t(3, d=d), 2, values=_t(0, d=d),
                                                      indices=_t(0, dtype=torch.int64, d=d)),
    # rrelu_with_noise: lower / upper to the kernel's opmath type, after the noise shape
    "rrelu_with_noise_bfloat16_complex_lower": lambda d: aten.rrelu_with_noise(
        _t(2, 5, 5, dtype=torch.bfloat16, d=d), _t(2, 5, 5, dtype=torch.bfloat16, d=d), -0.15 + 1j, training=False),
    "rrelu_with_noise_complex_upper": lambda d: aten.rrelu_with_noise(_t(2, 5, d=d), _t(2, 5, d=d), 0.1, 0.3 + 1j),
    "rrelu_with_noise_training_complex_lower": lambda d: aten.rrelu_with_noise(_t(2, 5, d=d), _t(2, 5, d=d),
                                                                               0.1 + 1j, training=True),
    "rrelu_with_noise_double_complex_lower": lambda d: aten.rrelu_with_noise(
        _t(2, dtype=torch.float64, d=d), _t(2, dtype=torch.float64, d=d), 0.1 + 1j),
    # LU: the rank check first (the lowering's own error was a TypeError)
    "linalg_lu_1d": lambda d: aten.linalg_lu(_t(2, dtype=torch.float64, d=d)),
    "linalg_lu_1d_int32": lambda d: aten.linalg_lu(_t(2, dtype=torch.int32, d=d)),
    "linalg_lu_factor_ex_1d": lambda d: aten.linalg_lu_factor_ex(_t(3, d=d), pivot=True, check_errors=False),
    "linalg_lu_factor_ex_1d_no_pivot": lambda d: aten.linalg_lu_factor_ex(_t(3, d=d), pivot=False),
    "linalg_lu_factor_ex_1d_int32": lambda d: aten.linalg_lu_factor_ex(_t(3, dtype=torch.int32, d=d)),
    "linalg_lu_factor_1d": lambda d: aten.linalg_lu_factor(_t(3, d=d)),
    # _cdist_backward: the kernel reads grad, cdist, x1, x2 as x1's type
    "cdist_backward_out_complex_x2": lambda d: aten._cdist_backward.out(
        _t(4, 5, dtype=torch.float64, d=d), _t(4, 5, dtype=torch.float64, d=d), _t(4, 5, dtype=torch.complex64, d=d),
        0.728, _t(4, 5, dtype=torch.float64, d=d), out=_t(4, 5, dtype=torch.float64, d=d)),
    "cdist_backward_float_grad": lambda d: aten._cdist_backward(
        _t(4, 4, d=d), _t(4, 5, dtype=torch.float64, d=d), _t(4, 5, dtype=torch.float64, d=d), 2.0,
        _t(4, 4, dtype=torch.float64, d=d)),
    "cdist_backward_complex_cdist_before_x2": lambda d: aten._cdist_backward(
        _t(4, 4, dtype=torch.float64, d=d), _t(4, 5, dtype=torch.float64, d=d), _t(4, 5, d=d), 2.0,
        _t(4, 4, dtype=torch.complex64, d=d)),
    # multi_margin_loss: p first (tpu computed with p = 3, or failed in a gather)
    "multi_margin_loss_backward_int64_p_minus_1": lambda d: aten.multi_margin_loss_backward(
        _t(1, 1, dtype=torch.int64, d=d), _t(1, 1, dtype=torch.int64, d=d), _t(1, dtype=torch.int64, d=d), -1, -2.448),
    "multi_margin_loss_backward_p_3": lambda d: aten.multi_margin_loss_backward(
        _t(1, d=d), _t(1, 3, d=d), _t(1, dtype=torch.int64, d=d), 3, 1.0),
    "multi_margin_loss_p_3": lambda d: aten.multi_margin_loss(_t(1, 3, d=d), _t(1, dtype=torch.int64, d=d), 3),
    "multi_margin_loss_p_3_bad_target": lambda d: aten.multi_margin_loss(_t(1, 3, d=d), _t(2, dtype=torch.int64, d=d),
                                                                         3),
    # binary backward kernels: the broadcast before the dtype dispatch; bce / huber backward: the dispatch itself
    "gelu_backward_int32_shapes": lambda d: aten.gelu_backward(_t(3, dtype=torch.int32, d=d),
                                                               _t(4, 2, 4, dtype=torch.int32, d=d), approximate="tanh"),
    "hardswish_backward_out_int32_shapes": lambda d: aten.hardswish_backward.out(
        _t(3, 3, dtype=torch.int32, d=d), _t(4, 4, 1, dtype=torch.int32, d=d), out=_t(0, dtype=torch.int32, d=d)),
    "binary_cross_entropy_bool": lambda d: aten.binary_cross_entropy(_t(2, dtype=torch.bool, d=d),
                                                                     _t(2, dtype=torch.bool, d=d)),
    "binary_cross_entropy_int32_empty": lambda d: aten.binary_cross_entropy(_t(0, dtype=torch.int32, d=d),
                                                                            _t(0, dtype=torch.int32, d=d)),
    "huber_loss_backward_bool": lambda d: aten.huber_loss_backward(
        _t(2, dtype=torch.bool, d=d), _t(2, dtype=torch.bool, d=d), _t(2, dtype=torch.bool, d=d), 1, 1.0),
    "huber_loss_backward_int32": lambda d: aten.huber_loss_backward(
        _t(2, dtype=torch.int32, d=d), _t(2, dtype=torch.int32, d=d), _t(2, dtype=torch.int32, d=d), 1, 1.0),
    # _foreach_max: max_all's dtype words (not max()'s), after the empty tensor check
    "foreach_max_complex": lambda d: aten._foreach_max([_t(5, 5, 1, dtype=torch.complex64, d=d),
                                                        _t(5, 5, 1, dtype=torch.bfloat16, d=d)]),
    "foreach_max_complex128": lambda d: aten._foreach_max([_t(2, dtype=torch.complex128, d=d)]),
    "foreach_max_out_complex": lambda d: aten._foreach_max.out(
        [_t(4, dtype=torch.complex64, d=d)],
        out=[_t(0, dtype=torch.complex64, d=d), _t(0, dtype=torch.complex64, d=d)]),
    "foreach_max_empty_complex": lambda d: aten._foreach_max([_t(2, d=d), _t(0, dtype=torch.complex128, d=d)]),
    # a Python reference's "doesn't support" is its own dtype check: CPU's refusal words follow
    "logaddexp2_complex": lambda d: aten.logaddexp2(_t(2, dtype=torch.complex64, d=d),
                                                    _t(2, dtype=torch.complex64, d=d)),
    # trace: no bool (its dispatch before the rank check); _log_softmax_backward_data: dim, then grad's dispatch
    "trace_bool_3d": lambda d: aten.trace(_t(1, 5, 2, dtype=torch.bool, d=d)),
    "trace_out_bool_1d": lambda d: aten.trace.out(_t(1, dtype=torch.bool, d=d), out=_t(0, dtype=torch.bool, d=d)),
    "trace_bool": lambda d: aten.trace(_t(2, 2, dtype=torch.bool, d=d)),
    "log_softmax_backward_data_out_bool_shapes": lambda d: aten._log_softmax_backward_data.out(
        _t(3, 1, dtype=torch.bool, d=d), _t(3, 5, dtype=torch.bool, d=d), 1, torch.bool,
        out=_t(0, dtype=torch.bool, d=d)),
    "log_softmax_backward_data_out_uint8_not_last": lambda d: aten._log_softmax_backward_data.out(
        _t(2, 1, 4, dtype=torch.uint8, d=d), _t(1, 4, dtype=torch.uint8, d=d), -2, torch.uint8,
        out=_t(0, dtype=torch.uint8, d=d)),
    "log_softmax_backward_data_uint8_grad_rank": lambda d: aten._log_softmax_backward_data(
        _t(5, dtype=torch.uint8, d=d), _t(3, 5, dtype=torch.uint8, d=d), 0, torch.uint8),
    "log_softmax_backward_data_bad_dim": lambda d: aten._log_softmax_backward_data(
        _t(3, 1, dtype=torch.bool, d=d), _t(3, 5, dtype=torch.bool, d=d), 2, torch.bool),
    # the exception class: argmin/argmax of no elements without a dim is an IndexError, put's index dtype not
    "argmin_empty_no_dim": lambda d: aten.argmin(_t(3, 0, d=d)),
    "argmax_empty_no_dim_keepdim": lambda d: aten.argmax(_t(0, d=d), keepdim=True),
    "put_out_int32_index": lambda d: aten.put.out(_t(d=d), _t(dtype=torch.int32, d=d), _t(d=d), True,
                                                  out=_t(0, d=d)),
    "put__int32_index": lambda d: aten.put_(_t(2, d=d), _t(1, dtype=torch.int32, d=d), _t(1, d=d)),
    # sort: the dim before the complex refusal and the out= dtypes
    "sort_stable_complex_bad_dim": lambda d: aten.sort.stable(_t(dtype=torch.complex64, d=d), stable=False, dim=1),
    "sort_values_stable_bad_dim_float_indices": lambda d: aten.sort.values_stable(
        _t(d=d), stable=None, dim=-2, values=_t(3, 3, 3, d=d), indices=_t(0, d=d)),
    # multilabel_margin_loss of integers: the shape check and the target's range before the kernel's dispatch
    "multilabel_margin_loss_forward_int32_0d_target_range": lambda d: aten.multilabel_margin_loss_forward(
        _t(dtype=torch.int32, d=d), _t(1, dtype=torch.int64, d=d), 2),
    "multilabel_margin_loss_forward_int32_target_range": lambda d: aten.multilabel_margin_loss_forward(
        _t(4, 4, dtype=torch.int32, d=d), _t(4, 4, dtype=torch.int32, d=d, fill=7), 2),
    "multilabel_margin_loss_forward_int32_target_shape": lambda d: aten.multilabel_margin_loss_forward(
        _t(2, 3, dtype=torch.int32, d=d), _t(2, 2, dtype=torch.int64, d=d), 1),
    "multilabel_margin_loss_forward_int32_0d": lambda d: aten.multilabel_margin_loss_forward(
        _t(dtype=torch.int32, d=d), _t(1, dtype=torch.int64, d=d, fill=0), 2),
    "multilabel_margin_loss_forward_int32": lambda d: aten.multilabel_margin_loss_forward(
        _t(2, 3, dtype=torch.int32, d=d), _t(2, 3, dtype=torch.int64, d=d), 1),
    # histogram's bin count form: the outs' dtypes and the count before the range and the dtype dispatch
    "histogram_bin_ct_out_half_bool_hist": lambda d: aten.histogram.bin_ct_out(
        _t(2, 2, 3, dtype=torch.float16, d=d), 100, weight=_t(3, dtype=torch.bool, d=d),
        hist=_t(2, 2, 3, dtype=torch.bool, d=d), bin_edges=_t(0, dtype=torch.bool, d=d)),
    "histogram_bin_ct_out_half_negative_bins": lambda d: aten.histogram.bin_ct_out(
        _t(2, dtype=torch.float16, d=d), -1, density=False, hist=_t(2, dtype=torch.float16, d=d),
        bin_edges=_t(2, dtype=torch.float16, d=d)),
    "histogram_bin_ct_out_double_bin_edges": lambda d: aten.histogram.bin_ct_out(
        _t(2, d=d), 3, hist=_t(0, d=d), bin_edges=_t(0, dtype=torch.float64, d=d)),
    "histogram_bin_ct_int8_negative_bins_bad_range": lambda d: aten.histogram.bin_ct_out(
        _t(2, dtype=torch.int8, d=d), -3, range=[2.0, 1.0], hist=_t(0, dtype=torch.int8, d=d),
        bin_edges=_t(0, dtype=torch.int8, d=d)),
    "histogram_bin_ct_zero_bins": lambda d: aten.histogram.bin_ct(_t(2, d=d), 0),
    # leaky_relu.out: the unary iterator's same-dtype check before the kernel's dispatch
    "leaky_relu_out_int16_uint8_out": lambda d: aten.leaky_relu.out(_t(2, dtype=torch.int16, d=d),
                                                                    out=_t(2, dtype=torch.uint8, d=d)),
    "leaky_relu_out_float_double_out": lambda d: aten.leaky_relu.out(_t(2, d=d), out=_t(2, dtype=torch.float64, d=d)),
    # ... each after the iterator's shape check, or the out= dtype check
    "binary_cross_entropy_int32_shapes": lambda d: aten.binary_cross_entropy(_t(4, 3, dtype=torch.int32, d=d),
                                                                             _t(4, dtype=torch.int32, d=d)),
    "huber_loss_backward_uint8_shapes": lambda d: aten.huber_loss_backward(
        _t(4, 3, dtype=torch.uint8, d=d), _t(1, dtype=torch.uint8, d=d), _t(2, dtype=torch.uint8, d=d), 0, 3.0),
    "log_softmax_backward_data_out_int16_float_out": lambda d: aten._log_softmax_backward_data.out(
        _t(3, 4, dtype=torch.int16, d=d), _t(2, d=d), -1, torch.float32, out=_t(2, d=d)),
    "log_softmax_backward_data_out_int64_float_out": lambda d: aten._log_softmax_backward_data.out(
        _t(2, 1, dtype=torch.int64, d=d), _t(2, 1, d=d), -1, torch.float32, out=_t(0, d=d)),
    # hardtanh_backward.grad_input: the common type's cast into grad_input before the complex refusal
    "hardtanh_backward_grad_input_complex_into_float": lambda d: aten.hardtanh_backward.grad_input(
        _t(3, 2, 4, d=d), _t(3, 2, 4, dtype=torch.complex64, d=d), -0.0, -4, grad_input=_t(3, 2, 4, d=d)),
    # clamp_: a non-floating self's promotion with the Scalar bounds is refused (CPU's words) before the complex check
    "clamp__int32_complex_min": lambda d: aten.clamp_(_t(4, dtype=torch.int32, d=d), -0.26 + 1j, None),
    "clamp__int32_float_min": lambda d: aten.clamp_(_t(4, dtype=torch.int32, d=d), 0.5),
    "clamp__bool_int_bounds": lambda d: aten.clamp_(_t(2, dtype=torch.bool, d=d), 0, 1),
    "clamp__float_complex_min": lambda d: aten.clamp_(_t(4, d=d), 0.5 + 1j),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[case], mode)


def test_normal_nonnegative_int_std_still_refused_for_dtype() -> None:
    assert_refused_as_cpu(lambda d: aten.normal.float_Tensor(0.5, _t(2, dtype=torch.int16, d=d)), "DEFER_NEVER")


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("kind", ["reflection", "replication"])
@pytest.mark.parametrize("batch", [0, 1])
def test_pad_backward_still_computes(kind: str, nd: int, batch: int) -> None:
    torch.manual_seed(0)
    x = torch.randn((2,) * batch + (2, 4, 5, 6)[: nd + 1])
    pad = [1, 2, 0, 1, 2, 1][: 2 * nd]
    g = torch.randn(getattr(aten, f"{kind}_pad{nd}d")(x, pad).shape)
    backward = getattr(aten, f"{kind}_pad{nd}d_backward")
    torch.testing.assert_close(backward(g.to("tpu"), x.to("tpu"), pad).cpu(), backward(g, x, pad))


def test_var_real_complex_correction_still_computes() -> None:
    x = torch.randn(4, 3)
    for fn in (lambda v: aten.var.correction(v, [0], correction=2 + 0j),
               lambda v: aten.var_mean.correction(v, [1], correction=0j)[0],
               lambda v: aten.std.correction(v, None, correction=1.5 + 0j)):
        torch.testing.assert_close(fn(x.to("tpu")).cpu(), fn(x))


def test_rrelu_with_noise_real_complex_bounds_still_compute() -> None:
    x = torch.tensor([-2.0, 0.5, -1.0])
    got = aten.rrelu_with_noise(x.to("tpu"), torch.ones(3, device="tpu"), 0.1 + 0j, 0.3 + 0j).cpu()
    torch.testing.assert_close(got, aten.rrelu_with_noise(x, torch.ones(3), 0.1 + 0j, 0.3 + 0j))


def test_hardtanh_backward_grad_input_of_other_float_type_still_computes() -> None:
    x = torch.tensor([0.0, 3.0, -3.0])
    for out_dtype in (torch.float64, torch.float16):
        got = aten.hardtanh_backward.grad_input(torch.ones(3, device="tpu"), x.to("tpu"), -1, 2,
                                                grad_input=torch.ones(3, dtype=out_dtype, device="tpu")).cpu()
        want = aten.hardtanh_backward.grad_input(torch.ones(3), x, -1, 2, grad_input=torch.ones(3, dtype=out_dtype))
        torch.testing.assert_close(got, want)
