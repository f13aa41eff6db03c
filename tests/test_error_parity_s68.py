"""Issue 17, the fuzzer's findings left open after seed 67, each compared with CPU exactly in every eager mode and
under torch.compile: sum's float16/bfloat16 result over two reduced dims that do not coalesce (ATen's
should_use_acc_buffer: summed from float32, no element rounded to the result first), mean's float16/bfloat16
result summed in float32 for a float64 input (ATen's mean_out), linspace/logspace out= with a complex bound into a
real out (c10's checked conversion to the real part, no dtype inference)."""

from __future__ import annotations

import pytest
import torch
from refusal_cases import (
    MODES,
    assert_exactly_cpu,
    assert_refused_as_cpu,
    assert_refused_as_cpu_compiled,
)

aten = torch.ops.aten
F16, F32, F64, BF16, I8, C64 = torch.float16, torch.float32, torch.float64, torch.bfloat16, torch.int8, torch.complex64
TIE = 1 + 2**-11  # exact in float32, a tie in float16 (rounds to 1.0 when each element is cast first)


def _alternating(shape: tuple[int, ...], big: float, dtype: torch.dtype, d: str) -> torch.Tensor:
    x = torch.full(shape, big, dtype=dtype)
    x.view(-1)[::2] = 3 - big
    return x.to(d)


# (input shape, value, input dtype, dims, result dtype): CPU sums from float32 where the reduced dims stay two
# iteration dims (dims (0, 2) of a 3-d input: a kept dim of size > 1 between them), else casts each element first
SUMS = {
    "tie_dims02_f32_half": ((3, 4, 5), TIE, F32, (0, 2), F16),  # 15.0078 (from float32), not 15.0
    "tie_dims02_f64_half": ((3, 4, 5), TIE, F64, (0, 2), F16),
    "tie_dims13_4d_half": ((2, 3, 4, 5), TIE, F32, (1, 3), F16),
    "tie_dims012_4d_bf16": ((2, 3, 4, 2), 1 + 2**-8, F32, (0, 1, 3), BF16),
    "tie_dims02_bf16_in_half": ((3, 4, 5), 1 + 2**-8, BF16, (0, 2), F16),
    "tie_dims12_one_group": ((3, 4, 5), TIE, F32, (1, 2), F16),  # coalesced: each element cast first, 20.0
    "tie_dims02_size1_between": ((3, 1, 5), TIE, F32, (0, 2), F16),  # the size-1 dim coalesces away
    "tie_all_dims": ((3, 4, 5), TIE, F32, (0, 1, 2), F16),
}


def _sum_case(shape: tuple[int, ...], value: float, dtype: torch.dtype, dims: tuple[int, ...],
              out: torch.dtype):
    return lambda d: [torch.full(shape, value, dtype=dtype, device=d).sum(dims, dtype=out),
                      torch.full(shape, value, dtype=dtype, device=d).sum(dims, keepdim=True, dtype=out),
                      _alternating(shape, 7e4, dtype if dtype != BF16 else F32, d).sum(dims, dtype=out),
                      torch.sum(torch.full(shape, value, dtype=dtype, device=d), dims,
                                out=torch.empty(0, dtype=out, device=d))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SUMS))
def test_sum_reduced_dtype_as_cpu(name: str, mode: str) -> None:
    assert_exactly_cpu(_sum_case(*SUMS[name]), mode)


def test_sum_reduced_dtype_differs_by_layout_on_cpu() -> None:  # the rule the cases above pin is CPU's
    x = torch.full((3, 4, 5), TIE)
    assert x.sum((0, 2), dtype=F16).tolist() == [15.0078125] * 4
    assert x.sum((1, 2), dtype=F16).tolist() == [20.0] * 3


