"""Silent mismatches the schema fuzzer found with seeds 16 and 18 (`--calls 3`), each now CPU's result or CPU's
refusal in every eager mode (and under torch.compile where noted).

- histogram.bin_ct / histogramdd: the bin edges are ATen's linspace between the outer edges (each a fused
  multiply-add from the nearer end, rounded once) and each value's bin is found among those edges: the edges of
  [-1e30, 2.07] in one bin were [-1e30, 0.0] (the ramp lo + (hi - lo) cancelled), and edges were often an ulp off.
- multilabel_margin_loss_backward reads the is_target it is given; binary_cross_entropy_backward with a float64
  weight keeps self's dtype; xlogy / special_xlogy / special_xlog1py round a Python number through the result dtype
  (1e6 is inf in float16).
- upsample: a dim of unchanged size is copied whatever the scale (linear modes, antialiased forward, bicubic
  backward); float16 / bfloat16 linear1d and trilinear3d round their lambdas to the input's type.
- _embedding_bag: _embedding_bag_cpu_impl's checks (a 3-d weight was computed); topk of a 0-d with k < 0, norm
  into a complex dtype=, std / var of a real input into a complex out=, _weight_norm_interface_backward's types.
- all / any into a uint8 or bool out= whatever the input (tpu refused them).
"""

from __future__ import annotations

import pytest
import torch

from tests.refusal_cases import (
    MODES,
    assert_close_to_cpu,
    assert_exactly_cpu,
    assert_refused_as_cpu,
    assert_refused_as_cpu_compiled,
)

aten = torch.ops.aten


def _hist_seed18(d: str) -> list[torch.Tensor]:
    x = torch.tensor([[[-1e30, 2.0654540062]]], device=d)
    return list(aten.histogram.bin_ct(x, 1))


def _hist_ulps(d: str) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    out: list[torch.Tensor] = []
    for dt in (torch.float32, torch.float64):
        for bins, scale in ((16, 1e-3), (17, 10.0), (37, 1e4), (5, 1.0)):
            x = (torch.randn(12, generator=g, dtype=torch.float64) * scale).to(dt)
            out += list(torch.histogram(x.to(d), bins))
            out += list(torch.histogram(x.to(d), bins, range=(float(x.min()) - 0.37, float(x.max()) + 1.3)))
    return out


def _hist_weighted(d: str) -> list[torch.Tensor]:
    """Weighted densities: the edges exact, the sums within rounding (tpu adds the weights in another order)."""
    g = torch.Generator().manual_seed(2)
    out: list[torch.Tensor] = []
    for dt in (torch.float32, torch.float64):
        x = (torch.randn(12, generator=g, dtype=torch.float64) * 1e4).to(dt)
        hist, edges = torch.histogram(x.to(d), 37, range=(float(x.min()) - 0.37, float(x.max()) + 1.3),
                                      weight=x.abs().to(d), density=True)
        out += [hist, edges, (edges.cpu() == torch.histogram(x, 37, range=(float(x.min()) - 0.37,
                                                                           float(x.max()) + 1.3))[1]).all()]
    return out


def _histogramdd_ulps(d: str) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(9, 2, generator=g, dtype=torch.float64) * 100
    out = list(torch.histogramdd(x.to(d), [23, 3])[1])
    return out + list(torch.histogramdd(x.float().to(d), [41, 2])[1])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("calls", [_hist_seed18, _hist_ulps, _histogramdd_ulps])
def test_histogram_edges_and_counts(calls, mode: str) -> None:
    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("mode", MODES)
def test_histogram_weighted_density(mode: str) -> None:
    assert_close_to_cpu(_hist_weighted, mode)


