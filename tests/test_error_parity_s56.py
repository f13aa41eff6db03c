"""Error parity (issue 17, the fuzzer's error_class findings of seeds 53-63): invalid input that CPU refuses with a
check made before its kernel's dtype dispatch (or before the out= dtype), where tpu refused the dtype or failed in
its lowering first with another exception class, now raises CPU's class with CPU's first line of words in every
eager mode (ops/error_parity_checks3.py, the shrink/threshold backwards and aminmax in ops/cpu_raise_checks.py).
Also the calls tpu computed where CPU refuses (geqrf of an integer input, _pdist_forward of a complex one, a
floating threshold out of uint8's range)."""

from __future__ import annotations

import torch
from refusal_cases import assert_refused_as_cpu, parity_tests

aten = torch.ops.aten
B, U8, I8, I16, I32, I64 = torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64
F16, F64, C64 = torch.float16, torch.float64, torch.complex64


def _t(*shape: int, dtype: torch.dtype = torch.float32, d: str = "cpu") -> torch.Tensor:
    return torch.ones(shape, dtype=dtype, device=d)


REFUSED = {
    # meta checks before the dims are read
    "mean_int_bad_dim": lambda d: aten.mean.dim(_t(1, 5, dtype=I64, d=d), [64], True),
    "mean_int_dtype": lambda d: aten.mean.dim(_t(2, d=d), [5], dtype=I32),
    "amax_out_dtype_bad_dim": lambda d: aten.amax.out(_t(d=d), [1], False, out=_t(0, dtype=C64, d=d)),
    "amin_out_dtype": lambda d: aten.amin.out(_t(2, dtype=I32, d=d), [0], out=_t(0, dtype=B, d=d)),
    "aminmax_empty": lambda d: aten.aminmax(_t(2, 2, 3, 0, d=d)),
    "aminmax_out_empty": lambda d: aten.aminmax.out(
        _t(3, 2, 0, dtype=I8, d=d), min=_t(0, dtype=I8, d=d), max=_t(0, dtype=I8, d=d)),
    "aminmax_empty_dim": lambda d: aten.aminmax(_t(2, 0, dtype=B, d=d), dim=-1),
    # check_group_norm_inputs before the dispatch
    "group_norm_zero_groups": lambda d: aten.native_group_norm(_t(3, 3, 1, dtype=C64, d=d), None, None, 3, 3, 1, 0,
                                                               1e-5),
    "group_norm_not_divisible": lambda d: aten.native_group_norm(_t(3, 3, 1, dtype=I8, d=d), None, None, 3, 3, 1, 2,
                                                                 1e-5),
    "group_norm_weight": lambda d: aten.native_group_norm(_t(3, 3, 1, dtype=I8, d=d), _t(2, dtype=I8, d=d), None,
                                                          3, 3, 1, 3, 1e-5),
    # unary iterators: the same dtype, or the meta's complex refusal, before the dispatch and the out= cast
    "round_decimals_out": lambda d: aten.round.decimals_out(_t(1, dtype=U8, d=d), decimals=0,
                                                            out=_t(4, 4, dtype=I32, d=d)),
    "round_out_wider": lambda d: aten.round.out(_t(2, d=d), out=_t(2, dtype=F64, d=d)),
    "floor_out_complex": lambda d: aten.floor.out(_t(2, 2, 1, dtype=C64, d=d), out=_t(2, 2, 3, d=d)),
    "trunc_out_complex": lambda d: aten.trunc.out(_t(1, 2, dtype=C64, d=d), out=_t(3, 3, dtype=U8, d=d)),
    "relu_out_complex": lambda d: aten.relu.out(_t(dtype=C64, d=d), out=_t(dtype=F16, d=d)),
    "clamp_min_out_complex": lambda d: aten.clamp_min.out(_t(2, dtype=C64, d=d), 0, out=_t(2, d=d)),
    "hardshrink_out_bool": lambda d: aten.hardshrink.out(_t(5, 3, dtype=B, d=d), 1, out=_t(0, dtype=B, d=d)),
    # geqrf: LAPACK's dtypes (tpu computed an integer input's float factorization)
    "geqrf_uint8": lambda d: aten.geqrf(_t(2, 2, dtype=U8, d=d)),
    "geqrf_a_uint8": lambda d: aten.geqrf.a(_t(2, 2, 3, 4, dtype=U8, d=d), a=_t(0, dtype=U8, d=d),
                                            tau=_t(0, dtype=U8, d=d)),
    "geqrf_a_not_castable": lambda d: aten.geqrf.a(_t(2, 5, d=d), a=_t(0, dtype=I32, d=d), tau=_t(0, d=d)),
    "geqrf_a_1d": lambda d: aten.geqrf.a(_t(5, dtype=I32, d=d), a=_t(0, dtype=I32, d=d), tau=_t(0, dtype=I32, d=d)),
    # lcm: the iterator, then lcm_cpu's integral dispatch (no Bool)
    "lcm_bool": lambda d: aten.lcm(_t(1, dtype=B, d=d), _t(1, dtype=B, d=d)),
    "lcm_out_bool": lambda d: aten.lcm.out(_t(1, dtype=B, d=d), _t(1, dtype=B, d=d), out=_t(0, dtype=B, d=d)),
    "lcm__bool": lambda d: aten.lcm_(_t(4, dtype=B, d=d), _t(4, dtype=B, d=d)),
    "lcm__broadcast": lambda d: aten.lcm_(_t(1, dtype=B, d=d), _t(4, dtype=B, d=d)),
    # pdist's floating dispatch where the kernel runs (tpu computed a complex result)
    "pdist_complex": lambda d: aten._pdist_forward(_t(5, 5, dtype=C64, d=d)),
    "pdist_out_complex": lambda d: aten._pdist_forward.out(_t(5, 5, dtype=C64, d=d), out=_t(0, d=d)),
    # the structured pools' set_output dtypes before the dispatch
    "max_pool2d_out_indices": lambda d: aten.max_pool2d_with_indices.out(
        _t(4, 5, 2, dtype=C64, d=d), [2, 2], [2, 4], [1, 0], [1, 1], out=_t(4, 5, 2, dtype=C64, d=d),
        indices=_t(0, dtype=C64, d=d)),
    "adaptive_max_pool2d_out_indices": lambda d: aten.adaptive_max_pool2d.out(
        _t(5, 3, 1, dtype=I8, d=d), [2, 2], out=_t(0, dtype=I8, d=d), indices=_t(5, 3, 1, dtype=I8, d=d)),
    "adaptive_max_pool2d_out_values": lambda d: aten.adaptive_max_pool2d.out(
        _t(5, 3, 1, dtype=I8, d=d), [2, 2], out=_t(0, d=d), indices=_t(0, dtype=I64, d=d)),
    # addmv's meta, convolution's first checks
    "addmv__ranks": lambda d: aten.addmv_(_t(2, 5, 1, dtype=B, d=d), _t(2, 5, 1, dtype=B, d=d),
                                          _t(2, 5, 1, dtype=B, d=d), beta=0.22 + 1j),
    "addmv_sizes": lambda d: aten.addmv(_t(3, d=d), _t(2, 5, d=d), _t(5, d=d)),
    "addmv__sizes": lambda d: aten.addmv_(_t(3, dtype=B, d=d), _t(2, 5, dtype=B, d=d), _t(4, dtype=B, d=d)),
    "addmv_0d_sizes": lambda d: aten.addmv(_t(d=d), _t(2, 5, d=d), _t(4, d=d)),
    "convolution_weight_1d": lambda d: aten.convolution(
        _t(4, 2, 4, dtype=B, d=d), _t(2, dtype=B, d=d), None, [2, 4, 1], [3, 3], [3, 3], True, [0, 2], 4),
    "convolution_zero_groups": lambda d: aten.convolution(
        _t(1, 1, 3, d=d), _t(1, 1, 1, d=d), None, [1], [0], [1], False, [0], 0),
    # complex_check_floating / complex_check_dtype before the dispatch and the complex32 refusal
    "polar_half_uint8": lambda d: aten.polar(_t(2, dtype=F16, d=d), _t(1, dtype=U8, d=d)),
    "polar_out_half_int8": lambda d: aten.polar.out(_t(5, dtype=F16, d=d), _t(dtype=I8, d=d),
                                                    out=_t(0, dtype=I8, d=d)),
    "complex_out_half": lambda d: aten.complex.out(_t(2, dtype=F16, d=d), _t(2, dtype=F16, d=d),
                                                   out=_t(0, dtype=F16, d=d)),
    # binary iterators: the broadcast (and the out= cast) before the dispatch
    "mse_loss_out_cast": lambda d: aten.mse_loss.out(_t(0, dtype=B, d=d), _t(0, dtype=I32, d=d),
                                                     out=_t(0, dtype=B, d=d)),
    "log_sigmoid_backward_broadcast": lambda d: aten.log_sigmoid_backward(
        _t(4, 1, dtype=I16, d=d), _t(1, 1, dtype=I16, d=d), _t(3, 5, dtype=I16, d=d)),
    "log_sigmoid_backward_buffer": lambda d: aten.log_sigmoid_backward.grad_input(
        _t(2, 5, dtype=C64, d=d), _t(2, 5, dtype=C64, d=d), _t(4, dtype=C64, d=d), grad_input=_t(2, 5, dtype=C64, d=d)),
    "softshrink_backward_broadcast": lambda d: aten.softshrink_backward(_t(3, 3, dtype=C64, d=d),
                                                                        _t(4, dtype=C64, d=d), 1),
    "softshrink_backward_uint8_lambd": lambda d: aten.softshrink_backward(_t(2, 1, 2, dtype=U8, d=d),
                                                                          _t(dtype=U8, d=d), -2.323),
    "hardshrink_backward_uint8": lambda d: aten.hardshrink_backward(_t(2, 1, 2, dtype=U8, d=d), _t(dtype=U8, d=d),
                                                                    -2.323),
    "threshold_backward_broadcast": lambda d: aten.threshold_backward(_t(2, 3, dtype=C64, d=d),
                                                                      _t(3, 3, dtype=U8, d=d), float("nan")),
    "threshold_backward_uint8_float": lambda d: aten.threshold_backward.grad_input(
        _t(3, 4, 1, dtype=U8, d=d), _t(1, 1, dtype=U8, d=d), -0.589, grad_input=_t(0, dtype=U8, d=d)),
    "threshold_backward_int_inf": lambda d: aten.threshold_backward(_t(3, dtype=I32, d=d), _t(3, dtype=I32, d=d),
                                                                    float("inf")),
    # seeds 58-63: more checks CPU makes before the dispatch, the dims, or the lowering
    "mish_out_same_dtype": lambda d: aten.mish.out(_t(5, 2, dtype=I8, d=d), out=_t(5, 2, d=d)),
    "pow_out_broadcast_bool": lambda d: aten.pow.Tensor_Tensor_out(_t(2, 5, dtype=B, d=d), _t(3, 2, 2, dtype=B, d=d),
                                                                   out=_t(0, dtype=B, d=d)),
    "clamp_out_complex": lambda d: aten.clamp.out(_t(2, 5, dtype=C64, d=d), None, -0.001, out=_t(2, 5, dtype=U8, d=d)),
    "bernoulli_float_nan_complex": lambda d: aten.bernoulli_.float(_t(dtype=C64, d=d), float("nan")),
    "bernoulli_float_above_one": lambda d: aten.bernoulli_.float(_t(3, d=d), 2.0),
    "histc_complex_max": lambda d: aten.histc(_t(1, dtype=C64, d=d), 100, max=-0.27 + 1j),
    "count_nonzero_dim_range_first": lambda d: aten.count_nonzero.dim_IntList(_t(1, 4, 3, dtype=I64, d=d),
                                                                             [1, -2, 0, 3]),
    "unique_dim_complex_0d": lambda d: aten.unique_dim(_t(dtype=C64, d=d), -1),
    "cdist_backward_out_dtype": lambda d: aten._cdist_backward.out(
        _t(1, 1, dtype=I32, d=d), _t(1, 5, 1, d=d), _t(1, 5, 1, dtype=I8, d=d), 0.0, _t(2, dtype=I8, d=d),
        out=_t(1, 5, 1, dtype=I8, d=d)),
    "lstsq_out_bfloat16": lambda d: aten.linalg_lstsq.out(
        _t(3, 1, dtype=torch.bfloat16, d=d), _t(3, 1, dtype=torch.bfloat16, d=d), 0.0, driver=None,
        solution=_t(0, dtype=torch.bfloat16, d=d), residuals=_t(0, dtype=torch.bfloat16, d=d),
        rank=_t(3, 1, dtype=torch.bfloat16, d=d), singular_values=_t(3, 1, dtype=torch.bfloat16, d=d)),
    "index_add_dim_past_0d_source": lambda d: aten.index_add(_t(3, 4, dtype=F16, d=d), -1,
                                                             torch.zeros(2, dtype=I64, device=d), _t(dtype=F16, d=d)),
    "index_add_dim_past_1d_source": lambda d: aten.index_add(_t(3, 4, d=d), 1, torch.zeros(2, dtype=I64, device=d),
                                                             _t(2, d=d)),
    "clamp_max_tensor_out_broadcast_complex": lambda d: aten.clamp_max.Tensor_out(
        _t(2, 5, dtype=C64, d=d), _t(4, 4, dtype=C64, d=d), out=_t(2, 5, dtype=C64, d=d)),
    "lstsq_out_bfloat16_default_rcond": lambda d: aten.linalg_lstsq.out(
        _t(3, 1, 3, dtype=torch.bfloat16, d=d), _t(3, 1, 1, dtype=torch.bfloat16, d=d),
        solution=_t(0, dtype=torch.bfloat16, d=d), residuals=_t(0, dtype=torch.bfloat16, d=d),
        rank=_t(0, dtype=torch.bfloat16, d=d), singular_values=_t(0, dtype=torch.bfloat16, d=d)),
    "pdist_out_strided_long": lambda d: aten._pdist_forward.out(torch.ones(2, 3, dtype=I64, device=d).t(), 0.5,
                                                                out=_t(0, dtype=I64, d=d)),
    "lstsq_out_int8_1d": lambda d: aten.linalg_lstsq.out(
        _t(1, dtype=I8, d=d), _t(3, dtype=I8, d=d), 2.0, driver=None, solution=_t(4, dtype=I8, d=d),
        residuals=_t(4, dtype=I8, d=d), rank=_t(0, dtype=I8, d=d), singular_values=_t(0, dtype=I8, d=d)),
    "clamp_min_tensor_out_cast": lambda d: aten.clamp_min.Tensor_out(
        _t(2, 3, dtype=C64, d=d), _t(3, dtype=C64, d=d), out=_t(2, 3, dtype=U8, d=d)),
    "lstsq_out_batch_broadcast": lambda d: aten.linalg_lstsq.out(
        _t(5, 3, 2, dtype=I64, d=d), _t(3, 3, 1, dtype=I64, d=d), 0.5, solution=_t(0, dtype=I64, d=d),
        residuals=_t(0, dtype=I64, d=d), rank=_t(0, dtype=I64, d=d), singular_values=_t(0, dtype=I64, d=d)),
    "max_pool2d_backward_grad_shape": lambda d: aten.max_pool2d_with_indices_backward.grad_input(
        _t(5, 1, 4, dtype=C64, d=d), _t(5, 1, 4, dtype=C64, d=d), [3, 2], [4, 2], [1, 0], [1, 2], False,
        torch.full((5, 1, 4), -2, dtype=I64, device=d), grad_input=_t(0, dtype=C64, d=d)),
    "index_reduce__dim_past_0d_source": lambda d: aten.index_reduce_(
        _t(5, 1, 1, 2, dtype=C64, d=d), 2, torch.zeros(0, dtype=I64, device=d), _t(dtype=C64, d=d), "prod"),
    # normal(float mean, Tensor std): at::full({}, mean) in the output's dtype before the kernel's dtype dispatch
    "normal_mean_out_of_uint8": lambda d: [aten.normal.float_Tensor(-1.0, torch.ones(5, dtype=torch.uint8, device=d))],
    "normal_nan_mean_into_int8_out": lambda d: [aten.normal.float_Tensor_out(
        float("nan"), torch.ones(5, device=d), out=torch.empty(5, dtype=torch.int8, device=d))],
    # mse_loss_backward's kernel dispatches on every real type but bool (OpInfo never reaches it: not mined)
    "mse_loss_backward_bool": lambda d: [aten.mse_loss_backward(*[torch.ones(2, 1, dtype=B, device=d)] * 3, 1)],
}

