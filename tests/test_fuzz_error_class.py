"""Bad input that both CPU and tpu refuse, where tpu raised another exception class (an internal ValueError,
IndexError or TypeError, or a later check's error): the schema fuzzer's `error_class` findings, seed 2, issue 17.
Each call raises CPU's class and words on tpu in every eager mode (ops/arg_order_checks.py and the dtype refusal
table's lookups: CPU's order of checks)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import torchtpu  # noqa: F401

aten = torch.ops.aten
MODES = ["DEFER_NEVER", "LAUNCH_BLOCKING", "DEFER_AND_FUSE"]
U8, I8, I16, I32, I64, B = torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool
F16, F64, C64 = torch.float16, torch.float64, torch.complex64


def _f(*shape: int, dtype: torch.dtype = torch.float32, d: str = "cpu") -> torch.Tensor:
    return torch.ones(*shape, dtype=dtype, device=d)


# name -> fn(device): raises on CPU (the fuzzer's calls, seed 2, and neighbours of seeds 0 and 1).
CASES: dict[str, Callable[[str], object]] = {
    "cdist_backward_int8": lambda d: aten._cdist_backward.out(
        _f(3, 4, 3, dtype=I8, d=d), _f(3, 4, 3, dtype=I8, d=d), _f(3, 4, 3, dtype=I32, d=d), 0.254,
        _f(1, dtype=I8, d=d), out=_f(3, 4, 3, dtype=I8, d=d)),
    "int_mm_0d_mat2": lambda d: aten._int_mm.default(_f(3, 1, 3, dtype=torch.bfloat16, d=d), _f(d=d)),
    "int_mm_0d_self": lambda d: aten._int_mm.default(_f(dtype=I8, d=d), _f(4, 3, dtype=I8, d=d)),
    "log_softmax_out_dim_first": lambda d: aten._log_softmax.out(_f(d=d), 1, True, out=_f(5, 4, 1,
                                                                                          dtype=torch.bfloat16, d=d)),
    "softmax_half_to_float_uint8": lambda d: aten._softmax.default(_f(1, dtype=U8, d=d), 0, True),
    "softmax_half_to_float_float": lambda d: aten._softmax.default(_f(3, d=d), 0, True),
    "softmax_out_half_to_float_bool": lambda d: aten._softmax.out(_f(1, 5, dtype=B, d=d), 0, True,
                                                                  out=_f(1, 5, d=d)),
    "softmax_out_dtype_first": lambda d: aten._softmax.out(_f(2, dtype=I64, d=d), 0, True,
                                                           out=_f(2, dtype=I64, d=d)),
    "softmax_backward_complex": lambda d: aten._softmax_backward_data.default(
        _f(1, 1, 2, dtype=C64, d=d), _f(1, 1, 2, dtype=I64, d=d), 0, torch.float16),
    "bce_with_logits_uint8": lambda d: aten.binary_cross_entropy_with_logits.default(
        _f(5, 4, dtype=U8, d=d), _f(0, dtype=I64, d=d), None, None, 1),
    "clamp_out_no_bounds": lambda d: aten.clamp.Tensor_out(_f(4, 0, 4, dtype=C64, d=d), None, None,
                                                           out=_f(4, 0, 4, dtype=C64, d=d)),
    "clamp_no_bounds": lambda d: aten.clamp.default(_f(2, 1, dtype=C64, d=d), max=None),
    "cummin_out_values_dtype": lambda d: aten.cummin.out(_f(2, dtype=F16, d=d), -2, values=_f(0, dtype=U8, d=d),
                                                         indices=_f(3, dtype=U8, d=d)),
    "cummin_out_int32_indices": lambda d: aten.cummin.out(_f(2, d=d), 0, values=_f(2, d=d),
                                                          indices=_f(2, dtype=I32, d=d)),
    "cumsum_inplace_bool": lambda d: aten.cumsum_.default(_f(3, dtype=B, d=d), -1),
    "cumprod_inplace_bool_dim_first": lambda d: aten.cumprod_.default(_f(3, 5, dtype=B, d=d), 64),
    "elu_uint8_complex_alpha": lambda d: aten.elu.default(_f(4, dtype=U8, d=d), 1.3 + 1j),
    "glu_0d": lambda d: aten.glu.default(_f(d=d)),
    "glu_out_0d_bool": lambda d: aten.glu.out(_f(dtype=B, d=d), -1, out=_f(dtype=B, d=d)),
    "glu_odd": lambda d: aten.glu.default(_f(3, d=d), 0),
    "glu_backward_0d": lambda d: aten.glu_backward.default(_f(4, 1, dtype=I16, d=d), _f(dtype=I16, d=d), 1),
    "glu_backward_odd": lambda d: aten.glu_backward.default(_f(3, d=d), _f(4, 3, d=d), 1),
    "hardswish_out_dtype": lambda d: aten.hardswish.out(_f(5, 1, 3, 3, dtype=I16, d=d), out=_f(5, 1, 3, 3, d=d)),
    "histogram_0d_bins": lambda d: aten.histogram.bins_tensor_out(
        _f(4, 5, dtype=F64, d=d), _f(dtype=F64, d=d), weight=_f(4, 5, dtype=F64, d=d), density=True,
        hist=_f(0, dtype=F64, d=d), bin_edges=_f(4, 5, dtype=F64, d=d)),
    "hypot_inplace_broadcast": lambda d: aten.hypot_.default(_f(d=d), _f(1, dtype=I64, d=d)),
    "hypot_inplace_broadcast_int8": lambda d: aten.hypot_.default(_f(5, 1, dtype=I8, d=d), _f(5, 2, dtype=I8, d=d)),
    "igamma_out_long": lambda d: aten.igamma.out(_f(5, 1, 1, 1, dtype=I64, d=d), _f(5, 1, 2, 1, dtype=I64, d=d),
                                                 out=_f(5, 1, 2, 1, dtype=I64, d=d)),
    "igammac_out_long": lambda d: aten.igammac.out(_f(1, 3, dtype=I64, d=d), _f(1, 3, dtype=I64, d=d),
                                                   out=_f(1, 3, dtype=I64, d=d)),
    "index_reduce_matrix_index": lambda d: aten.index_reduce_.default(
        _f(1, 1, 3, dtype=B, d=d), 1, torch.zeros(1, 1, 3, dtype=I64, device=d), _f(1, 1, 3, dtype=B, d=d), "amax"),
    "kthvalue_k_out_of_range": lambda d: aten.kthvalue.default(_f(1, 1, 1, dtype=U8, d=d), 2, 0),
    "kthvalue_values_k_negative": lambda d: aten.kthvalue.values(_f(1, d=d), -1, 0, False, values=_f(0, d=d),
                                                                 indices=_f(0, dtype=I64, d=d)),
    "kthvalue_0d": lambda d: aten.kthvalue.default(_f(d=d), 2),
    "kthvalue_empty_dim": lambda d: aten.kthvalue.default(_f(0, 3, d=d), 1, 0),
    "log_normal_std_nan": lambda d: aten.log_normal_.default(_f(3, 5, dtype=C64, d=d), std=float("nan")),
    "log_normal_std_negative": lambda d: aten.log_normal_.default(_f(3, dtype=I32, d=d), 1.0, -1.0),
    "max_unary_out_complex": lambda d: aten.max.unary_out(_f(4, 1, dtype=C64, d=d), out=_f(0, dtype=C64, d=d)),
    "min_unary_out_complex": lambda d: aten.min.unary_out(_f(4, 2, dtype=C64, d=d), out=_f(5, dtype=C64, d=d)),
    "median_out_complex": lambda d: aten.median.out(_f(4, 3, dtype=C64, d=d), out=_f(0, d=d)),
    "nanmedian_dim_empty": lambda d: aten.nanmedian.dim_values(_f(0, dtype=C64, d=d), 0, True,
                                                               values=_f(0, dtype=C64, d=d),
                                                               indices=_f(0, dtype=C64, d=d)),
    "nanmedian_dim_indices_dtype": lambda d: aten.nanmedian.dim_values(_f(2, d=d), 0, True, values=_f(0, d=d),
                                                                       indices=_f(0, dtype=I16, d=d)),
    "group_norm_backward_uint8": lambda d: aten.native_group_norm_backward.out(
        _f(4, dtype=U8, d=d), _f(1, dtype=U8, d=d), _f(4, dtype=U8, d=d), _f(1, dtype=U8, d=d),
        _f(1, dtype=U8, d=d), 5, 6, 2, 6, [True, False, True], out0=_f(0, dtype=U8, d=d),
        out1=_f(0, dtype=U8, d=d), out2=_f(4, dtype=U8, d=d)),
    "group_norm_backward_x_dy_types": lambda d: aten.native_group_norm_backward.out(
        _f(1, dtype=F64, d=d), _f(1, dtype=I64, d=d), _f(1, dtype=F64, d=d), _f(1, dtype=F64, d=d),
        _f(1, dtype=F64, d=d), 6, 1, -1, -1, [True, True, False], out0=_f(1, dtype=F64, d=d),
        out1=_f(1, dtype=F64, d=d), out2=_f(1, dtype=F64, d=d)),
    "nll_loss_forward_3d_target": lambda d: aten.nll_loss_forward.output(
        _f(1, dtype=I32, d=d), _f(3, 1, 5, dtype=I32, d=d), None, 1, 2, output=_f(0, dtype=I32, d=d),
        total_weight=_f(3, 3, 5, dtype=I32, d=d)),
    "norm_dtype_out_complex_to_double": lambda d: aten.norm.dtype_out(
        _f(2, 5, 5, 4, dtype=C64, d=d), None, [0], False, dtype=F64, out=_f(2, 5, 5, 4, dtype=B, d=d)),
    "rrelu_with_noise_shape": lambda d: aten.rrelu_with_noise.default(_f(3, 2, dtype=C64, d=d),
                                                                      _f(4, 2, 3, dtype=I32, d=d), training=True),
    "select_scatter_index": lambda d: aten.select_scatter.default(_f(3, 5, dtype=U8, d=d), _f(3, 5, dtype=U8, d=d),
                                                                  0, 4),
    "select_scatter_out_index": lambda d: aten.select_scatter.out(_f(3, 1, 5, 3, d=d), _f(3, 1, 5, 3, d=d), -1, 3,
                                                                  out=_f(0, d=d)),
    "select_scatter_src_shape": lambda d: aten.select_scatter.default(_f(3, 5, d=d), _f(4, d=d), 0, 1),
    "softplus_backward_complex_beta": lambda d: aten.softplus_backward.grad_input(
        _f(3, d=d), _f(3, dtype=I16, d=d), -0.8 + 1j, False, grad_input=_f(0, d=d)),
    "softplus_backward_broadcast": lambda d: aten.softplus_backward.default(_f(4, 2, d=d), _f(4, 3, dtype=C64, d=d),
                                                                            1, 20),
    "tril_indices_out_float": lambda d: aten.tril_indices.out(6, 4, 0, out=_f(0, d=d)),
    "tril_indices_out_negative_col": lambda d: aten.tril_indices.out(4, -2, 5, out=_f(3, 5, dtype=I8, d=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_error_as_cpu(name: str, mode: str) -> None:
    with pytest.raises(Exception) as cpu:
        CASES[name]("cpu")
    with torch.tpu.eager_mode(mode), pytest.raises(Exception) as tpu:
        CASES[name]("tpu")
        torch.tpu.synchronize()
    assert type(tpu.value) is type(cpu.value), (tpu.value, cpu.value)
    assert str(cpu.value).split("\n")[0].strip() in str(tpu.value)


def test_valid_calls_still_compute() -> None:
    """What CPU computes still computes: a 0-d float with an int64 vector in hypot (float32, not a refused Long),
    tril_indices into an int32 out=, glu, select_scatter and kthvalue."""
    x, n = torch.tensor(3.0), torch.tensor([4])
    assert torch.equal(torch.hypot(x.to("tpu"), n.to("tpu")).cpu(), torch.hypot(x, n))
    out = torch.zeros(0, dtype=torch.int32, device="tpu")
    aten.tril_indices.out(3, 3, 0, out=out)
    assert torch.equal(out.cpu(), torch.tril_indices(3, 3, dtype=torch.int32))
    y = torch.arange(8.0).reshape(2, 4)
    assert torch.equal(torch.nn.functional.glu(y.to("tpu")).cpu(), torch.nn.functional.glu(y))
    src = torch.tensor([9.0, 8.0, 7.0, 6.0])
    ref = torch.select_scatter(y, src, 0, -1)
    assert torch.equal(torch.select_scatter(y.to("tpu"), src.to("tpu"), 0, -1).cpu(), ref)
    assert torch.equal(torch.kthvalue(y.to("tpu"), 2, 1)[0].cpu(), torch.kthvalue(y, 2, 1)[0])