def _mlml_backward(d: str) -> list[torch.Tensor]:
    """multilabel_margin_loss_backward reads the is_target it is given (the kernel's !is_target[d]), not one it
    makes from the target: an is_target of other zeros moved the gradient to other classes."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 4, generator=g)
    target = torch.tensor([[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 0, 0]])
    is_target = torch.tensor([[0.0, 1, 1, 0], [1, 0, 0, 1], [0, 1, 0, 1]])
    out = []
    for reduction, grad in ((0, torch.randn(3, generator=g)), (1, torch.tensor(0.7)), (2, torch.tensor(-1.3))):
        out.append(aten.multilabel_margin_loss_backward(grad.to(d), x.to(d), target.to(d), reduction,
                                                        is_target.to(d)))
    return out


def _bce_backward_weight(d: str) -> list[torch.Tensor]:
    """binary_cross_entropy_backward with a float64 weight: grad_input in self's dtype (float32), as CPU's
    grad_input.mul_(weight); was float64."""
    g = torch.Generator().manual_seed(4)
    grad, x, t = torch.randn(3, 2, generator=g), torch.rand(3, 2, generator=g), torch.rand(3, 2, generator=g)
    w = torch.rand(3, 2, generator=g, dtype=torch.float64)
    out = [aten.binary_cross_entropy_backward(grad.to(d), x.to(d), t.to(d), w.to(d), 0)]
    for reduction in (1, 2):
        out.append(aten.binary_cross_entropy_backward(grad.sum().to(d), x.to(d), t.to(d), w.to(d), reduction))
    into = torch.empty(3, 2, device=d)
    aten.binary_cross_entropy_backward.grad_input(grad.sum().to(d), x.to(d), t.to(d), w.to(d), 1, grad_input=into)
    return [*out, into]


def _xlogy_numbers(d: str) -> list[torch.Tensor]:
    """xlogy / special_xlogy / special_xlog1py with a Python number: the number cast to the result dtype first, as
    CPU's TensorIterator (1e6 is inf in float16, 1e39 in float32). (Finite float16 results may differ in the last
    bit: CPU rounds log / log1p to float16 before the product; within the fuzzer's tolerance.)"""
    x = torch.tensor([0.0, float("nan"), -2.5, 3.0, 0.75, -0.1])
    out = []
    for dtype, number in ((torch.float16, 1e6), (torch.bfloat16, 1e39), (torch.float32, 1e39),
                          (torch.int32, 1e39), (torch.float16, 70000)):
        t = (x * 3).to(dtype).to(d)
        out += [aten.xlogy.Scalar_Other(t, number), aten.xlogy.Scalar_Self(number, t),
                aten.special_xlog1py.other_scalar(t, number), aten.special_xlog1py.self_scalar(number, t),
                aten.special_xlogy.other_scalar(t, number)]
        if dtype.is_floating_point:
            out.append(t.clone().xlogy_(number))
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("calls", [_mlml_backward, _bce_backward_weight, _xlogy_numbers])
def test_losses_and_xlogy(calls, mode: str) -> None:
    assert_exactly_cpu(calls, mode)


@pytest.mark.parametrize("calls", [_bce_backward_weight, _xlogy_numbers])
def test_losses_and_xlogy_compiled(calls) -> None:
    torch._dynamo.reset()
    got = torch.compile(lambda: calls("tpu"), backend="tpu")()
    for g, c in zip(got, calls("cpu"), strict=True):
        torch.testing.assert_close(g.cpu(), c, rtol=0, atol=0, equal_nan=True)


def _upsample_same_size(d: str) -> list[torch.Tensor]:
    """A dim whose size does not change is copied whatever the scale (linear modes, the antialiased forward,
    bicubic's backward), as ATen: upsample_linear1d(x, [7], False, 1.7) of a length-7 x interpolated it."""
    g = torch.Generator().manual_seed(5)
    x1, x2 = torch.randn(2, 3, 7, generator=g), torch.randn(1, 2, 7, 7, generator=g)
    x3 = torch.randn(1, 2, 3, 7, 5, generator=g)
    return [aten.upsample_linear1d(x1.to(d), [7], False, 1.7),
            aten.upsample_linear1d_backward(x1.to(d), [7], [2, 3, 7], False, 1.7),
            aten.upsample_bilinear2d(x2.to(d), [7, 7], False, 1.7, 0.6),
            aten.upsample_bilinear2d_backward(x2.to(d), [7, 7], [1, 2, 7, 7], False, 1.7, 0.6),
            aten.upsample_trilinear3d(x3.to(d), [3, 7, 5], False, 2.0, 1.7, 0.6),
            aten._upsample_bilinear2d_aa(x2.to(d), [7, 7], False, 1.7, 0.6),
            aten.upsample_bicubic2d_backward(x2.to(d), [7, 7], [1, 2, 7, 7], False, 1.7, 0.6)]


