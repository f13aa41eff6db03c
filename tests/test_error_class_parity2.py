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
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)


@pytest.mark.parametrize("name", ["ilshift_tensor_cast", "huber_delta", "im2col_1d", "elu_out_dtype"])
def test_refused_as_cpu_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(CASES[name])
