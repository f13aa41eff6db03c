"""Calls CPU refuses that tpu computed (fuzz seeds 15 and 18): refused in CPU's class and words, every eager mode;
their valid neighbours still compute as on CPU."""

import pytest
import torch
from refusal_cases import (
    MODES,
    assert_close_to_cpu,
    assert_exactly_cpu,
    assert_refused_as_cpu,
    assert_refused_as_cpu_compiled,
)

aten = torch.ops.aten
F, D, H, L, I16 = torch.float32, torch.float64, torch.float16, torch.int64, torch.int16


def t(shape: list[int], dtype: torch.dtype, d: str) -> torch.Tensor:
    return torch.ones(shape, dtype=dtype, device=d)


def z(shape: list[int], dtype: torch.dtype, d: str) -> torch.Tensor:
    return torch.zeros(shape, dtype=dtype, device=d)


def _bag(d: str, grad: torch.dtype = F, indices: torch.dtype = L, offsets: torch.dtype = L,
         offset2bag: torch.Tensor | None = None, bag_size: torch.dtype = L, max_indices: torch.dtype = L,
         mode: int = 0, n: int = 0) -> torch.Tensor:
    o2b = z([4], L, d) if offset2bag is None else offset2bag
    return aten._embedding_bag_backward(t([3, 2], grad, d), z([n], indices, d), z([1], offsets, d), o2b,
                                        t([3], bag_size, d), z([3, 2], max_indices, d), 5, False, mode, False, None)


def _nll(d: str, grad: torch.dtype = F, total: torch.dtype = F, weight: torch.dtype | None = None,
         target: torch.dtype = L, reduction: int = 1, x: tuple[int, ...] = (3,), gshape: tuple[int, ...] = ()
         ) -> torch.Tensor:
    w = None if weight is None else t([x[-1]], weight, d)
    tshape = [] if len(x) == 1 else [x[0]]
    return aten.nll_loss_backward(t(list(gshape), grad, d), t(list(x), F, d), z(tshape, target, d), w, reduction, -100,
                                  t([], total, d))


def _multilabel(d: str, x: torch.dtype = F, target: torch.dtype = L, is_target: torch.dtype = F,
                shape: tuple[int, ...] = (2, 3), is_shape: tuple[int, ...] | None = None,
                out: torch.dtype | None = None) -> torch.Tensor:
    args = (t([], x, d), t(list(shape), x, d), z(list(shape), target, d), 1, z(list(is_shape or shape), is_target, d))
    if out is None:
        return aten.multilabel_margin_loss_backward(*args)
    return aten.multilabel_margin_loss_backward.grad_input(*args, grad_input=t(list(shape), out, d))


def _scatter(d: str, size: list[int], stride: list[int], offset: int | None = None, src: list[int] | None = None,
             dtype: torch.dtype = F) -> torch.Tensor:
    return aten.as_strided_scatter(t([3, 3], dtype, d), t(src or size, dtype, d), size, stride, offset)


def _bce(d: str, out: list[int] | None, weight: list[int], wdtype: torch.dtype = H) -> torch.Tensor:
    args = (t([5], H, d), t([5], H, d) * 0.5, t([5], H, d), t(weight, wdtype, d), 1)
    if out is None:
        return aten.binary_cross_entropy_backward(*args)
    return aten.binary_cross_entropy_backward.grad_input(*args, grad_input=t(out, H, d))


def _leaky(d: str, slope: complex | float, dtype: torch.dtype = F, is_result: bool = False,
           shapes: tuple[list[int], list[int]] = ([2], [2])) -> torch.Tensor:
    return aten.leaky_relu_backward(t(shapes[0], dtype, d), t(shapes[1], dtype, d), slope, is_result)


INF, NAN = float("inf"), float("nan")


def _data(values: list[float], d: str, shape: tuple[int, ...] = (-1,)) -> torch.Tensor:
    return torch.tensor(values, device=d).reshape(shape)


