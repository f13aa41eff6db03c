"""Issue 17, the fuzzer's findings left open after session 27 (seeds 69 and 72), each compared with CPU (class and
words, or the result exactly) in every eager mode and under torch.compile where compile reaches the backend:
_histogramdd_from_bin_cts' linspace (bool) and histogram_cpu dispatch after the bin checks (an integral or complex
input with a range was computed; its .out overload's dtype check came first), index_put_ with masks' columns and
Nones past self's dims (ATen's make_info: the value's shape, then the iterator's broadcast; a masked fill computes),
the batch norm forwards' dispatch on the input alone and the functional's layout-dependent reads before it
(size(1) of a contiguous input, mean() of a strided one; an out= overload dispatches first, then checks the
mixed type and, in training, a 0-d input's size(1)); seed 75: histogramdd's 0-d weight counts as [1]."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import MODES, assert_exactly_cpu, assert_refused_as_cpu, assert_refused_as_cpu_compiled

aten = torch.ops.aten
I16, I32, F16, F32, U8, C64 = torch.int16, torch.int32, torch.float16, torch.float32, torch.uint8, torch.complex64


def _hist(dtype: torch.dtype, bins: list[int], rng: list[float] | None, n: int = 3, out: torch.dtype | None = None):
    def call(d: str) -> object:
        x = torch.arange(n).to(dtype).reshape(n, 1).to(d)
        if out is None:
            return aten._histogramdd_from_bin_cts(x, bins, range=rng)
        return aten._histogramdd_from_bin_cts.out(x, bins, range=rng, out=torch.empty(4, 1, 2, dtype=out, device=d))
    return call


HIST_REFUSED = {
    "int_range": _hist(I32, [2], [0.0, 2.0]),
    "int8_range": _hist(torch.int8, [2], [0.5, 0.5]),
    "complex_range": _hist(C64, [2], [0.0, 2.0]),
    "int_empty_no_range": _hist(I32, [2], None, n=0),
    "bool_range": _hist(torch.bool, [2], [0.0, 2.0]),  # the edges' linspace
    "bool_one_bin_count_check": _hist(torch.bool, [0], [0.0, 2.0]),  # linspace of 1 step fills: the bin count
    "int_out_int16": _hist(I32, [2], [0.5, 0.5], out=torch.int16),  # fuzz seed 69: the dispatch, not the out dtype
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(HIST_REFUSED))
def test_histogramdd_bin_cts_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(HIST_REFUSED[name], mode)


@pytest.mark.parametrize("mode", MODES)
def test_histogramdd_bin_cts_float_computes_as_cpu(mode: str) -> None:  # the dispatch's types compute
    assert_exactly_cpu(lambda d: [_hist(t, [2], [0.0, 2.0])(d) for t in (F16, torch.bfloat16, torch.float64)], mode)


@pytest.mark.parametrize("mode", MODES)
def test_histogramdd_0d_weight_computes_as_cpu(mode: str) -> None:  # a 0-d weight counts as [1] (fuzz seed 75)
    def calls(d: str) -> list[torch.Tensor]:
        x, w = torch.tensor([[1.5]], device=d), torch.tensor(3.0, device=d)
        return [aten._histogramdd_from_bin_cts(x, [2], weight=w),
                aten._histogramdd_from_bin_cts.out(x, [2], range=[0.0, 2.0], weight=w, out=torch.empty(0, device=d)),
                aten._histogramdd_from_bin_cts(x, [2], weight=w, density=True)]
    assert_exactly_cpu(calls, mode)


def test_histogramdd_bin_cts_compiled() -> None:
    assert_refused_as_cpu_compiled(HIST_REFUSED["int_range"])


# a mask over every dim of self and a None after it: more entries than dims once the mask is its nonzero() columns
X3 = torch.arange(24).reshape(2, 3, 4)
MASK = torch.tensor([True, False, True, True] * 6).reshape(2, 3, 4)  # 18 elements
MASK12 = torch.tensor([[True, False, True, True], [False, False, True, False], [True, True, False, True]])  # 7


def _put(indices: list[torch.Tensor | None], value: torch.Tensor, accumulate: bool = False):
    def call(d: str) -> torch.Tensor:
        idx = [i if i is None else i.to(d) for i in indices]
        return aten.index_put_(X3.clone().to(d), idx, value.to(d), accumulate)
    return call


PUT_REFUSED = {
    "value_shape_seed72": _put([MASK, None], X3),  # shape mismatch: value ... indexing result of shape [18]
    "value_shape_accumulate": _put([MASK, None], X3, True),
    "value_k1": _put([MASK, None], torch.arange(18).reshape(18, 1)),
    "dtype": _put([MASK, None], torch.arange(18.0)),  # Index put requires the source and destination dtypes match
    "broadcast": _put([MASK, None], torch.arange(18)),  # output with shape [18] doesn't match ... [18, 18]
    "broadcast_accumulate_one": _put([MASK, None], torch.tensor(5), True),
    "before_none": _put([None, MASK12, None], torch.arange(14).reshape(2, 7)),
    "index_past_dims": _put([None, MASK12, torch.tensor([0])], torch.tensor(5), True),  # src.size(3)
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(PUT_REFUSED))
def test_index_put_past_dims_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(PUT_REFUSED[name], mode)


@pytest.mark.parametrize("mode", MODES)
def test_index_put_past_dims_computes_as_cpu(mode: str) -> None:
    assert_exactly_cpu(lambda d: [
        _put([MASK, None], torch.tensor(7))(d),  # masked_fill_: the mask unsqueezed, the None indexing nothing
        _put([MASK, None], torch.tensor([[7]]))(d),  # masked_fill_(mask, value.item()): any one-element shape
        # not contiguous (a None between): moved to the front over self's dims, the index past them dropped
        _put([MASK12[:2, :3], None, torch.tensor([1])], torch.tensor(9), True)(d),
    ], mode)


def test_index_put_past_dims_compiled() -> None:
    assert_refused_as_cpu_compiled(PUT_REFUSED["value_shape_seed72"])


def _bn(dtype: torch.dtype, shape: tuple[int, ...], step: bool, training: bool = True, out: bool = False,
        bias: torch.dtype | None = None):
    def call(d: str) -> object:
        n = 1
        for s in shape:
            n *= s
        base = torch.arange(n * (2 if step else 1), device=d).to(dtype)
        x = base.reshape(*shape[:-1], shape[-1] * 2)[..., ::2] if step else base.reshape(shape)
        b = None if bias is None else torch.tensor(1.0, dtype=bias, device=d)
        if out:
            empty = {k: torch.empty(0, dtype=U8, device=d) for k in ("out", "save_mean", "save_invstd")}
            return aten._native_batch_norm_legit.no_stats_out(x, None, b, training, 0.1, 1e-5, **empty)
        return aten._native_batch_norm_legit.no_stats(x, None, b, training, 0.1, 1e-5)
    return call


BN_REFUSED = {
    "out_stepped_1d_f16_bias_seed69": _bn(I16, (3,), True, out=True, bias=F16),  # the dispatch first
    "out_contiguous_1d": _bn(I16, (3,), False, out=True, bias=F16),
    "out_empty": _bn(I16, (2, 3, 0), False, out=True),  # the dispatch before update_stats' empty check
    "fn_contiguous_1d": _bn(I16, (3,), False),  # empty({size(1)})
    "fn_stepped_1d": _bn(I16, (3,), True),  # mean() of a strided integral input
    "fn_stepped_2d": _bn(I16, (2, 3), True),
    "fn_stepped_1d_mixed": _bn(I16, (3,), True, bias=F16),  # mean in float32, then save_var's size(1)
    "fn_stepped_2d_mixed": _bn(I16, (2, 3), True, bias=F16),  # the dispatch
    "fn_empty": _bn(I16, (2, 3, 0), False),
    "fn_eval_stepped": _bn(I16, (2, 3), True, training=False),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(BN_REFUSED))
def test_batch_norm_int_input_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(BN_REFUSED[name], mode)


def test_batch_norm_int_input_differs_by_layout_on_cpu() -> None:  # the rule the cases above pin is CPU's
    for name, cls in (("fn_contiguous_1d", IndexError), ("fn_stepped_1d", RuntimeError),
                      ("out_stepped_1d_f16_bias_seed69", NotImplementedError)):
        with pytest.raises(cls):
            BN_REFUSED[name]("cpu")


def test_native_batch_norm_pair_before_dispatch() -> None:
    def case(d: str) -> object:
        x = torch.arange(6, device=d).reshape(2, 3)
        return aten.native_batch_norm(x, None, None, torch.zeros(3, dtype=torch.int64, device=d), None, False, 0.1,
                                      1e-5)
    for mode in MODES:
        assert_refused_as_cpu(case, mode)


def _bn_out_0d_mixed(d: str) -> object:  # fuzz seed 66: the dispatch, then the mixed type, before the rank
    empty = {k: torch.empty(0, dtype=C64, device=d) for k in ("out", "save_mean", "save_invstd")}
    return aten._native_batch_norm_legit.no_stats_out(torch.tensor(1.0, dtype=F16, device=d),
                                                      torch.ones(1, 2, 3, dtype=C64, device=d), None, True, 2.0,
                                                      1e-5, **empty)


def _bn_out_0d(d: str) -> object:  # fuzz seeds 74, 76: save_mean's resize to size(1), not the functional's rank
    empty = {k: torch.empty(0, device=d) for k in ("out", "save_mean", "save_invstd")}
    return aten._native_batch_norm_legit.no_stats_out(torch.tensor(1.5, device=d), None, None, True, 0.1, 1e-5,
                                                      **empty)


@pytest.mark.parametrize("mode", MODES)
def test_batch_norm_out_mixed_before_rank(mode: str) -> None:
    assert_refused_as_cpu(_bn_out_0d_mixed, mode)
    assert_refused_as_cpu(_bn_out_0d, mode)


def test_batch_norm_out_mixed_before_rank_compiled() -> None:
    assert_refused_as_cpu_compiled(_bn_out_0d_mixed)
    assert_refused_as_cpu_compiled(_bn_out_0d)


@pytest.mark.parametrize("name", ["fn_contiguous_1d", "out_stepped_1d_f16_bias_seed69"])
def test_batch_norm_int_input_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(BN_REFUSED[name])
