"""Error-class parity (issue 17): invalid input that CPU and tpu both refuse must raise on tpu in CPU's class with
CPU's first line of words (ops/error_class_checks.py, the `_REFUSAL_BEFORE_OUT` overloads of
ops/arg_order_checks.py). Each case is a call the schema fuzzer found (seeds 1 and 2, --calls 40)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from tests.refusal_cases import MODES, assert_refused_as_cpu, assert_refused_as_cpu_compiled

aten = torch.ops.aten


def _t(shape: tuple[int, ...], dtype: torch.dtype, d: str) -> torch.Tensor:
    return torch.ones(shape, device=d).to(dtype)


CASES: dict[str, Callable[[str], object]] = {
    # in-place TensorIterator binary ops: the broadcast shape, then the cast, before the kernel's dispatch
    "ilshift_scalar_cast": lambda d: aten.__ilshift__.Scalar(_t((3,), torch.int32, d), 1.5),
    "ilshift_tensor_cast": lambda d: aten.__ilshift__.Tensor(_t((2,), torch.int8, d), _t((2,), torch.complex64, d)),
    "ilshift_tensor_shape": lambda d: aten.__ilshift__.Tensor(_t((1, 1, 1), torch.float32, d),
                                                              _t((1, 3, 1), torch.bfloat16, d)),
    "irshift_scalar_cast": lambda d: aten.__irshift__.Scalar(_t((2, 2), torch.bool, d), 0.5),
    "irshift_tensor_shape": lambda d: aten.__irshift__.Tensor(_t((), torch.bfloat16, d), _t((1, 3), torch.bfloat16, d)),
    "floor_divide_cast": lambda d: aten.floor_divide_.Tensor(_t((2, 4), torch.float32, d),
                                                             _t((2, 4), torch.complex64, d)),
    # elu.out: check_all_same_dtype before elu_cpu's dispatch
    "elu_out_dtype": lambda d: aten.elu.out(_t((1, 4, 4), torch.int8, d), -3, 7.62, 1.0,
                                            out=_t((0,), torch.float32, d)),
    # huber_loss: delta, the broadcast, the cast to the loss's dtype, then huber_cpu's dispatch
    "huber_delta": lambda d: aten.huber_loss.default(_t((5, 3), torch.bool, d), _t((5, 3), torch.int32, d), 1, 0.0),
    "huber_cast": lambda d: aten.huber_loss.default(_t((5, 4), torch.bool, d), _t((5, 4), torch.complex64, d), 0),
    "huber_out_shape": lambda d: aten.huber_loss.out(_t((2, 1, 4), torch.int32, d), _t((3,), torch.int64, d), 1, 2.0,
                                                     out=_t((3,), torch.int32, d)),
    # im2col reads input.size(1) and size(2) before its rank check
    "im2col_1d": lambda d: aten.im2col.default(_t((1, 4), torch.int8, d), [1, 1], [2, 3], [0, 2], [2, 3]),
    "im2col_0d_out": lambda d: aten.im2col.out(_t((), torch.float16, d), [3, 3], [1, 2], [0, 0], [1, 4],
                                               out=_t((0,), torch.float16, d)),
    # narrow_copy.out: a non-negative dim past the rank is a bare TORCH_CHECK, a negative one an IndexError
    "narrow_copy_dim": lambda d: aten.narrow_copy.out(_t((2, 3), torch.float32, d), 64, 0, 1,
                                                      out=_t((0,), torch.float32, d)),
    "narrow_copy_negative_dim": lambda d: aten.narrow_copy.out(_t((2, 3, 4), torch.float32, d), -4, 0, -1,
                                                               out=_t((0,), torch.float32, d)),
    # linalg_lu.out: the out tensors' dtypes before lu_cpu's dispatch
    "linalg_lu_out_dtype": lambda d: aten.linalg_lu.out(_t((3, 3), torch.int64, d), P=_t((0,), torch.float32, d),
                                                        L=_t((0,), torch.int64, d), U=_t((0,), torch.int64, d)),
    # ctc_loss_cpu's dispatch on log_probs first
    "ctc_loss_int": lambda d: aten._ctc_loss.default(_t((4,), torch.int64, d), _t((4,), torch.int64, d), [], []),
    "ctc_loss_backward_int": lambda d: aten._ctc_loss_backward.out(
        _t((4,), torch.bfloat16, d), _t((4, 4, 5), torch.int32, d), _t((1, 4), torch.bfloat16, d), [3], [2, 3],
        _t((4,), torch.bfloat16, d), _t((4, 4, 5), torch.bfloat16, d), 4, out=_t((4, 4, 5), torch.bfloat16, d)),
    # out= overloads that compute their functional result (or dispatch) before the out= cast
    "rshift_scalar_tensor_out": lambda d: aten.bitwise_right_shift.Scalar_Tensor_out(
        -2.5, _t((5, 2), torch.int32, d), out=_t((0,), torch.int32, d)),
    "lshift_scalar_tensor_out": lambda d: aten.bitwise_left_shift.Scalar_Tensor_out(
        1.5, _t((3,), torch.int16, d), out=_t((3,), torch.int8, d)),
    "div_scalar_mode_out": lambda d: aten.div.Scalar_mode_out(_t((1, 2, 1), torch.int32, d), -1.03 + 1j,
                                                              rounding_mode="trunc", out=_t((1, 2, 1), torch.int32, d)),
    "igammac_inplace_byte": lambda d: aten.igammac_.default(_t((5, 2), torch.uint8, d), _t((5, 2), torch.uint8, d)),
    "igammac_inplace_cast": lambda d: aten.igammac_.default(_t((3,), torch.bool, d), _t((3,), torch.uint8, d)),
    "ilshift_overlap": lambda d: aten.__ilshift__.Tensor(_t((1, 3), torch.bool, d).expand(2, 3),
                                                         _t((2, 3), torch.bool, d)),
    "narrow_copy_start": lambda d: aten.narrow_copy.out(_t((2, 1), torch.float32, d), 1, 4, -1,
                                                        out=_t((0,), torch.float32, d)),
    "ctc_loss_backward_half": lambda d: aten._ctc_loss_backward.out(
        _t((1, 3), torch.float16, d), _t((1, 3), torch.float16, d), _t((1, 3), torch.float16, d), [1, 3], [1, 3],
        _t((1, 3), torch.float16, d), _t((4, 2), torch.float32, d), 1, out=_t((1, 3), torch.float16, d)),
    "ctc_loss_float_targets": lambda d: aten._ctc_loss.default(_t((4, 1, 3), torch.float32, d),
                                                               _t((1, 2), torch.float32, d), [4], [2]),
    "ctc_loss_backward_rank": lambda d: aten._ctc_loss_backward.out(
        _t((1, 2), torch.float32, d), _t((4, 4), torch.float32, d), _t((1, 2), torch.float32, d), [1], [3],
        _t((1, 2), torch.float32, d), _t((1, 2), torch.float32, d), 0, True, out=_t((1, 2), torch.float32, d)),
    # batch_norm_backward_cpu: the dispatch on input, the mixed type, then input.size(1)
    "batch_norm_backward_0d": lambda d: aten.batch_norm_backward.default(
        _t((), torch.float32, d), _t((), torch.float32, d), _t((2, 2, 1), torch.float32, d), _t((), torch.float32, d),
        _t((), torch.float32, d), _t((), torch.float32, d), None, False, 1e-5, [False, True, False],
        _t((), torch.float32, d)),
    "batch_norm_backward_int": lambda d: aten.batch_norm_backward.default(
        _t((4,), torch.float32, d), _t((4,), torch.int16, d), _t((4,), torch.float64, d), _t((4,), torch.float64, d),
        _t((2, 3), torch.float64, d), None, _t((4,), torch.float64, d), True, 1e-5, [False, False, True],
        _t((4, 4), torch.float64, d)),
    "batch_norm_backward_mixed": lambda d: aten.batch_norm_backward.default(
        _t((), torch.bool, d), _t((), torch.float32, d), _t((3,), torch.bool, d), _t((), torch.bool, d), None, None,
        _t((), torch.bool, d), True, 1e-5, [False, True, False], _t((), torch.bool, d)),
    # _fused_sgd_: grad_scale / found_inf read as float*, then the list lengths
    "fused_sgd_found_inf_dtype": lambda d: aten._fused_sgd_.default(
        [_t((2,), torch.float32, d)], [_t((2,), torch.float32, d)], [], weight_decay=0.0, momentum=0.0, lr=0.1,
        dampening=0.0, nesterov=False, maximize=False, is_first_step=True, grad_scale=_t((1,), torch.float32, d),
        found_inf=_t((1,), torch.uint8, d)),
    "fused_sgd_grad_scale_dtype": lambda d: aten._fused_sgd_.default(
        [_t((2,), torch.float32, d)], [_t((2,), torch.float32, d)], [], weight_decay=0.0, momentum=0.0, lr=0.1,
        dampening=0.0, nesterov=False, maximize=False, is_first_step=True, grad_scale=_t((1,), torch.float64, d)),
    "fused_sgd_lists_after_found_inf": lambda d: aten._fused_sgd_.default(
        [_t((2,), torch.float32, d)], [_t((2,), torch.float32, d)], [_t((2,), torch.float32, d)] * 2,
        weight_decay=0.0, momentum=0.5, lr=0.1, dampening=0.0, nesterov=False, maximize=False, is_first_step=True,
        found_inf=torch.zeros(1, device=d)),
    "fused_sgd_lists_after_empty_found_inf": lambda d: aten._fused_sgd_.default(
        [_t((0, 0), torch.float32, d), _t((2, 1), torch.int16, d)], [_t((0, 0), torch.float32, d)],
        [_t((0, 0), torch.float32, d)] * 2, weight_decay=2.0, momentum=3.0, lr=-1.0, dampening=2.0, nesterov=True,
        maximize=True, is_first_step=False, grad_scale=_t((0, 0), torch.float32, d),
        found_inf=_t((0, 0), torch.float32, d)),
    # avg_pool2d's meta before the kernel's uint8 dispatch
    "avg_pool2d_byte_pad": lambda d: aten.avg_pool2d.default(_t((5, 4, 2, 5), torch.uint8, d), [2, 3], [3, 3], [0, 2],
                                                             True, divisor_override=6),
    "avg_pool2d_byte_rank": lambda d: aten.avg_pool2d.default(_t((4, 3), torch.uint8, d), [2, 3]),
    "huber_out_common_dtype": lambda d: aten.huber_loss.out(_t((3, 4, 1), torch.float32, d),
                                                            _t((3, 4, 1), torch.complex64, d), 1,
                                                            out=_t((0,), torch.complex64, d)),
    "im2col_zero_channel": lambda d: aten.im2col.default(_t((4, 0), torch.float32, d), [3, 3], [3, 3], [2, 1],
                                                         [2, 1]),
    "ctc_loss_targets_rank": lambda d: aten._ctc_loss.default(_t((4, 1, 3), torch.float32, d),
                                                              _t((1, 2, 2), torch.int64, d), [4], [2]),
    "ctc_loss_log_probs_rank": lambda d: aten._ctc_loss.default(_t((4, 3), torch.float32, d),
                                                                _t((1, 2), torch.int64, d), [4], [2]),
    "ctc_loss_empty": lambda d: aten._ctc_loss.default(_t((3, 1, 0), torch.float32, d), _t((1, 2), torch.float32, d),
                                                       [3], [2]),
    "threshold_bool_expanded": lambda d: aten.threshold_.default(_t((5, 1, 3), torch.bool, d).expand(5, 2, 3),
                                                                 -2.5, 1.3),
    # _foreach_abs.out computes _foreach_abs first
    "foreach_abs_out_bool": lambda d: aten._foreach_abs.out([_t((3,), torch.bool, d)],
                                                            out=[_t((0,), torch.bool, d), _t((0,), torch.bool, d)]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)


@pytest.mark.parametrize("name", ["ilshift_tensor_cast", "huber_delta", "im2col_1d", "elu_out_dtype"])
def test_refused_as_cpu_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(CASES[name])


@pytest.mark.parametrize("mode", MODES)
def test_baddbmm_out_dtype_refused(mode: str) -> None:
    """CPU has no baddbmm.dtype_out kernel ("Could not run ... from the 'CPU' backend"); tpu refuses it in the same
    class, naming its own backend (it used to run upstream's baddbmm decomposition with out_dtype as beta)."""
    def case(d: str) -> object:
        b = _t((2, 3, 3), torch.uint8, d)  # a beta out of uint8's range: the refusal still comes first
        return aten.baddbmm.dtype_out(b, b, b, torch.uint8, beta=1e30, out=_t((2, 3, 3), torch.uint8, d))

    with pytest.raises(NotImplementedError, match=r"Could not run 'aten::baddbmm.dtype_out' with arguments from the "
                                                   r"'CPU' backend"):
        case("cpu")
    with torch.tpu.eager_mode(mode), pytest.raises(NotImplementedError,
                                                   match=r"Could not run 'aten::baddbmm.dtype_out'"):
        case("tpu")
        torch.tpu.synchronize()