# the iterator sees the input's strides (or dense ones in its order where it casts): a layout moves the split
LAYOUTS = {
    "transposed_coalesces": ((4, 3, 5), lambda t: t.transpose(0, 1), (0, 2), F32),  # strides (5, 15, 1): one dim
    "transposed_splits": ((3, 5, 4), lambda t: t.transpose(1, 2), (0, 1), F32),  # strides (20, 1, 4): two dims
    "transposed_splits_half_in": ((3, 5, 4), lambda t: t.transpose(1, 2), (0, 1), F16),
    "permuted_4d": ((2, 3, 4, 5), lambda t: t.permute(3, 1, 0, 2), (1, 2), F32),
    "stepped_cast_dense": ((3, 4, 10), lambda t: t[:, :, ::2], (0, 2), F32),
    "stepped_half_in": ((3, 4, 10), lambda t: t[:, :, ::2], (1, 2), F16),
    "expanded": ((3, 1, 5), lambda t: t.expand(3, 4, 5), (0, 2), F32),
    "expanded_reduced": ((1, 4, 5), lambda t: t.expand(3, 4, 5), (0, 2), F32),
}


def _layout_case(shape: tuple[int, ...], view: object, dims: tuple[int, ...], dtype: torch.dtype):
    tie = TIE if dtype != F16 else 1 + 2**-10
    return lambda d: [view(torch.full(shape, tie, dtype=dtype, device=d)).sum(dims, dtype=F16),
                      view(torch.full(shape, tie, dtype=dtype, device=d)).sum(dims, keepdim=True, dtype=BF16)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_sum_reduced_dtype_layout_as_cpu(name: str, mode: str) -> None:
    assert_exactly_cpu(_layout_case(*LAYOUTS[name]), mode)


@pytest.mark.parametrize("name", ["transposed_coalesces", "transposed_splits"])
def test_sum_reduced_dtype_layout_compiled(name: str) -> None:
    shape, view, dims, dtype = LAYOUTS[name]
    x = torch.full(shape, TIE, dtype=dtype)
    torch._dynamo.reset()
    got = torch.compile(lambda t: view(t).sum(dims, dtype=F16), backend="tpu")(x.to("tpu"))
    torch.testing.assert_close(got.cpu(), view(x).sum(dims, dtype=F16), rtol=0, atol=0)


@pytest.mark.parametrize("name", ["tie_dims02_f32_half", "tie_dims12_one_group", "tie_dims02_bf16_in_half"])
def test_sum_reduced_dtype_compiled(name: str) -> None:
    shape, value, dtype, dims, out = SUMS[name]
    x = torch.full(shape, value, dtype=dtype)
    torch._dynamo.reset()
    got = torch.compile(lambda t: t.sum(dims, dtype=out), backend="tpu")(x.to("tpu"))
    torch.testing.assert_close(got.cpu(), x.sum(dims, dtype=out), rtol=0, atol=0)


# a float64 mean 1 + 2^-11 + 2^-30 is above float16's tie (rounds up) in float64, the tie itself in float32
# (round to even: 1.0); CPU sums in float32 (mean_out's sum_out(dtype=float32)), then divides, then casts
MEANS = {
    "f64_to_half": (F64, F16, (2, 3), (1,)),
    "f64_to_half_all": (F64, F16, (4,), None),
    "f64_to_bf16": (F64, BF16, (2, 3), (0, 1)),
    "f32_to_half": (F32, F16, (2, 3), (1,)),
    "f32_to_f64": (F32, F64, (2, 3), (1,)),
    "f64_to_f32": (F64, F32, (2, 3), (1,)),
}


def _mean_case(dtype: torch.dtype, out: torch.dtype, shape: tuple[int, ...], dims: tuple[int, ...] | None):
    value = 1 + 2**-11 + 2**-30 if out != BF16 else 1 + 2**-8 + 2**-30

    def calls(d: str) -> list[torch.Tensor]:
        x = torch.full(shape, value, dtype=dtype, device=d)
        y = torch.linspace(-3, 5, x.numel(), dtype=dtype).reshape(shape).to(d) / 7
        return ([x.mean(dtype=out), y.mean(dtype=out)] if dims is None
                else [x.mean(dims, dtype=out), y.mean(dims, dtype=out), x.mean(dims, keepdim=True, dtype=out)])

    return calls


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(MEANS))
def test_mean_dtype_as_cpu(name: str, mode: str) -> None:
    assert_exactly_cpu(_mean_case(*MEANS[name]), mode)