def _upsample_linear_half(d: str) -> list[torch.Tensor]:
    """float16 / bfloat16 linear1d and trilinear3d: the lambdas rounded to the input's type (lambda0 = 1 - lambda1,
    rounded), the interpolation in float32: values were an ulp off."""
    g = torch.Generator().manual_seed(6)
    out = []
    for dtype in (torch.float16, torch.bfloat16):
        x1, x3 = torch.randn(3, 4, 7, generator=g).to(dtype), torch.randn(1, 2, 3, 7, 6, generator=g).to(dtype)
        for size, align, scale in ((11, False, None), (11, True, None), (13, False, 1.7), (4, False, None)):
            out.append(aten.upsample_linear1d(x1.to(d), [size], align, scale))
            out.append(aten.upsample_trilinear3d(x3.to(d), [4, size, 5], align, None, scale, None))
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("calls", [_upsample_same_size, _upsample_linear_half])
def test_upsample_linear(calls, mode: str) -> None:
    assert_exactly_cpu(calls, mode)


def test_upsample_linear_compiled() -> None:
    torch._dynamo.reset()
    got = torch.compile(lambda: _upsample_same_size("tpu") + _upsample_linear_half("tpu"), backend="tpu")()
    for g, c in zip(got, _upsample_same_size("cpu") + _upsample_linear_half("cpu"), strict=True):
        torch.testing.assert_close(g.cpu(), c, rtol=0, atol=0)


_L = torch.int64
_W = torch.ones(3, 2)
_EMBEDDING_BAG_REFUSED = {  # (weight, indices, offsets, *rest) CPU refuses; tpu computed each
    "weight_3d_seed16": (torch.ones(3, 1, 1, dtype=torch.bool), torch.zeros(0, dtype=torch.int32),
                         torch.zeros(0, dtype=torch.int32), False, -1, True, None, True, -1),
    "weight_1d": (torch.ones(3), torch.zeros(2, dtype=_L), torch.zeros(1, dtype=_L)),
    "offsets_2d_float_indices": (_W, torch.zeros(2), torch.zeros(1, 1, dtype=_L)),
    "float_indices": (_W, torch.zeros(2), torch.zeros(1, dtype=_L)),
    "float_offsets": (_W, torch.zeros(2, dtype=_L), torch.zeros(1)),
    "int16_both": (_W, torch.zeros(2, dtype=torch.int16), torch.zeros(1, dtype=torch.int16)),
    "bool_weight": (_W.bool(), torch.zeros(2, dtype=_L), torch.zeros(1, dtype=_L)),
    "mode_3": (_W, torch.zeros(2, dtype=_L), torch.zeros(1, dtype=_L), False, 3),
    "psw_mean": (_W, torch.zeros(2, dtype=_L), torch.zeros(1, dtype=_L), False, 1, False, torch.ones(2)),
    "psw_float64": (_W, torch.zeros(2, dtype=_L), torch.zeros(1, dtype=_L), False, 0, False,
                    torch.ones(2, dtype=torch.float64)),
    "psw_2d": (_W, torch.zeros(2, dtype=_L), torch.zeros(1, dtype=_L), False, 0, False, torch.ones(2, 1)),
    "psw_numel": (_W, torch.zeros(2, dtype=_L), torch.zeros(1, dtype=_L), False, 0, False, torch.ones(3)),
    "last_offset_none": (_W, torch.zeros(2, dtype=_L), torch.zeros(0, dtype=_L), False, 0, False, None, True),
    "offsets_0_not_0": (_W, torch.zeros(2, dtype=_L), torch.ones(1, dtype=_L)),
    "offsets_last_past_end": (_W, torch.zeros(2, dtype=_L), torch.tensor([0, 3])),
}


def _embedding_bag_case(args: tuple) -> object:
    return lambda d: aten._embedding_bag(*[a.to(d) if isinstance(a, torch.Tensor) else a for a in args])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(_EMBEDDING_BAG_REFUSED))
def test_embedding_bag_refused(name: str, mode: str) -> None:
    """_embedding_bag_cpu_impl's checks in its order (ranks, promoted index types, weight type, offsets' data,
    per_sample_weights, include_last_offset, mode)."""
    assert_refused_as_cpu(_embedding_bag_case(_EMBEDDING_BAG_REFUSED[name]), mode)