def _square(d: str, batch: int | None = None) -> torch.Tensor:
    eye = torch.eye(3, dtype=D, device=d) + 1
    return eye if batch is None else eye.expand(batch, 3, 3)


def _grid(d: str, shape: tuple[int, ...] = (4, 2)) -> torch.Tensor:
    return torch.arange(float(torch.Size(shape).numel()), device=d).reshape(shape)


def _edges(d: str, dtype: torch.dtype = F, n: int = 3) -> torch.Tensor:
    return torch.arange(float(n), device=d).to(dtype)


REFUSED = {
    # seed 18: _embedding_bag_backward's checkScalarTypes / checkContiguous and its dense kernel's reads
    "embedding_bag_backward_short_offset2bag": lambda d: aten._embedding_bag_backward(
        t([3, 2], I16, d), z([0], L, d), z([1], L, d), t([4, 4], I16, d)[..., ::2], t([], I16, d),
        t([3, 2], I16, d), 5, False, 1, False, None, -1),
    "embedding_bag_backward_strided_offset2bag": lambda d: _bag(d, offset2bag=z([4, 4], L, d)[..., ::2]),
    "embedding_bag_backward_float_indices": lambda d: _bag(d, indices=F),
    "embedding_bag_backward_short_indices_offsets": lambda d: _bag(d, indices=I16, offsets=I16),
    "embedding_bag_backward_int_grad": lambda d: _bag(d, grad=I16),
    "embedding_bag_backward_int_grad_max": lambda d: _bag(d, grad=I16, mode=2),
    "embedding_bag_backward_short_max_indices": lambda d: _bag(d, max_indices=I16, mode=2),
    "embedding_bag_backward_sparse_3d_offset2bag": lambda d: aten._embedding_bag_backward(
        t([2, 3], torch.int32, d), z([0], L, d), t([3], L, d), t([4, 2, 4], torch.int32, d), t([2], L, d),
        t([2, 3], L, d), 4, False, 0, True, None, -1),
    "embedding_bag_backward_short_bag_size": lambda d: _bag(d, bag_size=I16),
    "embedding_bag_backward_int_indices_long_offset2bag": lambda d: _bag(d, indices=torch.int32,
                                                                         offsets=torch.int32),
    # seed 18: _linalg_solve_ex's meta, A and B of one dtype
    "linalg_solve_ex_long_b": lambda d: aten._linalg_solve_ex(t([5, 1, 1], F, d), t([5, 1, 1], L, d)),
    "linalg_solve_ex_double_b": lambda d: aten._linalg_solve_ex(t([2, 2], F, d) + torch.eye(2, device=d),
                                                                t([2], D, d)),
    "linalg_solve_ex_empty_not_square": lambda d: aten._linalg_solve_ex(t([0, 5], D, d), t([1, 5], D, d), left=False),
    "linalg_solve_ex_vector_a": lambda d: aten._linalg_solve_ex(t([3], D, d), t([3], D, d)),
    "linalg_solve_ex_0d_b": lambda d: aten._linalg_solve_ex(_square(d), t([], D, d)),
    "linalg_solve_ex_vector_size": lambda d: aten._linalg_solve_ex(_square(d), t([2], D, d)),
    "linalg_solve_ex_right_size": lambda d: aten._linalg_solve_ex(_square(d), t([4, 2], D, d), left=False),
    "linalg_solve_ex_batch": lambda d: aten._linalg_solve_ex(_square(d, 2), t([4, 3, 1], D, d)),
    # seed 18: as_strided's checks on as_strided_scatter's clone of self
    "as_strided_scatter_short_stride": lambda d: aten.as_strided_scatter(
        t([3, 1], F, d).expand(3, 3), t([3, 3], F, d).transpose(-1, -2), [3, 3], [2], None),
    "as_strided_scatter_long_stride_other_src": lambda d: _scatter(d, [3, 3], [2, 1, 1], src=[2, 3]),
    "as_strided_scatter_negative_stride": lambda d: _scatter(d, [3, 3], [-3, 5]),
    "as_strided_scatter_negative_offset": lambda d: _scatter(d, [3, 3], [3, 5], -1),
    "as_strided_scatter_out_of_bounds": lambda d: _scatter(d, [3, 3], [3, 2], dtype=torch.bfloat16),
    "as_strided_scatter_offset_out_of_bounds": lambda d: _scatter(d, [3, 3], [3, 1], 1, src=[2, 3]),
    "as_strided_scatter_0d_offset": lambda d: aten.as_strided_scatter(t([], F, d), t([], F, d), [], [], 1),
    "as_strided_scatter_storage_overflow": lambda d: _scatter(d, [3, 3], [2**62, 1]),
    "as_strided_scatter_negative_size": lambda d: _scatter(d, [-1, 3], [3, 1], src=[3, 3]),
    "as_strided_scatter_numel_overflow": lambda d: _scatter(d, [-1, 3], [0, 1], src=[3, 3]),
    "as_strided_scatter_out_out_of_bounds": lambda d: aten.as_strided_scatter.out(
        t([3, 3], F, d), t([3, 3], F, d), [3, 3], [3, 2], out=t([3, 3], F, d)),
    # seed 18: binary_cross_entropy_backward's grad_input.mul_(weight)
    "bce_backward_empty_out_weight": lambda d: _bce(d, [0], [5]),
    "bce_backward_one_element_out_weight": lambda d: _bce(d, [1], [5]),
    "bce_backward_0d_out_weight": lambda d: _bce(d, [], [5]),
    "bce_backward_wider_weight": lambda d: _bce(d, None, [1, 5]),
    "bce_backward_complex_weight": lambda d: _bce(d, None, [5], torch.complex64),
    # seed 18: histogram's weight of self's element count and dtype
    "histogram_0d_weight": lambda d: aten.histogram.bin_ct(t([4, 4], F, d), 100, weight=t([], F, d)),
    "histogram_empty_input_weight": lambda d: aten.histogram.bin_ct(t([0], F, d), 3, weight=t([], F, d)),
    "histogram_double_weight": lambda d: aten.histogram.bin_ct(t([4, 4], F, d), 10, weight=t([16], D, d)),
    "histogram_bins_tensor_weight": lambda d: aten.histogram.bins_tensor(t([4, 4], F, d), torch.arange(4.0, device=d),
                                                                        weight=t([3], F, d)),
    "histogram_out_weight": lambda d: aten.histogram.bin_ct_out(t([4, 4], F, d), 3, weight=t([3], F, d),
                                                                hist=torch.empty(0, device=d),
                                                                bin_edges=torch.empty(0, device=d)),
    # histogram's histogramdd_prepare_out: first for a bin count, after the bins tensor's and weight's checks
    "histogram_bins_tensor_one_edge": lambda d: aten.histogram.bins_tensor(t([4], F, d), t([1], F, d)),
    "histogram_bins_tensor_one_edge_out": lambda d: aten.histogram.bins_tensor_out(
        t([4], F, d), t([1], F, d), hist=t([0], F, d), bin_edges=t([0], F, d)),
    "histogram_bins_tensor_weight_first": lambda d: aten.histogram.bins_tensor(t([4, 4], F, d), t([1], F, d),
                                                                              weight=t([3], F, d)),
    "histogram_bins_tensor_hist_dtype": lambda d: aten.histogram.bins_tensor_out(
        t([4], F, d), t([1], F, d), hist=t([0], D, d), bin_edges=t([0], F, d)),
    "histogram_bin_count_zero_weight": lambda d: aten.histogram.bin_ct(t([4], F, d), 0, weight=t([3], F, d)),
    "histogram_bin_count_edges_dtype": lambda d: aten.histogram.bin_ct_out(t([4, 4], F, d), 3, weight=t([3], F, d),
                                                                          hist=t([0], F, d), bin_edges=t([0], D, d)),
    "histogram_complex_data": lambda d: aten.histogram.bin_ct(t([4], torch.complex64, d), 3),
    "histogram_complex_range": lambda d: aten.histogram.bin_ct(t([4], torch.complex64, d), 3, range=[0.0, 2.0]),
    "histogram_complex_bins_tensor": lambda d: aten.histogram.bins_tensor(t([4], torch.complex64, d),
                                                                         t([3], torch.complex64, d)),
    "histogram_complex_empty_weight": lambda d: aten.histogram.bin_ct_out(
        t([0, 2], torch.complex64, d), weight=t([5], torch.complex64, d), hist=t([0], torch.complex64, d),
        bin_edges=t([5], torch.complex64, d)),
    "histogram_int_range_weight": lambda d: aten.histogram.bin_ct(t([4], L, d), 3, range=[0.0, 1.0],
                                                                  weight=t([3], L, d)),
    # seed 18: with no range, the data's own range must be finite (select_outer_bin_edges)
    "histogramdd_inf_data": lambda d: aten._histogramdd_from_bin_cts(
        torch.full((1, 1, 1), float("inf"), device=d).transpose(-1, -2), [2], range=None, density=False),
    "histogramdd_nan_column": lambda d: aten._histogramdd_from_bin_cts(_data([1.0, NAN, 2.0, 3.0], d, (2, 2)), [2, 2]),
    "histogramdd_inf_before_bin_count": lambda d: aten._histogramdd_from_bin_cts(_data([1.0, INF], d, (2, 1)), [0]),
    "histogramdd_bin_edges_inf": lambda d: aten._histogramdd_bin_edges(_data([1.0, INF, 2.0, 3.0], d, (2, 2)), [2, 2]),
    # histogramdd's bin-count and bin-tensor forms: CPU's checks in its order (bin edges, inputs, bin counts)
    "histogramdd_bin_count_count": lambda d: aten._histogramdd_from_bin_cts(_grid(d), [2, 2, 2]),
    "histogramdd_bin_count_count_out": lambda d: aten._histogramdd_from_bin_cts.out(_grid(d), [2, 2, 2],
                                                                                  out=torch.empty(0, device=d)),
    "histogramdd_bin_edges_count": lambda d: aten._histogramdd_bin_edges(_grid(d), [2]),
    "histogramdd_range_before_bin_count": lambda d: aten._histogramdd_from_bin_cts(_grid(d), [0, 2],
                                                                                  range=[1.0, 0.0, 0.0, 1.0]),
    "histogramdd_steps": lambda d: aten._histogramdd_from_bin_cts(_grid(d), [-2, 2]),
    "histogramdd_no_edges": lambda d: aten._histogramdd_from_bin_cts(_grid(d), [-1, 2]),
    "histogramdd_weight_before_bin_count": lambda d: aten._histogramdd_from_bin_cts(_grid(d), [0, 2],
                                                                                   weight=t([3], F, d)),
    "histogramdd_bin_count_zero": lambda d: aten._histogramdd_from_bin_cts(_grid(d), [0, 2]),
    "histogramdd_0d_weight": lambda d: aten._histogramdd_from_bin_cts(_grid(d, (1, 1, 1)), [2], weight=t([], F, d)),
    "histogramdd_double_weight": lambda d: aten._histogramdd_from_bin_cts(_grid(d), [2, 2], weight=t([4], D, d)),
    "histogramdd_tensors_dtype": lambda d: aten._histogramdd_from_bin_tensors(_grid(d), [_edges(d), _edges(d, H)]),
    "histogramdd_tensors_one_edge": lambda d: aten._histogramdd_from_bin_tensors(_grid(d), [_edges(d), _edges(d, n=1)]),
    "histogramdd_tensors_one_edge_out": lambda d: aten._histogramdd_from_bin_tensors.out(
        _grid(d), [_edges(d), _edges(d, n=1)], out=torch.empty(0, device=d)),
    "histogramdd_tensors_no_edge": lambda d: aten._histogramdd_from_bin_tensors(_grid(d), [_edges(d), _edges(d, n=0)]),
    "histogramdd_tensors_2d": lambda d: aten._histogramdd_from_bin_tensors(_grid(d), [_edges(d), _edges(d)[None]]),
    "histogramdd_tensors_count": lambda d: aten._histogramdd_from_bin_tensors(_grid(d), [_edges(d)]),
    "histogramdd_tensors_weight": lambda d: aten._histogramdd_from_bin_tensors(_grid(d), [_edges(d), _edges(d)],
                                                                              weight=t([4], D, d)),
    "histogramdd_tensors_1d_input": lambda d: aten._histogramdd_from_bin_tensors(t([3], F, d), [_edges(d)]),
    "histogram_inf_data": lambda d: aten.histogram.bin_ct(_data([1.0, -INF, 2.0], d), 3),
    "histogram_nan_data_out": lambda d: aten.histogram.bin_ct_out(_data([1.0, NAN], d).double(), 3,
                                                                  hist=torch.empty(0, dtype=D, device=d),
                                                                  bin_edges=torch.empty(0, dtype=D, device=d)),
    # seed 15: leaky_relu_backward's negative_slope to the kernel's type, the kernel's dispatch
    "leaky_relu_backward_complex_slope_double": lambda d: aten.leaky_relu_backward(
        t([0, 1], torch.int32, d).transpose(-1, -2), t([0, 1], D, d).transpose(-1, -2), 0.69 + 1j, False),
    "leaky_relu_backward_complex_slope_half": lambda d: _leaky(d, 1 + 1j, H),
    "leaky_relu_backward_float_overflow": lambda d: _leaky(d, 1e39),
    "leaky_relu_backward_is_result_complex": lambda d: _leaky(d, 1 + 1j, torch.int32, True),
    "leaky_relu_backward_is_result_nan": lambda d: _leaky(d, NAN, is_result=True, shapes=([2, 2], [2])),
    "leaky_relu_backward_int": lambda d: _leaky(d, 0.5, torch.int32),
    "leaky_relu_backward_complex_dtype": lambda d: _leaky(d, 0.5, torch.complex64),
    "leaky_relu_backward_shapes_first": lambda d: _leaky(d, 1 + 1j, shapes=([2], [3])),
    "leaky_relu_backward_out_complex_slope": lambda d: aten.leaky_relu_backward.grad_input(
        t([2], F, d), t([2], F, d), 1 + 1j, False, grad_input=t([2], F, d)),
    "leaky_relu_backward_out_cast_first": lambda d: aten.leaky_relu_backward.grad_input(
        t([2], F, d), t([2], F, d), 1 + 1j, False, grad_input=t([2], torch.int32, d)),
    # seed 18: logspace's start.to<scalar_t>() and end's
    "logspace_int16_start": lambda d: aten.logspace(1099511627776.0, 3, 4, 3.0, dtype=I16, device=d),
    "logspace_int16_end": lambda d: aten.logspace(3, 40000, 2, 3.0, dtype=I16, device=d),
    "logspace_uint8": lambda d: aten.logspace(300, 3, 4, 3.0, dtype=torch.uint8, device=d),
    "logspace_int64_nan": lambda d: aten.logspace(float("nan"), 3, 4, 3.0, dtype=L, device=d),
    "logspace_float_overflow": lambda d: aten.logspace(1e39, 3, 4, 3.0, dtype=F, device=d),
    "logspace_half_overflow": lambda d: aten.logspace(1e5, 3, 4, 3.0, dtype=H, device=d),
    "logspace_complex64_overflow": lambda d: aten.logspace(1e39, 3, 4, 3.0, dtype=torch.complex64, device=d),
    "logspace_one_step_nan_int8_out": lambda d: aten.logspace.out(0.429, False, 1, NAN, out=t([1], torch.int8, d)),
    "logspace_one_step_nan_int64": lambda d: aten.logspace(NAN, 0, 1, 2.0, dtype=L, device=d),
    "logspace_out": lambda d: aten.logspace.out(2.0**40, 3, 4, 3.0, out=torch.empty(4, dtype=I16, device=d)),
    # seed 15: multilabel_margin_loss_backward's shape check, sizes, dispatch and reads
    "multilabel_backward_4d": lambda d: aten.multilabel_margin_loss_backward.grad_input(
        t([1, 1, 1, 1], torch.bool, d), t([2, 1, 5, 1], torch.bool, d), t([2, 1, 5, 1], torch.bool, d), 4,
        t([2, 1, 5, 1], torch.complex64, d), grad_input=t([2, 1, 5, 1], torch.bool, d)),
    "multilabel_backward_no_classes": lambda d: _multilabel(d, shape=(2, 0)),
    "multilabel_backward_is_target_size": lambda d: _multilabel(d, is_shape=(2, 2)),
    "multilabel_backward_half": lambda d: _multilabel(d, x=H, is_target=H),
    "multilabel_backward_int_target": lambda d: _multilabel(d, target=torch.int32),
    "multilabel_backward_double_is_target": lambda d: _multilabel(d, is_target=D),
    "multilabel_backward_double_out": lambda d: _multilabel(d, out=D),
    "multilabel_backward_is_target_values": lambda d: aten.multilabel_margin_loss_backward(
        t([], F, d), t([3], F, d), torch.tensor([0, 1, -1], device=d), 1, torch.tensor([1.0, NAN, 0.0], device=d)),
    "multilabel_backward_target_values_first": lambda d: aten.multilabel_margin_loss_backward.grad_input(
        t([], F, d), t([3], F, d), torch.tensor([0, 3, -1], device=d), 1, torch.tensor([1.0, 5.0, 0.0], device=d),
        grad_input=t([0], F, d)),
    # seed 18: nll_loss_backward's meta, then the kernel's reads in self's dtype
    "nll_backward_half_grad_out": lambda d: aten.nll_loss_backward.grad_input(
        t([], H, d), t([3], F, d), z([], L, d), None, 5, -1, t([], F, d), grad_input=t([], F, d)),
    "nll_backward_total_weight_first": lambda d: _nll(d, grad=H, total=D),
    "nll_backward_weight_first": lambda d: _nll(d, grad=H, weight=D),
    "nll_backward_int_target": lambda d: _nll(d, grad=H, target=torch.int32),
    "nll_backward_none_batch_grad": lambda d: _nll(d, grad=H, total=D, reduction=0, x=(2, 3), gshape=(2,)),
    "nll_backward_none_batch_grad_shape": lambda d: _nll(d, reduction=0, x=(2, 3), gshape=(2, 1)),
    "nll_backward_none_batch_0d_grad": lambda d: _nll(d, reduction=0, x=(2, 3)),
    "nll_backward_int_input": lambda d: aten.nll_loss_backward(t([], torch.int8, d), t([3], torch.int8, d),
                                                               z([], torch.int32, d), None, 1, -100,
                                                               t([], torch.int8, d)),
    "nll_backward_total_weight_size": lambda d: aten.nll_loss_backward(
        t([], F, d), t([2, 3], F, d), z([2], L, d), None, 1, -100, t([2], F, d)),
}

