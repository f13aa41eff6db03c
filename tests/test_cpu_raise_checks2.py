"""Issue 17, the fuzzer's `cpu_raises` class in session 24 (seeds 3-8): calls CPU refuses and tpu computed. Each
raises CPU's exception class with CPU's words on tpu in every eager mode, and under torch.compile(backend="tpu")
where the op reaches a compiled graph; the calls next to them that CPU computes are computed as CPU does
(ops/cpu_raise_checks2.py; index_fill of a 0-d self: ops/losses.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled, ones

import torchtpu  # noqa: F401

aten = torch.ops.aten
U8, I8, I16, I32, I64 = torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64
F16, BF16, F32, F64, C64 = torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64
_f = ones


def _s(dtype: torch.dtype = F32, d: str = "cpu") -> torch.Tensor:
    return torch.ones((), dtype=dtype, device=d)


def _sgd(params: int, grads: int, buffers: int, momentum: float, d: str) -> object:
    return aten._fused_sgd_.default([_f(2, d=d) for _ in range(params)], [_f(2, d=d) for _ in range(grads)],
                                    [_f(2, d=d) for _ in range(buffers)], weight_decay=0.0, momentum=momentum,
                                    lr=0.1, dampening=0.0, nesterov=False, maximize=False, is_first_step=False)


def _adam(lists: tuple[int, ...], d: str, amsgrad: bool = False, adamw: bool = False) -> object:
    op = aten._fused_adamw_ if adamw else aten._fused_adam_
    return op.default(*[[_f(1, d=d) for _ in range(n)] for n in lists], lr=0.1, beta1=0.9, beta2=0.99,
                      weight_decay=0.0, eps=1e-8, amsgrad=amsgrad, maximize=False)


def _u8(*shape: int, d: str) -> torch.Tensor:
    return _f(*shape, dtype=U8, d=d)


CASES: dict[str, Callable[[str], object]] = {
    "multi_margin_loss_backward_float_target": lambda d: aten.multi_margin_loss_backward.default(
        _s(d=d), _s(d=d), _s(d=d), 2.18, False, reduction=1),
    "multi_margin_loss_backward_int_target": lambda d: aten.multi_margin_loss_backward.default(
        _s(d=d), _f(2, 3, d=d), _f(2, dtype=I32, d=d), 1, 1.0, reduction=1),
    "batch_norm_no_stats_empty": lambda d: aten._native_batch_norm_legit.no_stats(_f(5, 0, dtype=BF16, d=d), None,
                                                                                  None, True, 0.9, 1e-5),
    "native_batch_norm_empty": lambda d: aten.native_batch_norm.default(_f(0, 3, d=d), None, None, _f(3, d=d),
                                                                        _f(3, d=d), True, 0.9, 1e-5),
    "embedding_bag_2d_offsets": lambda d: aten._embedding_bag.default(_f(2, 5, d=d), _f(0, dtype=I64, d=d),
                                                                      _f(2, 5, dtype=I64, d=d), mode=0),
    "fused_adam_exp_avg_sqs": lambda d: _adam((1, 1, 1, 2, 0, 1), d),
    "fused_adam_max_exp_avg_sqs": lambda d: _adam((1, 1, 1, 1, 1, 1), d),
    "fused_adam_amsgrad_max_exp_avg_sqs": lambda d: _adam((1, 1, 1, 1, 0, 1), d, amsgrad=True),
    "fused_adamw_state_steps": lambda d: _adam((1, 1, 1, 1, 0, 2), d, adamw=True),
    "addmm_out_uint8_beta": lambda d: aten.addmm.out(_u8(5, 5, d=d), _u8(5, 5, d=d), _u8(5, 5, d=d), beta=-9.568,
                                                     out=_u8(0, d=d)),
    "addmm_uint8_alpha": lambda d: aten.addmm.default(_u8(5, 5, d=d), _u8(5, 5, d=d), _u8(5, 5, d=d), beta=0,
                                                      alpha=-1.5),
    "addmm_float_beta": lambda d: aten.addmm.default(_f(2, 2, d=d), _f(2, 2, d=d), _f(2, 2, d=d), beta=1e300),
    "addmv_uint8_beta": lambda d: aten.addmv.default(_u8(5, d=d), _u8(5, 5, d=d), _u8(5, d=d), beta=-9.568),
    "baddbmm_uint8_beta": lambda d: aten.baddbmm.default(_u8(1, 5, 5, d=d), _u8(1, 5, 5, d=d), _u8(1, 5, 5, d=d),
                                                         beta=300),
    "replication_pad1d_backward_dtypes": lambda d: aten.replication_pad1d_backward.default(
        _f(4, 3, dtype=F16, d=d), _f(4, 3, d=d), [0, 0]),
    "reflection_pad1d_backward_dtypes": lambda d: aten.reflection_pad1d_backward.default(
        _f(4, 3, d=d), _f(4, 3, dtype=F64, d=d), [0, 0]),
    "replication_pad2d_backward_dtypes": lambda d: aten.replication_pad2d_backward.default(
        _f(1, 4, 3, d=d), _f(1, 4, 3, dtype=F64, d=d), [0, 0, 0, 0]),
    "fft_r2c_no_dims": lambda d: aten._fft_r2c.default(_f(2, 4, 3, d=d), [], 4, False),
    "fft_r2c_0d_no_dims": lambda d: aten._fft_r2c.default(_s(d=d), [], 3, False),
    "fft_c2r_no_dims": lambda d: aten._fft_c2r.default(_f(2, 3, dtype=C64, d=d), [], 0, 3),
    "fused_sgd_grads": lambda d: _sgd(1, 2, 1, 0.5, d),
    "fused_sgd_buffers": lambda d: _sgd(1, 1, 3, -1.0, d),
    "fused_sgd_buffers_no_momentum": lambda d: _sgd(1, 1, 1, 0.0, d),
    "foreach_norm_complex_dtype": lambda d: aten._foreach_norm.Scalar([_f(4, d=d), _s(d=d)], -4, C64),
    "foreach_norm_narrowing": lambda d: aten._foreach_norm.Scalar([_f(4, d=d)], 2, F16),
    "lerp_complex_weight": lambda d: aten.lerp.Scalar(_f(3, d=d), _f(3, d=d), 0.5 + 1j),
    "lerp_half_complex_weight": lambda d: aten.lerp.Scalar(_f(3, dtype=F16, d=d), _f(3, dtype=F16, d=d), 2j),
    "lerp_overflow_weight": lambda d: aten.lerp.Scalar(_f(3, d=d), _f(3, d=d), 1e300),
    "hardtanh_backward_complex_max": lambda d: aten.hardtanh_backward.default(_f(4, 3, d=d), _f(1, d=d), -0.9,
                                                                              0.2 + 1j),
    "hardtanh_backward_out_complex_min": lambda d: aten.hardtanh_backward.grad_input(
        _f(4, d=d), _f(4, dtype=I8, d=d), 0.25 + 1j, True, grad_input=_f(4, d=d)),
    "addcdiv_complex_value": lambda d: aten.addcdiv.default(_s(d=d), _f(1, 4, dtype=F64, d=d), _s(F64, d),
                                                            value=-0.4 + 1j),
    "addcmul_int_complex_value": lambda d: aten.addcmul.default(_f(3, dtype=I32, d=d), _f(3, dtype=I32, d=d),
                                                                _f(3, dtype=I32, d=d), value=1 + 1j),
    "full_out_uint8_negative": lambda d: aten.full.out([4, 2, 3], -5.134, out=_f(3, 4, 2, dtype=U8, d=d)),
    "full_complex_into_float": lambda d: aten.full.default([2], 1 + 1j, dtype=F32, device=d),
    "pdist_backward_0d_grad": lambda d: aten._pdist_backward.default(_s(d=d), _f(3, 1, d=d), 2.0, _f(3, d=d)),
    "pdist_backward_out_0d_grad": lambda d: aten._pdist_backward.out(_s(d=d), _f(0, 1, d=d), float("inf"),
                                                                     _f(0, 1, d=d), out=_f(0, d=d)),
    "prelu_kernel_dtypes": lambda d: aten._prelu_kernel.default(_f(5, 0, 0, dtype=I8, d=d), _f(0, dtype=BF16, d=d)),
    "prelu_kernel_double_weight": lambda d: aten._prelu_kernel.default(_f(5, 2, d=d), _f(2, dtype=F64, d=d)),
    "cumprod_out_0d_dim": lambda d: aten.cumprod.out(_s(BF16, d), 1, out=_f(0, dtype=BF16, d=d)),
    "cumprod_0d_dim": lambda d: aten.cumprod.default(_s(d=d), 1),
    "mode_0d_dim": lambda d: aten.mode.default(_s(d=d), -2),
    "nansum_complex": lambda d: aten.nansum.default(_f(1, 2, 3, dtype=C64, d=d), [1], True),
    "nansum_out_complex": lambda d: aten.nansum.out(_f(2, dtype=C64, d=d), out=_f(0, dtype=C64, d=d)),
    "std_out_half_all": lambda d: aten.std.correction_out(_f(3, dtype=F16, d=d), correction=None, keepdim=True,
                                                          out=_f(0, d=d)),
    "var_out_bfloat16_dims": lambda d: aten.var.correction_out(_f(3, 2, dtype=BF16, d=d), [0, 1], keepdim=False,
                                                               out=_f(0, dtype=F64, d=d)),
    "uniform_complex_from_above_to": lambda d: aten.uniform.default(_f(2, 2, dtype=C64, d=d), 2.0),
    "uniform__complex_from_above_to": lambda d: aten.uniform_.default(_f(2, dtype=C64, d=d), 3.0, 2.0),
    "lu_unpack_int16_pivots": lambda d: aten.lu_unpack.default(_f(0, 5, 1, dtype=I16, d=d),
                                                               _f(0, 5, 1, dtype=I16, d=d), True),
    "lu_unpack_long_pivots": lambda d: aten.lu_unpack.default(_f(2, 2, d=d), _f(2, dtype=I64, d=d)),
    "index_fill_0d_index": lambda d: aten.index_fill.int_Scalar(_s(I32, d), -1, torch.tensor([0, 1], device=d), 3.0),
    "index_fill_out_0d_index": lambda d: aten.index_fill.int_Scalar_out(
        _s(I32, d), -1, torch.tensor([-2], device=d), -4.997, out=_f(0, dtype=I32, d=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(CASES[name], mode)


COMPILED = ["lerp_complex_weight", "addcdiv_complex_value", "prelu_kernel_dtypes", "mode_0d_dim", "nansum_complex",
            "lu_unpack_long_pivots", "index_fill_0d_index", "pdist_backward_0d_grad"]


@pytest.mark.parametrize("name", COMPILED)
def test_refused_as_cpu_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(CASES[name])


ACCEPTED: dict[str, Callable[[str], list[torch.Tensor]]] = {
    "lerp_real_complex_weight": lambda d: [aten.lerp.Scalar(_f(3, d=d), _f(3, d=d) * 2, 0.5 + 0j)],
    "lerp_double_large_weight": lambda d: [aten.lerp.Scalar(_f(3, dtype=F64, d=d), _f(3, dtype=F64, d=d), 1e300)],
    "addcmul_complex_self": lambda d: [aten.addcmul.default(_f(3, dtype=C64, d=d), _f(3, d=d), _f(3, d=d),
                                                            value=1 + 1j)],
    "full_out_uint8": lambda d: [aten.full.out([2], 5, out=_f(2, dtype=U8, d=d))],
    "index_fill_0d": lambda d: [aten.index_fill.int_Scalar(_s(I32, d), -1, torch.tensor([0, -1], device=d), 3.0),
                                aten.index_fill.int_Scalar(_s(I32, d), 0, torch.tensor([], dtype=I64, device=d), 3.0)],
    "std_out_half_rows": lambda d: [aten.std.correction_out(_f(3, 2, dtype=F16, d=d) * 2, [0], keepdim=False,
                                                            out=_f(0, d=d))],
    "std_out_half_into_half": lambda d: [aten.std.correction_out(_f(3, dtype=F16, d=d), keepdim=True,
                                                                 out=_f(0, dtype=F16, d=d))],
    "fused_sgd_no_momentum": lambda d: _sgd_params(d),
    "addmm_uint8_wrapping_beta": lambda d: [aten.addmm.default(_u8(2, 2, d=d), _u8(2, 2, d=d), _u8(2, 2, d=d),
                                                               beta=-9)],
    "addmm_half_large_beta": lambda d: [aten.addmm.default(_f(2, 2, dtype=F16, d=d), _f(2, 2, dtype=F16, d=d),
                                                           _f(2, 2, dtype=F16, d=d), beta=1e10)],
    "addmm_empty_uint8_beta": lambda d: [aten.addmm.default(_u8(5, 0, d=d), _u8(5, 0, d=d), _u8(0, 0, d=d),
                                                            beta=-9.568)],
    "multi_margin_loss_backward_margin": lambda d: [aten.multi_margin_loss_backward.default(
        _s(d=d), _f(2, 3, d=d), torch.tensor([0, 2], device=d), 1, 1.5, reduction=1)],
    "cumprod_0d": lambda d: [aten.cumprod.default(_s(d=d) * 3, -1)],
    "lu_unpack_no_pivots": lambda d: list(aten.lu_unpack.default(_f(2, 2, d=d), _f(2, dtype=I64, d=d), True,
                                                                 False))[1:],
}


def _sgd_params(d: str) -> list[torch.Tensor]:
    params = [_f(2, d=d), _f(3, d=d) * 2]
    aten._fused_sgd_.default(params, [_f(2, d=d), _f(3, d=d)], [], weight_decay=0.0, momentum=0.0, lr=0.5,
                             dampening=0.0, nesterov=False, maximize=False, is_first_step=False)
    return params


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_as_cpu(name: str, mode: str) -> None:
    assert_exactly_cpu(ACCEPTED[name], mode)