def test_mean_dtype_compiled() -> None:
    x = torch.full((2, 3), 1 + 2**-11 + 2**-30, dtype=F64)
    assert x.mean(1, dtype=F16).tolist() == [1.0, 1.0]  # CPU's float32 sum: the tie, rounded to even
    torch._dynamo.reset()
    got = torch.compile(lambda t: t.mean(1, dtype=F16), backend="tpu")(x.to("tpu"))
    torch.testing.assert_close(got.cpu(), x.mean(1, dtype=F16), rtol=0, atol=0)


def _linspace_out(op: object, start: complex, end: object, steps: int, out: torch.dtype, tensor_start: bool):
    def calls(d: str) -> list[torch.Tensor]:
        first = torch.tensor(start, device=d) if tensor_start else start
        target = torch.empty(0, dtype=out, device=d)
        op(first, end, steps, out=target)
        return [target]

    return calls


LINSPACE_COMPUTES = {
    "tensor_scalar_int8": (aten.linspace.Tensor_Scalar_out, 2 + 0j, 10, 5, I8, True),
    "tensor_scalar_int8_steps1": (aten.linspace.Tensor_Scalar_out, -3 + 0j, 10, 1, I8, True),
    "tensor_scalar_int8_steps0_imag": (aten.linspace.Tensor_Scalar_out, 2 + 1j, 10, 0, I8, True),
    "scalar_float32": (aten.linspace.out, 1 + 0j, 3.5, 4, F32, False),
    "scalar_half": (aten.linspace.out, 1 + 0j, 3.5, 7, F16, False),
}
LINSPACE_REFUSED = {
    "tensor_scalar_int8_imag": (aten.linspace.Tensor_Scalar_out, 2 + 1j, 10, 5, I8, True),
    "tensor_scalar_int8_imag_steps1": (aten.linspace.Tensor_Scalar_out, 2 + 1j, 10, 1, I8, True),
    "scalar_int8_too_big": (aten.linspace.out, 300 + 0j, 10, 3, I8, False),
    "scalar_float32_imag": (aten.linspace.out, 1 + 0.5j, 3.5, 4, F32, False),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(LINSPACE_COMPUTES))
def test_linspace_out_complex_bound_as_cpu(name: str, mode: str) -> None:
    assert_exactly_cpu(_linspace_out(*LINSPACE_COMPUTES[name]), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(LINSPACE_REFUSED))
def test_linspace_out_complex_bound_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(_linspace_out(*LINSPACE_REFUSED[name]), mode)


def test_linspace_out_complex_bound_compiled() -> None:
    calls = _linspace_out(*LINSPACE_COMPUTES["tensor_scalar_int8"])
    torch._dynamo.reset()
    got = torch.compile(lambda: calls("tpu"), backend="tpu")()
    torch.testing.assert_close(got[0].cpu(), calls("cpu")[0], rtol=0, atol=0)
    assert_refused_as_cpu_compiled(_linspace_out(*LINSPACE_REFUSED["tensor_scalar_int8_imag"]))