VALID = {
    "embedding_bag_backward": lambda d: [_bag(d), _bag(d, indices=I16), _bag(d, indices=torch.int32,
                                                                              offsets=torch.int32,
                                                                              offset2bag=z([4], torch.int32, d),
                                                                              bag_size=torch.int32),
                                         _bag(d, mode=2, n=3, offset2bag=z([3], L, d))],
    "as_strided_scatter": lambda d: [_scatter(d, [2, 3], [3, 1], 3), _scatter(d, [0, 3], [3, 1], 100),
                                     _scatter(d, [], [], 8),
                                     aten.as_strided_scatter(t([3, 1], F, d).expand(3, 3), t([3, 3], F, d) * 2,
                                                             [3, 3], [3, 1])],
    "bce_backward": lambda d: [_bce(d, [5], [5]), _bce(d, None, [1]), _bce(d, None, [], F)],
    "histogram": lambda d: list(aten.histogram.bin_ct(t([4, 4], F, d), 4, range=[0.0, 4.0], weight=t([2, 8], F, d))),
    "histogram_data": lambda d: [
        aten._histogramdd_from_bin_cts(_data([1.0, INF, 2.0, 3.0], d, (2, 2)), [2, 2], range=[0.0, 4.0, 0.0, 4.0]),
        aten._histogramdd_from_bin_cts(_data([1.0, 2.0, 3.0, 4.0], d, (2, 2)), [2, 2]),
        aten._histogramdd_from_bin_cts(torch.zeros(0, 2, device=d), [2, 2]),
        *aten.histogram.bin_ct(_data([1.0, INF, 2.0], d), 3, range=[0.0, 3.0]),
        *aten.histogram.bin_ct(_data([1.0, 3.0, 2.0], d), 2),
    ],
    "histogramdd": lambda d: [
        *aten._histogramdd_bin_edges(_grid(d), [0, 2]),
        *aten._histogramdd_bin_edges(_grid(d), [-1, 2]),
        aten._histogramdd_from_bin_cts(_grid(d), [2, 2], weight=torch.arange(4.0, device=d)),
        aten._histogramdd_from_bin_tensors(_grid(d), [_edges(d), _edges(d)], weight=torch.arange(4.0, device=d)),
    ],
    "leaky_relu_backward": lambda d: [_leaky(d, 1 + 0j), _leaky(d, 1e6, H), _leaky(d, 0.5, D, True)],
    "logspace": lambda d: [aten.logspace(32767, 3, 4, 3.0, dtype=I16, device=d),
                           aten.logspace(-1, 3, 4, 3.0, dtype=torch.uint8, device=d),
                           aten.logspace(2.0**40, 3, 0, 3.0, dtype=I16, device=d),
                           aten.logspace(float("inf"), 3, 4, 3.0, dtype=F, device=d),
                           aten.logspace(0.5, 0, 1, NAN, dtype=F, device=d)],
    "multilabel_backward_values": lambda d: [aten.multilabel_margin_loss_backward(
        t([], F, d), t([2, 3], F, d) * torch.arange(6.0, device=d).reshape(2, 3),
        torch.tensor([[0, 2, -1], [1, -1, 0]], device=d), 1,
        torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], device=d))],
    "multilabel_backward": lambda d: [_multilabel(d, shape=(0, 3)), _multilabel(d, x=H, shape=(0, 3))],
    "nll_backward": lambda d: [_nll(d), _nll(d, weight=F, x=(2, 3)), _nll(d, reduction=0, x=(2, 3), gshape=(2,)),
                               _nll(d, gshape=(1,))],
}