COMPILED = ["mean_int_bad_dim", "geqrf_uint8", "pdist_complex", "lcm_bool", "group_norm_zero_groups"]

SAME = {  # valid calls next to the new checks still compute as CPU does
    "aminmax_empty_other_dim": lambda d: list(aten.aminmax(_t(2, 0, d=d), dim=0)),
    "threshold_backward_uint8_wraps": lambda d: [aten.threshold_backward(
        torch.arange(4, dtype=U8, device=d), torch.arange(4, dtype=U8, device=d), -1)],
    "pdist_complex_one_row": lambda d: [aten._pdist_forward(_t(1, 3, dtype=C64, d=d))],
    "addmv_broadcast_self": lambda d: [aten.addmv(_t(1, d=d), torch.arange(6.0, device=d).reshape(2, 3),
                                                  torch.arange(3.0, device=d))],
    "index_add_0d_source": lambda d: [aten.index_add(_t(d=d), 0, torch.zeros(1, dtype=I64, device=d), _t(d=d))],
    "bernoulli_float_one": lambda d: [aten.bernoulli_.float(_t(3, d=d), 1.0)],
    "lcm_int": lambda d: [aten.lcm(torch.tensor([4, 6], device=d), torch.tensor([6, 10], device=d))],
}


test_refused_as_cpu, test_refused_as_cpu_compiled, test_same_as_cpu = parity_tests(REFUSED, COMPILED, SAME)


def test_log_sigmoid_backward_through_autograd() -> None:
    """The buffer the tpu's forward saves broadcasts with the input, as CPU's does."""
    x = torch.linspace(-3, 3, 8, requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    torch.nn.functional.logsigmoid(x).sum().backward()
    torch.nn.functional.logsigmoid(xt).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), x.grad)


def test_group_norm_dispatch_before_size() -> None:
    """GroupNormKernelImpl refuses an integer input before its X.numel() == N * C * HxW check (a float one then
    fails that check), as CPU."""
    for dtype in (I8, torch.float32):
        assert_refused_as_cpu(lambda d, dtype=dtype: aten.native_group_norm(
            _t(3, 3, 1, dtype=dtype, d=d), None, None, 5, 3, 1, 3, 1e-5), "DEFER_NEVER")