# _native_batch_norm_legit(_no_training) and the other batch norm forwards: in eval mode the mixed-type check
# precedes the channel dim's read (a 1-d float64 input with float32 statistics is "mixed dtype", not IndexError);
# where the input or a vector is not contiguous CPU's strided path views each vector as_nd, an internal assert of
# t.dim() == 1 (a RuntimeError, before the channel dim's read in eval mode; weight and bias in training): tpu
# raises RuntimeError in its own words (fuzz seed 63: a stepped float64[2, 1, 1] running_var, a 1-d input)
def _bn(op: str, x: tuple, weight: tuple | None, mean: tuple, var: tuple, dtype: torch.dtype = F64,
        stat_dtype: torch.dtype = F64, out: bool = False):
    def make(spec: tuple | None, dt: torch.dtype, d: str) -> torch.Tensor | None:
        if spec is None:
            return None
        shape, step = spec
        t = torch.ones(shape, dtype=dt, device=d)
        return t[..., ::2] if step else t

    def call(d: str) -> object:
        args = (make(x, dtype, d), make(weight, stat_dtype, d), None, make(mean, stat_dtype, d),
                make(var, stat_dtype, d))
        if op == "legit":
            return aten._native_batch_norm_legit(*args, False, 0.1, 1e-5)
        if op == "train":
            return aten._native_batch_norm_legit(*args, True, 0.1, 1e-5)
        if out:
            outs = {f"out{i}": torch.empty(0, dtype=dtype, device=d) for i in range(3)}
            return aten._native_batch_norm_legit_no_training.out(*args, 0.1, 1e-5, **outs)
        return aten._native_batch_norm_legit_no_training(*args, 0.1, 1e-5)

    return call


BN_REFUSED = {
    "mixed_1d_input": ("no_training", ((3,), False), None, ((3,), False), ((3,), False), F64, F32),
    "mixed_1d_input_out": ("no_training", ((3,), False), None, ((3,), False), ((3,), False), F64, F32, True),
    "mixed_1d_input_legit": ("legit", ((3,), False), None, ((3,), False), ((3,), False), F64, F32),
    "stepped_2d_var_1d_input": ("no_training", ((1,), False), None, ((1,), False), ((2, 1, 2), True)),
    "stepped_2d_var_1d_input_out": ("no_training", ((1,), False), None, ((1,), False), ((2, 1, 2), True), F64, F64,
                                    True),
    "stepped_2d_mean_legit": ("legit", ((1,), False), None, ((4, 2), True), ((1,), False)),
    "stepped_2d_mean_2d_input": ("no_training", ((2, 3), False), None, ((3, 2), True), ((3,), False)),
    "stepped_input_2d_weight": ("no_training", ((2, 6), True), ((3, 1), False), ((3,), False), ((3,), False)),
    "stepped_input_2d_weight_train": ("train", ((2, 6), True), ((3, 1), False), ((3,), False), ((3,), False)),
    "contiguous_2d_mean_1d_input": ("no_training", ((1,), False), None, ((4, 1), False), ((1,), False)),
}


def _raise_class(case: object, mode: str) -> type:
    try:
        with torch.tpu.eager_mode(mode):
            case("tpu")
            torch.tpu.synchronize()
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e)
    return type(None)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(BN_REFUSED))
def test_batch_norm_check_order_as_cpu(name: str, mode: str) -> None:
    case = _bn(*BN_REFUSED[name])
    with pytest.raises(Exception) as cpu:
        case("cpu")
    assert _raise_class(case, mode) is type(cpu.value), cpu.value
    if "mixed" in name:  # CPU's own words where CPU makes the check
        with torch.tpu.eager_mode(mode), pytest.raises(RuntimeError, match="mixed dtype"):
            case("tpu")


@pytest.mark.parametrize("name", ["stepped_2d_mean_2d_input", "stepped_input_2d_weight", "mixed_1d_input"])
def test_batch_norm_check_order_compiled(name: str) -> None:  # CPU's class somewhere in Dynamo's chain
    assert_refused_as_cpu_compiled(_bn(*BN_REFUSED[name]), words=False)


@pytest.mark.parametrize("mode", MODES)
def test_batch_norm_stepped_computes_as_cpu(mode: str) -> None:  # 1-d vectors, a stepped input: computed
    def calls(d: str) -> list[torch.Tensor]:
        x = torch.linspace(-2, 3, 24, device=d).reshape(2, 12)[:, ::2]
        w = torch.full((6,), 1.5, device=d)
        return list(aten._native_batch_norm_legit_no_training(x, w, None, torch.zeros(6, device=d),
                                                              torch.ones(6, device=d), 0.1, 1e-5)[:1])

    with torch.tpu.eager_mode(mode):
        got = calls("tpu")[0].cpu()
    torch.testing.assert_close(got, calls("cpu")[0])


