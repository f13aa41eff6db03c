"""Error parity (issue 17, the fuzzer's error_class group "tpu fails in its lowering or IR shape rule"): invalid
input that CPU refuses with its own check, where tpu raised an internal error or CPU's other check first, now raises
CPU's exception class with CPU's first line of words, in every eager mode. One case (or a few) per cause fixed."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu

aten = torch.ops.aten


def _t(*shape: int, dtype: torch.dtype = torch.float32, d: str = "cpu") -> torch.Tensor:
    return torch.ones(shape, dtype=dtype, device=d)


REFUSED = {
    # batch_norm_cpu in evaluation mode: the running statistics' pair and the dispatch before the channel dim
    "batch_norm_no_training_int_1d": lambda d: aten._native_batch_norm_legit_no_training(
        _t(2, dtype=torch.int64, d=d), None, None, _t(1, d=d), _t(1, d=d), 0.1, 1e-5),
    "batch_norm_no_update_int_1d": lambda d: aten._batch_norm_no_update(
        _t(2, dtype=torch.int32, d=d), None, None, None, None, 0.1, 1e-5),
    "batch_norm_legit_eval_int_1d": lambda d: aten._native_batch_norm_legit(
        _t(1, dtype=torch.int8, d=d), None, None, _t(1, d=d), _t(1, d=d), False, 0.1, 1e-5),
    "native_batch_norm_eval_one_stat": lambda d: aten.native_batch_norm(
        _t(5, d=d), None, None, _t(5, d=d), None, False, 0.1, 1e-5),
    "native_batch_norm_train_one_stat": lambda d: aten.native_batch_norm(
        _t(2, 3, d=d), None, None, None, _t(3, d=d), True, 0.1, 1e-5),
    # weight_norm kernels: the dispatch on v before its first size read
    "weight_norm_bool_0d": lambda d: aten._weight_norm_interface(
        _t(dtype=torch.bool, d=d), _t(dtype=torch.bool, d=d), 0),
    "weight_norm_backward_short_0d": lambda d: aten._weight_norm_interface_backward(
        _t(dtype=torch.int64, d=d), _t(dtype=torch.int16, d=d), _t(dtype=torch.int64, d=d),
        _t(dtype=torch.int64, d=d), -1),
    # max pooling: the rank check before the dtype refusal (upstream's meta read input.size(-3) first); the backward's
    # gradOutput dtype check before the rank check
    "max_pool2d_1d_bool": lambda d: aten.max_pool2d_with_indices(
        _t(2, dtype=torch.bool, d=d), [3, 3], [1, 2], [2, 2], ceil_mode=False),
    "max_pool2d_backward_0d": lambda d: aten.max_pool2d_with_indices_backward(
        _t(dtype=torch.int32, d=d), _t(dtype=torch.int32, d=d), [1, 1], [3, 4], [3, 3], [1, 2], True,
        _t(2, dtype=torch.int64, d=d)),
    "max_pool2d_backward_grad_dtype": lambda d: aten.max_pool2d_with_indices_backward.grad_input(
        _t(1, 2, dtype=torch.int32, d=d), _t(2, dtype=torch.int8, d=d), [1, 3], [4, 1], [3, 3], [2, 2], True,
        _t(2, dtype=torch.int64, d=d), grad_input=_t(0, dtype=torch.int8, d=d)),
    "max_pool3d_backward_grad_dtype": lambda d: aten.max_pool3d_with_indices_backward.grad_input(
        _t(2, 5, 5, 5, dtype=torch.float64, d=d), _t(2, 5, 5, 5, dtype=torch.uint8, d=d), [2, 2, 3], [1, 3, 1],
        [0, 1, 1], [3, 1, 2], False, _t(2, dtype=torch.int64, d=d), grad_input=_t(2, 5, 5, 5, dtype=torch.uint8, d=d)),
    # Scalars c10 cannot convert: c10's RuntimeError, not Python's TypeError / ValueError
    "arange_complex_step_out": lambda d: aten.arange.start_out(0, 5, 1j, out=torch.empty(0, device=d)),
    "arange_complex_end": lambda d: aten.arange.start_step(0, 5 + 1j, 1, dtype=torch.int64, device=d),
    "softplus_complex_beta_out": lambda d: aten.softplus.out(
        _t(3, d=d), 1j, 20, out=torch.empty(3, device=d)),
    "softshrink_complex_lambd": lambda d: aten.softshrink(_t(3, dtype=torch.int64, d=d), 1j),
    "multi_margin_loss_nan_p": lambda d: aten.multi_margin_loss(
        _t(2, 3, d=d), torch.zeros(2, dtype=torch.int64, device=d), float("nan"), 1.0),
    "multi_margin_loss_backward_inf_p": lambda d: aten.multi_margin_loss_backward(
        _t(d=d), _t(2, 3, d=d), torch.zeros(2, dtype=torch.int64, device=d), float("inf"), 1.0),
    # bernoulli_(p: Tensor): ATen's expand of p to self's sizes, not the IR's broadcast ValueError
    "bernoulli_tensor_p_expand_size": lambda d: _t(1, 2, d=d).bernoulli_(torch.full((3, 1), 0.5, device=d)),
    "bernoulli_tensor_p_expand_rank": lambda d: _t(d=d).bernoulli_(_t(1, 4, 3, 3, dtype=torch.int64, d=d)),
    # segment_reduce: the kernel's checks before its dispatch (a KeyError, an IndexError or a broadcast before)
    "segment_reduce_bad_reduce": lambda d: aten.segment_reduce(
        _t(3, 4, d=d), "multiply", lengths=torch.tensor([1, 2], device=d)),
    "segment_reduce_offsets_rank": lambda d: aten.segment_reduce(
        _t(3, dtype=torch.bool, d=d), "amax", offsets=torch.ones(2, 2, dtype=torch.int64, device=d)),
    "segment_reduce_axis": lambda d: aten.segment_reduce(
        _t(2, 3, 4, d=d), "amin", lengths=torch.ones(2, 3, dtype=torch.int64, device=d), axis=0),
    "segment_reduce_backward_bad_reduce": lambda d: aten._segment_reduce_backward(
        _t(3, d=d), _t(3, d=d), _t(3, d=d), "add", lengths=torch.ones(3, dtype=torch.int64, device=d)),
}

SAME = {  # amax / amin: get_reduction_enum's other names of max / min (a KeyError before)
    "segment_reduce_amax": lambda d: [aten.segment_reduce(
        torch.arange(6.0, device=d).reshape(3, 2), "amax", lengths=torch.tensor([1, 2], device=d))],
    "segment_reduce_amin_offsets": lambda d: [aten.segment_reduce(
        torch.arange(6.0, device=d).reshape(3, 2), "amin", offsets=torch.tensor([0, 1, 3], device=d))],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SAME))
def test_same_as_cpu(name: str, mode: str) -> None:
    assert_exactly_cpu(SAME[name], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[name], mode)
