"""Error parity (issue 17, the fuzzer's error_class group "tpu fails in its lowering or IR shape rule", seeds 2, 3, 4
and 48): invalid input that CPU refuses with its own check, where tpu's dtype refusal or its lowering's IR shape rule
raised first with another exception class, now raises CPU's exception class with CPU's first line of words, in
every eager mode (ops/error_parity_checks2.py; lu_unpack's rank in ops/cpu_raise_checks2.py). Some also compiled."""

from __future__ import annotations

import torch
from refusal_cases import parity_tests

aten = torch.ops.aten


def _t(*shape: int, dtype: torch.dtype = torch.float32, d: str = "cpu") -> torch.Tensor:
    return torch.ones(shape, dtype=dtype, device=d)


def _i32(*shape: int, d: str = "cpu") -> torch.Tensor:
    return torch.zeros(shape, dtype=torch.int32, device=d)


REFUSED = {
    # linalg_lu_solve's meta, in its order (the IR's broadcast ValueError / triangular_solve TypeError before)
    "lu_solve_lu_bool": lambda d: aten.linalg_lu_solve(
        _t(2, 5, 3, dtype=torch.bool, d=d), _t(2, 5, 3, dtype=torch.bool, d=d), _t(2, 5, 3, dtype=torch.bool, d=d)),
    "lu_solve_b_dtype": lambda d: aten.linalg_lu_solve(
        _t(1, 1, dtype=torch.float64, d=d), _t(1, 1, dtype=torch.float64, d=d), _t(1, 1, dtype=torch.int64, d=d),
        adjoint=True),
    "lu_solve_pivots_dtype": lambda d: aten.linalg_lu_solve(_t(4, d=d), _t(4, d=d), _t(4, 2, d=d), left=False),
    "lu_solve_pivots_dtype_out": lambda d: aten.linalg_lu_solve.out(
        _t(4, 3, d=d), _t(4, 3, d=d), _t(4, 3, d=d), out=_t(0, d=d)),
    "lu_solve_lu_rank": lambda d: aten.linalg_lu_solve(_t(4, d=d), _i32(4, d=d), _t(4, 2, d=d)),
    "lu_solve_lu_square": lambda d: aten.linalg_lu_solve(_t(3, 2, d=d), _i32(2, d=d), _t(3, 2, d=d)),
    "lu_solve_b_rank": lambda d: aten.linalg_lu_solve(_t(3, 3, d=d), _i32(3, d=d), _t(3, d=d)),
    "lu_solve_incompatible_left": lambda d: aten.linalg_lu_solve(_t(3, 3, d=d), _i32(3, d=d), _t(2, 2, d=d)),
    "lu_solve_incompatible_right": lambda d: aten.linalg_lu_solve(
        _t(3, 3, d=d), _i32(3, d=d), _t(2, 2, d=d), left=False),
    "lu_solve_pivot_count": lambda d: aten.linalg_lu_solve(_t(3, 3, d=d), _i32(2, d=d), _t(3, 2, d=d)),
    "lu_solve_pivot_batch": lambda d: aten.linalg_lu_solve(_t(2, 3, 3, d=d), _i32(3, d=d), _t(3, 2, d=d)),
    "lu_solve_batch_broadcast": lambda d: aten.linalg_lu_solve(_t(2, 3, 3, d=d), _i32(2, 3, d=d), _t(3, 3, 2, d=d)),
    # _linalg_svd: checkIsMatrix before the IR's svd rule (TypeError)
    "svd_0d": lambda d: aten._linalg_svd(_t(d=d), compute_uv=False),
    "svd_0d_complex": lambda d: aten._linalg_svd(_t(dtype=torch.complex64, d=d)),
    "svd_1d_out": lambda d: aten._linalg_svd.U(
        _t(4, d=d), U=_t(4, d=d), S=_t(0, d=d), Vh=_t(0, d=d)),
    # lu_unpack: LU's rank before the pivots' dtype (an unpacking ValueError before)
    "lu_unpack_1d": lambda d: aten.lu_unpack(_t(4, dtype=torch.int32, d=d), _i32(4, d=d), False, True),
    "lu_unpack_1d_pivots_dtype": lambda d: aten.lu_unpack(
        _t(5, dtype=torch.int64, d=d), _t(1, dtype=torch.int64, d=d), True, True),
    # cholesky / linalg.solve_triangular: squareCheckInputs / checkInputsSolver before the LAPACK dispatch
    "cholesky_half_1d": lambda d: aten.cholesky(_t(5, dtype=torch.float16, d=d)),
    "cholesky_out_not_castable_1d": lambda d: aten.cholesky.out(
        _t(5, dtype=torch.float16, d=d), out=_t(0, dtype=torch.int32, d=d)),
    "solve_triangular_0d": lambda d: aten.linalg_solve_triangular(
        _t(dtype=torch.int32, d=d), _t(3, 2, dtype=torch.float16, d=d), upper=False),
    "solve_triangular_b_1d": lambda d: aten.linalg_solve_triangular(
        _t(2, 2, dtype=torch.int32, d=d), _t(2, dtype=torch.int32, d=d), upper=False),
    # _cholesky_solve_helper: the kernel's dispatch on self before A's dtype and the out= dtype
    "cholesky_solve_helper_bf16": lambda d: aten._cholesky_solve_helper(
        _t(3, 2, 3, 3, dtype=torch.bfloat16, d=d), _t(3, 2, 3, 3, d=d), False),
    "cholesky_solve_helper_bool_out": lambda d: aten._cholesky_solve_helper.out(
        _t(3, 3, dtype=torch.bool, d=d), _t(3, 3, dtype=torch.bool, d=d), True, out=_t(0, dtype=torch.bool, d=d)),
    # histogramdd: the rank and the bin edges' checks before the dtype refusal
    "histogramdd_bin_edges_1d_int": lambda d: aten._histogramdd_bin_edges(_t(3, dtype=torch.int32, d=d), [2]),
    "histogramdd_bin_edges_0d_range": lambda d: aten._histogramdd_bin_edges(
        _t(dtype=torch.int64, d=d), [1, 3], range=[0.5, 0.5]),
    "histogramdd_bin_edges_int_range_count": lambda d: aten._histogramdd_bin_edges(
        _t(2, 1, dtype=torch.int32, d=d), [3, 2], range=[0.5, 0.5]),
    "histogramdd_bin_tensors_count": lambda d: aten._histogramdd_from_bin_tensors(
        _t(2, 4, 1, dtype=torch.bool, d=d), [_t(3, 2, dtype=torch.bool, d=d), _t(3, 2, dtype=torch.bool, d=d)]),
    "histogramdd_bin_tensors_1d_int": lambda d: aten._histogramdd_from_bin_tensors(
        _t(3, dtype=torch.int32, d=d), [_t(3, dtype=torch.int16, d=d)]),
    "histogramdd_bin_tensors_int_bins_rank": lambda d: aten._histogramdd_from_bin_tensors(
        _t(3, 1, dtype=torch.int8, d=d), [_t(3, 2, dtype=torch.int8, d=d)]),
    "histogramdd_bin_cts_bf16_no_range": lambda d: aten._histogramdd_from_bin_cts(
        _t(4, 3, dtype=torch.bfloat16, d=d), [1]),
    "histogramdd_bin_cts_int_no_range": lambda d: aten._histogramdd_from_bin_cts(
        _t(1, 1, dtype=torch.int32, d=d), [1, 1], density=True),
    # _embedding_bag_per_sample_weights_backward: the dispatch on grad before its rank assert / mode check
    "per_sample_weights_backward_complex": lambda d: aten._embedding_bag_per_sample_weights_backward(
        _t(5, dtype=torch.complex64, d=d), _t(5, dtype=torch.uint8, d=d), _i32(5, d=d),
        _t(0, dtype=torch.int64, d=d), _t(5, dtype=torch.complex64, d=d), 0),
    "per_sample_weights_backward_int_mode": lambda d: aten._embedding_bag_per_sample_weights_backward(
        _t(dtype=torch.int32, d=d), _t(5, dtype=torch.int32, d=d), _t(5, 5, 2, dtype=torch.int64, d=d),
        _t(5, 5, 2, dtype=torch.int64, d=d), _t(5, 5, 1, dtype=torch.int32, d=d), -2, -1),
    # grid_sampler: check_grid_sampler_common's size reads and the rank rule before the dispatch and the modes
    "grid_sampler_2d_0d_bad_padding": lambda d: aten.grid_sampler_2d(
        _t(dtype=torch.int8, d=d), _t(2, 2, 1, 3, dtype=torch.int16, d=d), 0, 5, False),
    "grid_sampler_2d_3d_int": lambda d: aten.grid_sampler_2d(
        _t(3, 4, 1, dtype=torch.int8, d=d), _t(3, 4, 1, dtype=torch.int8, d=d), 2, 1, True),
    "grid_sampler_2d_out_0d": lambda d: aten.grid_sampler_2d.out(
        _t(dtype=torch.complex64, d=d), _t(dtype=torch.float16, d=d), 5, 4, True, out=_t(dtype=torch.float16, d=d)),
    "grid_sampler_3d_0d_long": lambda d: aten.grid_sampler_3d(
        _t(dtype=torch.int64, d=d), _t(dtype=torch.int64, d=d), 0, 4, False),
    "grid_sampler_2d_backward_long_bad_mode": lambda d: aten.grid_sampler_2d_backward(
        _t(1, 4, 4, 2, dtype=torch.int64, d=d), _t(1, 4, 4, 2, dtype=torch.int64, d=d),
        _t(1, 4, 4, 2, dtype=torch.int64, d=d), 2, -2, True, [True, False]),
    "grid_sampler_3d_backward_int": lambda d: aten.grid_sampler_3d_backward(
        _t(1, 1, 2, 2, 2, dtype=torch.int32, d=d), _t(1, 1, 2, 2, 2, dtype=torch.int32, d=d),
        _t(1, 2, 2, 2, 3, dtype=torch.int32, d=d), 0, 0, True, [True, True]),
    # _grouped_mm: the dtypes, then the ranks (an IndexError in the lowering before)
    "grouped_mm_1d": lambda d: aten._grouped_mm(_t(4, dtype=torch.float16, d=d), _t(4, dtype=torch.float16, d=d)),
    "grouped_mm_0d_out_dtype": lambda d: aten._grouped_mm(
        _t(dtype=torch.float16, d=d), _t(dtype=torch.float16, d=d), out_dtype=torch.float32),
    "grouped_mm_b_int": lambda d: aten._grouped_mm(_t(2, 4, dtype=torch.float16, d=d), _t(4, dtype=torch.int32, d=d)),
    # _pdist_backward: contiguity, the dispatch, then self.size(1) (the lowering's unpacking ValueError before)
    "pdist_backward_int8": lambda d: aten._pdist_backward(
        _t(3, dtype=torch.int8, d=d), _t(3, dtype=torch.int8, d=d), 0.945, _t(1, dtype=torch.int8, d=d)),
    "pdist_backward_bf16_p0": lambda d: aten._pdist_backward(
        _t(1, dtype=torch.bfloat16, d=d), _t(3, 2, dtype=torch.bfloat16, d=d), 0.0, _t(1, d=d)),
    "pdist_backward_1d": lambda d: aten._pdist_backward(_t(4, d=d), _t(4, d=d), 0.859, _t(4, d=d)),
    "pdist_backward_pdist_strided": lambda d: aten._pdist_backward(
        _t(2, d=d), _t(2, dtype=torch.int32, d=d), 0.045, _t(4, d=d)[::2]),
    "pdist_backward_grad_dtype": lambda d: aten._pdist_backward(
        _t(2, dtype=torch.float64, d=d), _t(1, 3, 1, d=d), float("nan"), _t(3, 2, dtype=torch.float64, d=d)),
    # the fused optimizers read grad_scale / found_inf as float first (tpu refused AMP scaling before)
    "fused_adam_grad_scale_half": lambda d: aten._fused_adam_(
        [_t(2, d=d)], [_t(2, d=d)], [_t(2, d=d)], [_t(2, d=d)], [], [_t(d=d)], lr=0.1, beta1=0.9, beta2=0.99,
        weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False, grad_scale=_t(dtype=torch.float16, d=d)),
    "fused_adamw_found_inf_bool": lambda d: aten._fused_adamw_(
        [_t(2, d=d)], [_t(2, d=d)], [_t(2, d=d)], [_t(2, d=d)], [], [_t(d=d)], lr=0.1, beta1=0.9, beta2=0.99,
        weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False, found_inf=_t(dtype=torch.bool, d=d)),
    "fused_sgd_grad_scale_half": lambda d: aten._fused_sgd_(
        [_t(2, d=d)], [_t(2, d=d)], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0, nesterov=False,
        maximize=False, is_first_step=False, grad_scale=_t(dtype=torch.float16, d=d)),
    # arange into a complex or bool result: the dispatch on the result before the range checks
    "arange_complex_out_bad_range": lambda d: aten.arange.start_out(
        1e30, -2.38, out=torch.empty(0, dtype=torch.complex64, device=d)),
    "arange_bool_out_nan": lambda d: aten.arange.out(float("nan"), out=torch.empty(0, dtype=torch.bool, device=d)),
    "arange_bool_out_zero_step": lambda d: aten.arange.start_out(
        2.679, -3.939, -0.0, out=torch.empty(2, dtype=torch.bool, device=d)),
}

COMPILED = ["grouped_mm_1d", "cholesky_solve_helper_bf16", "lu_unpack_1d", "histogramdd_bin_tensors_count",
            "per_sample_weights_backward_complex", "grid_sampler_2d_3d_int"]

SAME = {  # valid calls next to the new checks still compute as CPU does
    "lu_solve_batched": lambda d: [aten.linalg_lu_solve(
        *torch.linalg.lu_factor(torch.eye(3, device=d) * 2 + 1), torch.arange(6.0, device=d).reshape(1, 3, 2))],
    "cholesky_empty_int": lambda d: [aten.cholesky(torch.ones(2, 0, 0, 3, dtype=torch.int64, device=d))],
    "histogramdd_bin_tensors": lambda d: [aten._histogramdd_from_bin_tensors(
        torch.arange(6.0, device=d).reshape(3, 2), [torch.tensor([0.0, 3.0, 6.0], device=d)] * 2)],
}


test_refused_as_cpu, test_refused_as_cpu_compiled, test_same_as_cpu = parity_tests(REFUSED, COMPILED, SAME)