def _hardtanh(dtype: torch.dtype, low: object, high: object):
    return lambda d: aten.hardtanh(torch.arange(3, dtype=dtype, device=d), low, high)


def _hardsigmoid_backward(dtype: torch.dtype, shapes: tuple = ((2,), (2,)), out: bool = False):
    def call(d: str) -> object:
        g, x = (torch.ones(s, dtype=dtype, device=d) for s in shapes)
        if out:
            return aten.hardsigmoid_backward.grad_input(g, x, grad_input=torch.empty(0, dtype=dtype, device=d))
        return aten.hardsigmoid_backward(g, x)

    return call


# hardtanh of an integral self: min.toLong() and max.toLong() (checked) before the unsigned check (seed 68: uint8
# with -inf raised Python's OverflowError); hardsigmoid_backward: the broadcast, then the floating dispatch (seed
# 68: complex refused in its decomposition's words before the shape check; integers and bools were computed)
REFUSED = {
    "hardtanh_uint8_neg_inf": _hardtanh(torch.uint8, -float("inf"), -0.0),
    "hardtanh_int16_nan_max": _hardtanh(torch.int16, 0, float("nan")),
    "hardtanh_int64_huge_min": _hardtanh(torch.int64, -1e30, 3),
    "hardtanh_int8_complex": _hardtanh(I8, 1 + 1j, 3),
    "hardtanh_uint8_negative": _hardtanh(torch.uint8, -300.0, 5),
    "hardsigmoid_backward_int64": _hardsigmoid_backward(torch.int64),
    "hardsigmoid_backward_bool": _hardsigmoid_backward(torch.bool),
    "hardsigmoid_backward_complex": _hardsigmoid_backward(torch.complex64),
    "hardsigmoid_backward_complex_shapes": _hardsigmoid_backward(torch.complex64, ((1, 5), (1, 3, 2)), True),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(REFUSED[name], mode)


@pytest.mark.parametrize("name", ["hardtanh_uint8_neg_inf", "hardsigmoid_backward_int64"])
def test_refused_as_cpu_compiled(name: str) -> None:
    assert_refused_as_cpu_compiled(REFUSED[name])


@pytest.mark.parametrize("mode", MODES)
def test_hardtanh_integral_bounds_as_cpu(mode: str) -> None:  # toLong truncates a fractional bound
    assert_exactly_cpu(lambda d: [aten.hardtanh(torch.arange(-4, 5, dtype=dt, device=d), -1.5, 2.7)
                                  for dt in (I8, torch.int32, torch.int64)]
                       + [aten.hardtanh(torch.arange(0, 9, dtype=torch.uint8, device=d), 2.5, 7.5)], mode)


# arange into an integer type: the bounds and step truncated for the values (a step that truncates to 0 repeats
# start where the size comes from the doubles: every integer type but int64, fuzz seed 70), int64's size from the
# truncated values (a zero truncated step: the kernel's ValueError)
ARANGES = [(4.024, -0.341, -0.931, torch.int16), (4.024, -0.341, -0.931, torch.uint8), (0, 5, 0.5, torch.int32),
           (0, 5, 1.5, I8), (5.7, 0, -1.2, torch.int16)]


@pytest.mark.parametrize("mode", MODES)
def test_arange_truncated_step_as_cpu(mode: str) -> None:
    assert_exactly_cpu(lambda d: [aten.arange.start_out(s, e, st, out=torch.empty(0, dtype=dt, device=d))
                                  for s, e, st, dt in ARANGES]
                       + [torch.arange(s, e, st, dtype=dt, device=d) for s, e, st, dt in ARANGES], mode)


@pytest.mark.parametrize("mode", MODES)
def test_arange_int64_zero_truncated_step_as_cpu(mode: str) -> None:
    assert_refused_as_cpu(lambda d: torch.arange(4.024, -0.341, -0.931, dtype=torch.int64, device=d), mode)
    assert_refused_as_cpu(lambda d: aten.arange.start_out(4.024, -0.341, -0.931, out=torch.empty(
        0, dtype=torch.int64, device=d)), mode)
# (no compiled case: Dynamo's fake arange raises 'step must be nonzero' before any backend, aot_eager on CPU alike)


# floor_divide.out: TensorIterator::binary_op's broadcast and cast to the out before div_floor's dispatch (seed 70:
# a complex self into an int16 out was refused by the dispatch first)
def _floor_divide_out(dtype: torch.dtype, shape: tuple, other: torch.dtype, out: torch.dtype):
    return lambda d: aten.floor_divide.out(torch.ones(shape, dtype=dtype, device=d), torch.full(
        (1, 2, 2), 2, dtype=other, device=d), out=torch.empty(1, dtype=out, device=d))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", [(C64, (), torch.int16, torch.int16), (torch.bool, (2,), torch.bool, torch.bool),
                                  (C64, (3,), torch.int16, torch.int16)])