VALID_SOLVES = {  # float64 solves: the last bit depends on the LAPACK path on either side
    "linalg_solve_ex_shapes": lambda d: [
        aten._linalg_solve_ex(_square(d, 2), t([2, 3], D, d))[0],
        aten._linalg_solve_ex(_square(d), t([2, 3], D, d), left=False)[0],
        aten._linalg_solve_ex(t([0, 0], D, d), t([0, 2], D, d))[0],
    ],
    "linalg_solve_ex": lambda d: list(aten._linalg_solve_ex(t([2, 2], D, d) + torch.eye(2, dtype=D, device=d),
                                                            t([2], D, d))[:1]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", REFUSED)
def test_refused_as_cpu(case: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[case], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", VALID)
def test_valid_neighbours_compute(case: str, mode: str) -> None:
    assert_exactly_cpu(VALID[case], mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", VALID_SOLVES)
def test_valid_solves_compute(case: str, mode: str) -> None:
    assert_close_to_cpu(VALID_SOLVES[case], mode)


COMPILED = ["embedding_bag_backward_short_offset2bag", "linalg_solve_ex_long_b", "as_strided_scatter_short_stride",
            "leaky_relu_backward_complex_slope_half", "multilabel_backward_is_target_size",
            "nll_backward_total_weight_first", "histogram_0d_weight"]


@pytest.mark.parametrize("case", COMPILED)
def test_refused_as_cpu_compiled(case: str) -> None:
    assert_refused_as_cpu_compiled(REFUSED[case])