@pytest.mark.parametrize("name", ["weight_3d_seed16", "psw_float64", "offsets_0_not_0"])
def test_embedding_bag_refused_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(_embedding_bag_case(_EMBEDDING_BAG_REFUSED[name]))


def _t(shape: list[int], dtype: torch.dtype, d: str) -> torch.Tensor:
    return torch.ones(*shape, dtype=dtype, device=d)


_H, _F, _D, _C64 = torch.float16, torch.float32, torch.float64, torch.complex64
_REFUSED = {  # seed 16's cpu_raises and their neighbours: CPU refuses, tpu computed
    "topk_0d_k_minus_1": lambda d: aten.topk.values(torch.tensor(3, device=d), -1, 0,
                                                    values=_t([1], _L, d), indices=_t([0], _L, d)),
    "norm_complex_dtype": lambda d: aten.norm.ScalarOpt_dtype(_t([2], _C64, d), 1.611, dtype=_C64),
    "norm_complex128_dtype": lambda d: aten.norm.ScalarOpt_dim_dtype(_t([2], _C64, d), 2, [0], False,
                                                                     dtype=torch.complex128),
    "std_bf16_complex_out": lambda d: aten.std.correction_out(_t([4, 4], torch.bfloat16, d), None,
                                                              out=_t([4, 4], _C64, d)),
    "var_float_complex_out_dims": lambda d: aten.var.correction_out(_t([4, 4], _F, d), [0], out=_t([0], _C64, d)),
    "weight_norm_backward_bool_g": lambda d: aten._weight_norm_interface_backward(
        _t([4], _H, d), _t([4], _H, d), _t([4], torch.bool, d), _t([4], _H, d), 0),
    "weight_norm_backward_half_norms": lambda d: aten._weight_norm_interface_backward(
        _t([4], _H, d), _t([4], _H, d), _t([4], _H, d), _t([4], _H, d), 0),
    "weight_norm_backward_double_g": lambda d: aten._weight_norm_interface_backward(
        _t([3, 4], _F, d), _t([3, 4], _F, d), _t([3, 1], _D, d), _t([3, 1], _F, d), 0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(_REFUSED))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(_REFUSED[name], mode)


@pytest.mark.parametrize("name", ["norm_complex_dtype", "std_bf16_complex_out", "weight_norm_backward_bool_g"])
def test_refused_as_cpu_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(_REFUSED[name])


def _still_computed(d: str) -> list[torch.Tensor]:
    """Neighbours CPU computes: a real input's std into a complex out= of one element, topk of a 0-d with k 1,
    weight norm's backward with float32 norms of a float16 v."""
    x = torch.arange(16.0).reshape(4, 4).to(d)
    return [aten.var.correction_out(x, None, out=torch.empty(0, dtype=_C64, device=d)),
            aten.topk(torch.tensor(3, device=d), 1, 0)[0],
            *aten._weight_norm_interface_backward(_t([4], _H, d), _t([4], _H, d), _t([4], _H, d), _t([4], _F, d), 0)]


@pytest.mark.parametrize("mode", MODES)
def test_neighbours_still_computed(mode: str) -> None:
    assert_exactly_cpu(_still_computed, mode)


def _all_any_byte_bool_out(d: str) -> list[torch.Tensor]:
    """all / any into a uint8 or bool out= whatever the input's dtype, as CPU's allany_meta (tpu refused a uint8
    out= of a non-uint8 input, and a bool out= of a uint8 input)."""
    b = torch.tensor([[1, 0], [3, 4]])
    out = []
    for op in (aten.all, aten.any):
        for x_dtype, out_dtype in ((torch.int64, torch.uint8), (torch.uint8, torch.bool), (torch.float32, torch.uint8),
                                   (torch.bool, torch.uint8)):
            x = b.to(x_dtype).to(d)
            out += [op.out(x, 1, out=torch.empty(0, dtype=out_dtype, device=d)),
                    op.dims_out(x, [1], out=torch.empty(0, dtype=out_dtype, device=d)),
                    op.all_out(x, out=torch.empty(0, dtype=out_dtype, device=d))]
    return out


@pytest.mark.parametrize("mode", MODES)
def test_all_any_out(mode: str) -> None:
    assert_exactly_cpu(_all_any_byte_bool_out, mode)