def test_floor_divide_out_order_as_cpu(case: tuple, mode: str) -> None:
    assert_refused_as_cpu(_floor_divide_out(*case), mode)


# max_unpool's kernel runs for a non-empty output only: its dtype dispatch (bool, complex) and the out's typed
# pointer (another dtype) before its index range check (fuzz seed 69: a bool self met the index check first)
def _unpool(dtype: torch.dtype, index: int, out: torch.dtype | None, size: tuple = (1, 2)):
    def call(d: str) -> torch.Tensor:
        x = torch.ones(2, 1, 3, 2, dtype=dtype, device=d)
        idx = torch.full((2, 1, 3, 2), index, dtype=torch.int64, device=d)
        if out is None:
            return aten.max_unpool2d(x, idx, list(size))
        return aten.max_unpool2d.out(x, idx, list(size), out=torch.empty(0, dtype=out, device=d))

    return call


UNPOOL_REFUSED = {
    "bool_bad_index_out": _unpool(torch.bool, -2, F32),
    "bool_bad_index": _unpool(torch.bool, -2, None),
    "complex_bad_index": _unpool(C64, -2, None),
    "complex_out": _unpool(C64, 0, C64),
    "half_into_float_out": _unpool(F16, 0, F32),
    "half_into_float_out_bad_index": _unpool(F16, -2, F32),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(UNPOOL_REFUSED))
def test_max_unpool_order_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(UNPOOL_REFUSED[name], mode)


@pytest.mark.parametrize("mode", MODES)
def test_max_unpool_empty_output_as_cpu(mode: str) -> None:  # no kernel: no dispatch, no index check
    assert_exactly_cpu(lambda d: [_unpool(dt, -2, None, (0, 2))(d) for dt in (F32, torch.bool, C64)], mode)


# a functional or out= foreach op: CPU's slow path calls the op per tensor, so the first refused tensor's dtype
# refusal comes before a later pair's broadcast error, after an earlier one's (fuzz seed 69)
def _foreach_clamp(op: object, shapes: tuple, dtypes: tuple, out: bool = False):
    def call(d: str) -> object:
        selfs = [torch.ones(shapes[0], dtype=dtypes[0], device=d), torch.ones(shapes[1], dtype=dtypes[1], device=d)]
        others = [torch.ones(shapes[2], dtype=dtypes[0], device=d), torch.ones(shapes[3], dtype=dtypes[1], device=d)]
        if out:
            return op(selfs, others, out=[torch.empty(0, dtype=C64, device=d) for _ in range(2)])
        return op(selfs, others)

    return call


FOREACH_REFUSED = {
    "clamp_max_list_out": _foreach_clamp(aten._foreach_clamp_max.List_out, ((3,), (3,), (3,), (4, 4)), (C64, C64),
                                         True),
    "clamp_max_list": _foreach_clamp(aten._foreach_clamp_max.List, ((3,), (3,), (3,), (4, 4)), (C64, C64)),
    "maximum_list": _foreach_clamp(aten._foreach_maximum.List, ((3,), (3,), (3,), (4, 4)), (C64, C64)),
}


# a 0-dim complex self with a float tensor promotes to complex (TensorIterator's categories), and an out= list of
# another length is checked after the per-tensor loop (fuzz seed 71)
FOREACH_REFUSED["maximum_list_out_0d_complex"] = lambda d: aten._foreach_maximum.List_out(
    [torch.ones((), dtype=C64, device=d)], [torch.ones(4, device=d)[::2]],
    out=[torch.empty(0, dtype=torch.bool, device=d) for _ in range(2)])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(FOREACH_REFUSED))
def test_foreach_functional_order_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(FOREACH_REFUSED[name], mode)


# embedding_dense_backward of a complex grad: the imaginary part was dropped (widened to float32; fuzz seed 71)
def _embedding_backward(pad: int, scale: bool, out: bool = False):
    def call(d: str) -> list[torch.Tensor]:
        g = (torch.arange(18.0).reshape(6, 3) + 1j * torch.arange(18.0).reshape(6, 3).flip(0)).to(C64).to(d)
        i = torch.tensor([0, 2, 2, 1, 4, 2], device=d)
        if out:
            return [aten.embedding_dense_backward.out(g, i, 5, pad, scale, out=torch.empty(0, dtype=C64, device=d))]
        return [aten.embedding_dense_backward(g, i, 5, pad, scale)]

    return call


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", [(-1, False), (2, False), (-1, True), (2, True), (-1, False, True)])
def test_embedding_dense_backward_complex_as_cpu(case: tuple, mode: str) -> None:
    assert_exactly_cpu(_embedding_backward(*case), mode)


def test_embedding_dense_backward_complex_compiled() -> None:
    g = torch.tensor([[0.5 + 0.25j, -1 + 2j]], dtype=C64)
    i = torch.tensor([1])
    torch._dynamo.reset()
    got = torch.compile(lambda a, b: aten.embedding_dense_backward(a, b, 3, -1, False), backend="tpu")(
        g.to("tpu"), i.to("tpu"))
    torch.testing.assert_close(got.cpu(), aten.embedding_dense_backward(g, i, 3, -1, False), rtol=0, atol=0)


# uniform_ of a non-floating expanded self: check_uniform_bounds' dispatch before the overlap check (seed 71)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.int32, torch.bool])
def test_uniform_dtype_before_overlap_as_cpu(dtype: torch.dtype, mode: str) -> None:
    assert_refused_as_cpu(lambda d: aten.uniform_(torch.ones(1, dtype=dtype, device=d).expand(3), to=-1.0), mode)


# max_pool3d_with_indices_backward: the template reads gradOutput.size(-3) before its shape check (seed 69)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("grad_shape", [(1,), (), (3, 2)])
def test_max_pool3d_backward_grad_rank_as_cpu(grad_shape: tuple, mode: str) -> None:
    assert_refused_as_cpu(lambda d: aten.max_pool3d_with_indices_backward.grad_input(
        torch.ones(grad_shape, device=d), torch.ones(5, 5, 1, 2, device=d), [2, 1, 1], [1, 3, 3], [3, 1, 1],
        [3, 1, 1], False, torch.zeros(5, 5, 1, 2, dtype=torch.int64, device=d),
        grad_input=torch.empty(5, 5, 1, 2, device=d)), mode)


# geometric_: p in (0, 1) before the dtype dispatch; hardtanh.out of a complex self: clamp's complex refusal before
# the out's cast (fuzz seed 72)
SEED72_REFUSED = {
    "geometric_bool_bad_p": lambda d: aten.geometric_(torch.ones(3, dtype=torch.bool, device=d), -1.0),
    "geometric_int_nan_p": lambda d: aten.geometric(torch.ones(3, dtype=torch.int64, device=d), float("nan")),
    "hardtanh_out_complex_into_float": lambda d: aten.hardtanh.out(
        torch.ones(3, dtype=C64, device=d), -1, 1, out=torch.empty(0, dtype=F32, device=d)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SEED72_REFUSED))
def test_seed72_order_as_cpu(name: str, mode: str) -> None:
    assert_refused_as_cpu(SEED72_REFUSED[name], mode)
